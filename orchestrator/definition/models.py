"""The graph file format as pydantic models (docs/format.md sections 2, 3 and 5).

The loader validates raw YAML against these models and turns pydantic's errors into problems
with file positions; `orchestrator schema` prints their JSON Schema for editors.
"""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)

# The forms of `actor:` and of a `tools:` entry, importable from here as the other models.
from .actor_specs import Actor as Actor
from .actor_specs import CommandActor as CommandActor
from .actor_specs import McpServer as McpServer
from .actor_specs import McpTool as McpTool
from .actor_specs import PlayedBy
from .actor_specs import PythonActor as PythonActor
from .actor_specs import PythonTool as PythonTool
from .actor_specs import ToolEntry as ToolEntry
from .contract import Contract, derive_contract

# The reserved names, importable from here as they always were.
from .reserved import END as END
from .reserved import RESUME as RESUME
from .reserved import SINGLE_EXIT as SINGLE_EXIT
from .reserved import START as START
from .reserved import SUSPEND as SUSPEND
from .secret_names import ENV_NAME, is_provider_key

if TYPE_CHECKING:
    from .yamlpos import SourceMap

TOOL_SETS = ("read", "edit", "shell")
MISSING_FIELD = "is missing required field"  # a role's goal or frontmatter, without `graph:`


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Sandbox(_Frozen):
    """The sandbox of a role's processes: its shell tool's commands or its command actor."""

    network: bool | None = Field(
        None,
        strict=True,  # "true", "yes", "off" or 1 are not booleans (lax pydantic took them)
        description="allow network access (default: off for the shell tool, on for a command "
        "actor, whose agent calls its own model API)",
    )
    writable: list[Annotated[str, Field(pattern=r"^(/|~/)")]] = Field(
        default_factory=list,
        description="paths outside the workspace the process may write (absolute or ~/...), "
        "e.g. an agent's config folder; each must exist",
    )
    readable: list[Annotated[str, Field(pattern=r"^(/|~/)")]] = Field(
        default_factory=list,
        description="folders inside the hidden home folders (/home, /root, ~) the process may "
        "read, e.g. a toolchain under ~/.pyenv or ~/.cargo; a missing one is skipped",
    )
    # Limits (orchestrator/tools/limits.py); None: the default there (512, 2048 MB, 1024 MB).
    pids: Annotated[int, Field(strict=True, gt=0)] | None = Field(
        None, description="most processes at once in the sandbox (default 512)"
    )
    memory_mb: Annotated[int, Field(strict=True, gt=0)] | None = Field(
        None, description="most memory of the sandbox's processes together, in MB (default 2048)"
    )
    disk_mb: Annotated[int, Field(strict=True, gt=0)] | None = Field(
        None,
        description="largest file the processes may write, and most each of the sandbox's own "
        "temporary folders (/tmp, /dev/shm) holds, in MB (default 1024)",
    )


