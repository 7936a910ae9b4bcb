"""Who plays a role and the tools it has beyond the built-in sets (docs/format.md sections 3
and 16): the forms of `actor:` and of a `tools:` entry, as pydantic models.

Each union is discriminated by the value's shape (a name, a mapping with `python`, `mcp` or
`command`), so a mistake is reported against the form it looks like, once, not once per member.

`PlayedBy` gives `Role` its questions about who plays it (`role.is_human`, `role.edits_files`,
...): code asks those, never compares `role.actor` with a string, so a new kind of actor (or
the subgraph role, whose `actor` default means nothing) is handled in one place.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator
from pydantic_core import PydanticCustomError


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CommandActor(_Frozen):
    """An external agent process: the prompt on stdin, the reply on stdout."""

    command: list[str] = Field(min_length=1, description="argv of the process")
    timeout: float = Field(600.0, gt=0, description="seconds before the process is killed")


PY_REF = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$"


def _py_ref(value: str) -> str:
    if not re.match(PY_REF, value):
        raise PydanticCustomError(
            "py_ref", "must be package.module:function (a module path, a colon, a function name)"
        )
    return value


class PythonActor(_Frozen):
    """A Python function plays the role (docs/actors.md): `package.module:function`."""

    python: str = Field(
        description="`package.module:function`, importable from the graph's folder or installed",
        json_schema_extra={"pattern": PY_REF},
    )

    _check = field_validator("python")(lambda cls, v: _py_ref(v))


def _actor_kind(value: Any) -> str:
    """Which form of `actor:` a value is, so a mistake is reported against that form only."""
    if isinstance(value, PythonActor) or (isinstance(value, dict) and "python" in value):
        return "Python"
    if isinstance(value, CommandActor | dict):
        return "Command"
    return "Name"


Actor = Annotated[
    Annotated[Literal["anthropic", "human", "claude-code"], Tag("Name")]
    | Annotated[CommandActor, Tag("Command")]
    | Annotated[PythonActor, Tag("Python")],
    Discriminator(_actor_kind),
]


class PythonTool(_Frozen):
    """A Python function offered to the model as a tool (docs/actors.md)."""

    python: str = Field(
        description="`package.module:function`; its signature and docstring give the schema",
        json_schema_extra={"pattern": PY_REF},
    )

    _check = field_validator("python")(lambda cls, v: _py_ref(v))


class McpServer(_Frozen):
    """A stdio MCP server started for the thread (docs/actors.md)."""

    command: list[str] = Field(min_length=1, description="argv of the server")
    env: dict[str, str] = Field(
        default_factory=dict,
        description="the server's extra environment; `${NAME}` takes NAME from the "
        "orchestrator's environment (the only way a secret reaches the server)",
    )
    name: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9_-]{1,32}$",
        description="the SERVER in SERVER__TOOL (default: the name the server gives itself)",
    )


class McpTool(_Frozen):
    mcp: McpServer


def _tool_kind(value: Any) -> str:
    """Which form of a `tools:` entry a value is (see `_actor_kind`)."""
    if isinstance(value, McpTool) or (isinstance(value, dict) and "mcp" in value):
        return "Mcp"
    if isinstance(value, PythonTool | dict):
        return "Python"
    return "Set"


ToolEntry = Annotated[
    Annotated[Literal["read", "edit", "shell"], Tag("Set")]
    | Annotated[PythonTool, Tag("Python")]
    | Annotated[McpTool, Tag("Mcp")],
    Discriminator(_tool_kind),
]


def entry_fields(path: tuple[str | int, ...]) -> list[str] | None:
    """The keys an `actor:` or `tools:` entry at `path` may have (for did-you-mean), or None
    when `path` is not one."""
    where = path[2:] if path[:1] == ("roles",) else path  # in a graph, or in a role file
    if len(where) == 2 and where[0] == "tools":
        return ["python", "mcp"]
    if len(where) == 3 and where[0] == "tools" and where[2] == "mcp":
        return list(McpServer.model_fields)
    if where[:1] == ("actor",):
        return [*CommandActor.model_fields, "python"]
    return None


def folder_of(path: str | Path | None) -> str | None:
    """The folder `python:` references are imported from: the graph file's."""
    return str(Path(path).resolve().parent) if path is not None else None


class ActorKind(StrEnum):
    """What plays a role; the value is the `actor:` name, or the form's key (command, python)."""

    MODEL = "anthropic"  # a model through a provider's API, with the orchestrator's tools
    HUMAN = "human"  # a person, answering in the terminal, the web page, MCP or the client
    CLAUDE_CODE = "claude-code"  # Claude Code as an agent process in the workspace
    COMMAND = "command"  # any other agent process: the prompt on stdin, the reply on stdout
    PYTHON = "python"  # a Python function of the graph's folder or installed
    SUBGRAPH = "subgraph"  # a child thread of another graph (`graph:`), whatever `actor` says


# The tool sets with which a role may change the workspace's files.
CHANGING_TOOL_SETS = frozenset({"edit", "shell"})


class PlayedBy:
    """Who plays a role, asked by name (a mixin of `Role`, which has the attributes below)."""

    if TYPE_CHECKING:
        actor: Actor
        graph: str | None

        @property
        def tool_sets(self) -> tuple[str, ...]: ...
        @property
        def python_tools(self) -> tuple[PythonTool, ...]: ...
        @property
        def mcp_servers(self) -> tuple[McpServer, ...]: ...

    @property
    def kind(self) -> ActorKind:
        if self.graph is not None:
            return ActorKind.SUBGRAPH
        if isinstance(self.actor, CommandActor):
            return ActorKind.COMMAND
        if isinstance(self.actor, PythonActor):
            return ActorKind.PYTHON
        return ActorKind(self.actor)

    @property
    def is_model(self) -> bool:
        """A model through a provider's API plays it (the `anthropic` actor, the default)."""
        return self.kind is ActorKind.MODEL

    @property
    def is_human(self) -> bool:
        return self.kind is ActorKind.HUMAN

    @property
    def is_claude_code(self) -> bool:
        return self.kind is ActorKind.CLAUDE_CODE

    @property
    def is_command(self) -> bool:
        return self.kind is ActorKind.COMMAND

    @property
    def is_python(self) -> bool:
        return self.kind is ActorKind.PYTHON

    @property
    def is_subgraph(self) -> bool:
        return self.kind is ActorKind.SUBGRAPH

    @property
    def python_ref(self) -> str | None:
        """The `package.module:function` of a Python actor, else None."""
        return self.actor.python if isinstance(self.actor, PythonActor) else None

    @property
    def edits_files(self) -> bool:
        """Whether the role may change the workspace's files: the edit or shell tool sets, code
        (a Python actor or tool, an MCP server) or an agent process that gets the workspace."""
        return bool(
            CHANGING_TOOL_SETS & set(self.tool_sets)
            or self.python_tools
            or self.mcp_servers
            or self.is_python
            or self.is_command
        )
