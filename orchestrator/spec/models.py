"""The graph file format as pydantic models (docs/format.md sections 2, 3 and 5).

The loader validates raw YAML against these models and turns pydantic's errors into problems
with file positions; `orchestrator schema` prints their JSON Schema for editors.
"""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from .contract import Contract, derive_contract

# The reserved names, importable from here as they always were.
from .reserved import END as END
from .reserved import RESUME as RESUME
from .reserved import SINGLE_EXIT as SINGLE_EXIT
from .reserved import START as START
from .reserved import SUSPEND as SUSPEND

if TYPE_CHECKING:
    from .yamlpos import SourceMap

TOOL_SETS = ("read", "edit", "shell")


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CommandActor(_Frozen):
    """An external agent process: the prompt on stdin, the reply on stdout."""

    command: list[str] = Field(min_length=1, description="argv of the process")
    timeout: float = Field(600.0, gt=0, description="seconds before the process is killed")


Actor = Literal["anthropic", "human"] | CommandActor


class Sandbox(_Frozen):
    """The sandbox of a role's processes: its shell tool's commands or its command actor."""

    network: bool | None = Field(
        None,
        description="allow network access (default: off for the shell tool, on for a command "
        "actor, whose agent calls its own model API)",
    )
    writable: list[Annotated[str, Field(pattern=r"^(/|~/)")]] = Field(
        default_factory=list,
        description="paths outside the workspace the process may write (absolute or ~/...), "
        "e.g. an agent's config folder; each must exist",
    )


class Role(_Frozen):
    description: str = Field(description="one line for people")
    goal: str = Field(description="who the agent is and what it is for")
    capabilities: list[str] = Field(default_factory=list)
    procedure: str | None = None
    output: str | None = Field(None, description="what to write, and when to use which $status")
    frontmatter: dict[str, Any] = Field(description="JSON Schema of the reply's frontmatter")
    extends: str | None = Field(None, description="a library role to start from")
    model: str | None = Field(None, description="alias (opus | sonnet | haiku) or a model id")
    max_tokens: int | None = Field(None, gt=0)
    temperature: float | None = Field(None, ge=0, le=1)
    tools: list[Literal["read", "edit", "shell"]] = Field(default_factory=list)
    actor: Actor = "anthropic"
    max_repairs: int = Field(2, ge=0)
    memory: Literal["session", "fresh"] = "session"
    sandbox: Sandbox | Literal["off"] = Field(
        default_factory=Sandbox,
        description="how the role's shell commands or agent process are confined; `off` runs "
        "them unconfined, as the orchestrator's user",
    )

    # Set by the loader: the role's key in the graph.
    _name: str = PrivateAttr("")

    @property
    def name(self) -> str:
        return self._name

    @cached_property
    def contract(self) -> Contract:
        return derive_contract(self.frontmatter)


class Edge(_Frozen):
    role: str = Field(description="the next role, or $END")
    prompt: str = Field(description="Mustache template of the next step's instruction")
    location: str | None = Field(None, description="directory inside the workspace for the step")


class Defaults(_Frozen):
    model: str | None = None
    max_tokens: int | None = Field(None, gt=0)
    temperature: float | None = Field(None, ge=0, le=1)


class Limits(_Frozen):
    max_steps: int = Field(50, gt=0)
    max_visits: int = Field(10, gt=0)
    max_cost_usd: float | None = Field(None, gt=0)


IMPLICIT_INPUTS: dict[str, Any] = {
    "type": "object",
    "properties": {"task": {"type": "string", "description": "The task, in free text"}},
    "required": ["task"],
}


class Graph(_Frozen):
    version: int | None = None
    name: str = Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$", description="kebab-case, the file stem")
    description: str
    inputs: dict[str, Any] | None = Field(None, description="JSON Schema of the thread's inputs")
    defaults: Defaults = Field(default_factory=Defaults)
    limits: Limits = Field(default_factory=Limits)
    roles: dict[str, Role]
    graph: dict[str, dict[str, Edge]]

    _source: SourceMap | None = PrivateAttr(None)
    _path: str | None = PrivateAttr(None)

    @property
    def path(self) -> str | None:
        """The file the graph was loaded from, if any."""
        return self._path

    @property
    def source(self) -> SourceMap | None:
        return self._source

    @property
    def input_schema(self) -> dict[str, Any]:
        """The declared inputs, or the implicit single `task` input (docs/format.md section 4)."""
        return self.inputs if self.inputs is not None else IMPLICIT_INPUTS

    @cached_property
    def hash(self) -> str:
        """sha256 of the resolved graph (library roles included), stable across key order."""
        data = self.model_dump(mode="json")
        for role in data["roles"].values():  # graphs written before `sandbox:` keep their hash
            if role.get("sandbox") == {"network": None, "writable": []}:
                del role["sandbox"]
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    def edge(self, source: str, status: str) -> Edge | None:
        return self.graph.get(source, {}).get(status)

    def position(self, *path: str | int, key: bool = False) -> tuple[str, int, int]:
        """(file, line, column) of a path: in the graph file, or in the library role file that
        a role's field comes from."""
        if self._source is None:
            return (self._path or "<graph>", 1, 1)
        return self._source.where(path, key=key)