class Requirement(_Frozen):
    """A precondition (docs/format.md section 13): exactly one of tool, file, env, command."""

    tool: str | None = Field(None, description="an executable on PATH")
    file: str | None = Field(None, description="a path or glob inside the workspace")
    env: str | None = Field(None, description="an environment variable, set and not empty")
    command: list[str] | None = Field(
        None, min_length=1, description="argv that must exit 0 within 10 s, in the workspace"
    )
    message: str | None = Field(None, description="what to tell the person when it fails")

    @model_validator(mode="after")
    def _exactly_one(self) -> Requirement:
        given = [k for k in ("tool", "file", "env", "command") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("a requirement names exactly one of tool, file, env, command")
        return self

    def describe(self) -> str:
        if self.tool is not None:
            return f"the command `{self.tool}` on PATH"
        if self.file is not None:
            return f"`{self.file}` in the workspace"
        if self.env is not None:
            return f"the environment variable {self.env}"
        return f"`{' '.join(self.command or [])}` to succeed"


class Role(_Frozen, PlayedBy):
    description: str = Field(description="one line for people")
    goal: str = Field("", description="who the agent is and what it is for")
    capabilities: list[str] = Field(default_factory=list)
    procedure: str | None = None
    output: str | None = Field(None, description="what to write, and when to use which $status")
    frontmatter: dict[str, Any] = Field(
        default_factory=dict,
        description="JSON Schema of the reply's frontmatter (of a subgraph role: derived from "
        "its graph's endings)",
    )
    graph: str | None = Field(
        None,
        description="a subgraph role: the graph (a name or a path) it runs as a child thread "
        "(docs/format.md section 14)",
    )
    extends: str | None = Field(
        None,
        description="a library role to start from, or claude:NAME / opencode:NAME for a Claude "
        "Code or OpenCode agent file",
    )
    model: str | None = Field(None, description="an alias, a model id, or PROVIDER:MODEL")
    fallback: list[str] = Field(
        default_factory=list, description="models tried in order when a provider keeps failing"
    )
    max_tokens: int | None = Field(None, gt=0, strict=True)
    temperature: float | None = Field(None, ge=0, le=1, strict=True)  # 0.5, not "0.5"
    tools: list[ToolEntry] = Field(
        default_factory=list,
        description="tool sets (read, edit, shell), {python: module:function} and "
        "{mcp: {command: [...]}} entries",
    )
    actor: Actor = "anthropic"
    max_repairs: int = Field(2, ge=0, strict=True)
    memory: Literal["session", "fresh"] = "session"
    memory_budget: int | None = Field(
        None,
        gt=0,
        strict=True,
        description="tokens of earlier visits a `memory: session` role is sent at most; the "
        "oldest are left out first (default: defaults.memory_budget, else 100000)",
    )
    sandbox: Sandbox | Literal["off"] = Field(
        default_factory=Sandbox,
        description="how the role's shell commands or agent process are confined; `off` runs "
        "them unconfined, as the orchestrator's user",
    )
    requires: list[Requirement] = Field(
        default_factory=list,
        description="checked when a step of the role is about to start (section 13)",
    )
    env: list[str] = Field(
        default_factory=list,
        description="environment variables the role's processes get besides PATH, HOME, LANG, "
        "LC_*, TERM, TZ, USER and TMPDIR (never a provider's key)",
    )

    # Set by the loader: the role's key in the graph, and the folder of the graph's file
    # (where `python:` actors and tools are imported from).
    _name: str = PrivateAttr("")
    _folder: str | None = PrivateAttr(None)

    @field_validator("env")
    @classmethod
    def _no_provider_key(cls, names: list[str]) -> list[str]:
        for name in names:
            if not ENV_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not an environment variable's name")
            if is_provider_key(name):
                raise ValueError(
                    f"{name} is a model provider's key, which a role's processes never get; "
                    "remove it from env:"
                )
        return names

    @model_validator(mode="after")
    def _goal_or_graph(self) -> Role:
        if self.graph is None:
            missing = [k for k in ("goal", "frontmatter") if k not in self.model_fields_set]
            if missing:  # the loader reports this as missing-field
                raise ValueError(f"{MISSING_FIELD} '{missing[0]}'")
        return self

    @property
    def name(self) -> str:
        return self._name

    @property
    def folder(self) -> str | None:
        return self._folder

    @cached_property  # asked at every step
    def tool_sets(self) -> tuple[str, ...]:
        """The built-in tool sets the role has (read, edit, shell), without Python and MCP."""
        return tuple(t for t in self.tools if isinstance(t, str))

    @cached_property  # asked at every step
    def python_tools(self) -> tuple[PythonTool, ...]:
        return tuple(t for t in self.tools if isinstance(t, PythonTool))

    @cached_property  # asked at every step
    def mcp_servers(self) -> tuple[McpServer, ...]:
        return tuple(t.mcp for t in self.tools if isinstance(t, McpTool))

    @cached_property
    def contract(self) -> Contract:
        return derive_contract(self.frontmatter)


class Target(_Frozen):
    """Where an edge leads: the next role (or $END) and what it is told."""

    role: str = Field(description="the next role, or $END")
    prompt: str | None = Field(
        None,
        description="Mustache template of the next step's instruction (of a subgraph role: the "
        "child's `task`)",
    )
    inputs: dict[str, str] | None = Field(
        None,
        description="into a subgraph role whose graph declares inputs: each input's Mustache "
        "template (docs/format.md section 14)",
    )
    location: str | None = Field(None, description="directory inside the workspace for the step")

    @model_validator(mode="after")
    def _told_something(self) -> Target:
        if self.prompt is None and self.inputs is None:
            raise ValueError("an edge needs a `prompt` (or `inputs` into a subgraph role)")
        return self


class Branch(Target):
    """One branch of a `parallel` edge: exactly one step of its role (section 15)."""


class Join(Target):
    """The edge taken once every branch of a fan-out has committed (section 15)."""

    ending: str | None = Field(None, pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")
    outcome: Literal["success", "failure"] | None = None
    recovery: str | None = None


class Edge(_Frozen):
    # `as` is a Python keyword: the field is `as_`, written `as`; a dump (the Temporal codec,
    # model_dump without by_alias) must load back, so both names are accepted.
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    role: str | None = Field(
        None, description="the next role, or $END (absent on a `parallel` edge)"
    )
    prompt: str | None = Field(
        None,
        description="Mustache template of the next step's instruction (of a subgraph role: the "
        "child's `task`; of a `for_each` edge: each branch's)",
    )
    inputs: dict[str, str] | None = Field(
        None,
        description="into a subgraph role whose graph declares inputs: each input's Mustache "
        "template (docs/format.md section 14)",
    )
    location: str | None = Field(None, description="directory inside the workspace for the step")
    when: str | None = Field(
        None,
        description="a CEL guard: the first edge of a list whose `when` is true is taken; the "
        "last edge of a list has none (docs/format.md section 11)",
    )
    ending: str | None = Field(
        None,
        pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$",
        description="on an edge into $END: the ending's name (default: done)",
    )
    outcome: Literal["success", "failure"] | None = Field(
        None, description="on an edge into $END: failure makes the thread failed (exit 1)"
    )
    recovery: str | None = Field(
        None, description="on an edge into $END: a Mustache template telling what to do next"
    )
    parallel: list[Branch] | None = Field(
        None, description="branches that run at the same time, one step each (section 15)"
    )
    for_each: str | None = Field(
        None,
        description="a list (a field of this output, $inputs.NAME or $steps.ROLE.FIELD): one "
        "branch of `role` per item (section 15)",
    )
    as_: str | None = Field(
        None,
        alias="as",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="the item's name in a `for_each` branch prompt (default: item)",
    )
    join: Join | None = Field(
        None, description="taken when every branch has committed; sees $branches (section 15)"
    )

    @model_validator(mode="after")
    def _one_shape(self) -> Edge:
        if self.parallel is not None:
            extra = [
                k for k in ("role", "prompt", "inputs", "for_each", "location") if getattr(self, k)
            ]
            if extra:
                raise ValueError(
                    f"a `parallel` edge lists its branches; it has no {', '.join(extra)} of its own"
                )
        elif self.role is None:
            raise ValueError("an edge needs a `role` (or `parallel` branches)")
        elif self.prompt is None and self.inputs is None:
            raise ValueError("an edge needs a `prompt` (or `inputs` into a subgraph role)")
        fans_out = self.parallel is not None or self.for_each is not None
        if fans_out and self.join is None:
            raise ValueError("a `parallel` or `for_each` edge needs a `join` edge")
        if not fans_out and self.join is not None:
            raise ValueError("`join` belongs on a `parallel` or `for_each` edge")
        if self.as_ is not None and self.for_each is None:
            raise ValueError("`as` names the item of a `for_each` edge")
        return self

    @property
    def fans_out(self) -> bool:
        return self.parallel is not None or self.for_each is not None

    @property
    def item_name(self) -> str:
        """The name a `for_each` branch prompt gives the item."""
        return self.as_ or "item"

    def branches(self) -> list[Target]:
        """The branch targets: a `parallel` edge's list, or a `for_each` edge's one role."""
        if self.parallel is not None:
            return list(self.parallel)
        if self.for_each is not None and self.role is not None:
            return [
                Target(
                    role=self.role, prompt=self.prompt, inputs=self.inputs, location=self.location
                )
            ]
        return []

    def targets(self) -> list[Target]:
        """Every role the edge can start: itself, or its branches and its join."""
        if self.fans_out:
            return [*self.branches(), *([self.join] if self.join is not None else [])]
        assert self.role is not None  # the validator: an edge that does not fan out has one
        return [
            Target(role=self.role, prompt=self.prompt, inputs=self.inputs, location=self.location)
        ]


Route = Edge | list[Edge]  # one edge, or guarded edges ending with a default


class Defaults(_Frozen):
    model: str | None = None
    max_tokens: int | None = Field(None, gt=0, strict=True)
    temperature: float | None = Field(None, ge=0, le=1, strict=True)
    memory_budget: int | None = Field(
        None, gt=0, strict=True, description="the roles' `memory_budget` where they set none"
    )


class Limits(_Frozen):
    # strict: `max_steps: "5"` or `true` (lax pydantic made that 1 step) is a bad-type problem
    max_steps: int = Field(50, gt=0, strict=True)
    max_visits: int = Field(10, gt=0, strict=True)
    max_cost_usd: float | None = Field(None, gt=0, strict=True)
    max_parallel: int = Field(
        4, gt=0, strict=True, description="branches of a fan-out running at once"
    )


# Edge keys added after wave 1: dropped from the hash when unset, so older graphs keep theirs.
_LATER_EDGE_KEYS = ("when", "ending", "outcome", "recovery", "parallel", "for_each", "as_", "join")

IMPLICIT_INPUTS: dict[str, Any] = {
    "type": "object",
    "properties": {"task": {"type": "string", "description": "The task, in free text"}},
    "required": ["task"],
}


class Graph(_Frozen):
    version: int | None = Field(None, strict=True)
    name: str = Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$", description="kebab-case, the file stem")
    description: str
    inputs: dict[str, Any] | None = Field(None, description="JSON Schema of the thread's inputs")
    defaults: Defaults = Field(default_factory=Defaults)
    limits: Limits = Field(default_factory=Limits)
    requires: list[Requirement] = Field(
        default_factory=list, description="checked before a thread starts (section 13)"
    )
    roles: dict[str, Role]
    graph: dict[str, dict[str, Route]]

    _source: SourceMap | None = PrivateAttr(None)
    _path: str | None = PrivateAttr(None)
    _subgraphs: dict[str, Graph] = PrivateAttr(default_factory=dict)  # by subgraph role

    def subgraph(self, role: str) -> Graph | None:
        """The child graph a subgraph role runs (set by the loader), or None."""
        return self._subgraphs.get(role)

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
        # Graphs that use none of the later keys keep the hash they had before those existed.
        for name, role in data["roles"].items():
            if role.get("graph") is None:
                role.pop("graph", None)
            else:  # the child's content is part of what the thread is pinned to
                child = self._subgraphs.get(name)
                role["graph_hash"] = child.hash if child is not None else None
            if isinstance(role.get("sandbox"), dict):  # the limits keys, when not given
                for key in ("pids", "memory_mb", "disk_mb"):
                    if role["sandbox"].get(key) is None:
                        del role["sandbox"][key]
            if isinstance(role.get("sandbox"), dict) and role["sandbox"].get("readable") == []:
                del role["sandbox"]["readable"]  # added later: older graphs keep their hash
            if role.get("sandbox") == {"network": None, "writable": []}:
                del role["sandbox"]
            if role.get("requires") == []:
                del role["requires"]
            if role.get("env") == []:
                del role["env"]
            if role.get("fallback") == []:
                del role["fallback"]
            if role.get("memory_budget") is None:
                role.pop("memory_budget", None)
        if data.get("requires") == []:
            del data["requires"]
        if data["limits"].get("max_parallel") == 4:
            del data["limits"]["max_parallel"]
        if data.get("defaults", {}).get("memory_budget", 0) is None:
            del data["defaults"]["memory_budget"]
        for by_status in data["graph"].values():
            for route in by_status.values():
                for edge in route if isinstance(route, list) else [route]:
                    for key in (*_LATER_EDGE_KEYS, "inputs"):
                        if edge.get(key) is None:
                            edge.pop(key, None)
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    def edges(self, source: str, status: str) -> tuple[Edge, ...]:
        """The edges for a status, guarded ones first and the default last; () if none."""
        route = self.graph.get(source, {}).get(status)
        if route is None:
            return ()
        return tuple(route) if isinstance(route, list) else (route,)

    def edge(self, source: str, status: str) -> Edge | None:
        """The default edge for a status (the last of a guarded list), or None."""
        edges = self.edges(source, status)
        return edges[-1] if edges else None

    def routes(self) -> list[tuple[str, str, int, Edge]]:
        """Every edge as (source, status, index in its list, edge), in file order."""
        return [
            (source, status, i, edge)
            for source, by_status in self.graph.items()
            for status in by_status
            for i, edge in enumerate(self.edges(source, status))
        ]

    def position(self, *path: str | int, key: bool = False) -> tuple[str, int, int]:
        """(file, line, column) of a path: in the graph file, or in the library role file that
        a role's field comes from."""
        if self._source is None:
            return (self._path or "<graph>", 1, 1)
        return self._source.where(path, key=key)
