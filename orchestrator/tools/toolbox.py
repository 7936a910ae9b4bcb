"""A role's tools: their definitions for the Messages API and the executor for tool calls.

`tool_definitions(role)` lists what the model is offered, in a fixed order (editor, search,
bash) so the request prefix stays byte-identical across visits and the provider can cache it.
`ToolBox.run(name, input)` carries out one `tool_use` block and returns `(text, is_error)` for
the `tool_result`; it never raises for anything the model did wrong, and it refuses tools the
role was not given even if the model names them. Credentials (and their reversed and base64
forms, and fragments of them) are redacted from every result before it is cut to a length limit
(`scrub.py`), so a file that happens to hold the key cannot leak it into the conversation. The
shell runs in the role's sandbox (`sandbox.py`); the thread's boundary (`boundary.py`) says
what the file tools refuse and the sandbox keeps read-only or hidden; the file tools also refuse
`.git` and follow no symlink (`workspace.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from ..definition.models import Role, Sandbox
from . import editor, search, shell
from .boundary import Boundary, real
from .scrub import Secrets
from .workspace import Workspace


class ExtraTool(Protocol):
    """A Python function or an MCP server's tool (`role_tools.py`)."""

    @property
    def name(self) -> str: ...

    def definition(self) -> dict[str, Any]: ...

    async def call(self, args: Any, workspace: Path) -> tuple[str, bool]: ...


def tool_definitions(role: Role | Iterable[str]) -> list[dict[str, Any]]:
    sets = set(role.tool_sets if isinstance(role, Role) else role)
    defs: list[dict[str, Any]] = []
    if sets & {"read", "edit"}:
        defs.append(editor.definition())
        defs.append(search.definition())
    if "shell" in sets:
        defs.append(shell.definition())
    return defs


class ToolBox:
    def __init__(
        self,
        workspace: Path | str | Workspace,
        tool_sets: Iterable[str],
        *,
        shell_timeout: float = shell.DEFAULT_TIMEOUT,
        max_output: int = shell.MAX_OUTPUT,
        secrets: tuple[str, ...] = (),
        passed: tuple[str, ...] = (),
        sandbox: Sandbox | Literal["off"] | None = None,
        role_name: str = "",
        extra: Sequence[ExtraTool] = (),
        protected: Iterable[Path | str] = (),
        boundary: Boundary | None = None,
    ):
        self.extra = {tool.name: tool for tool in extra}
        if not isinstance(workspace, Workspace):
            root = Path(workspace)
            boundary = boundary or Boundary.bare(root)
            guarded = [*boundary.protected_within(real(root)), *protected]
            workspace = Workspace(root, protected=guarded)
        self.workspace = workspace
        self.tool_sets = frozenset(tool_sets)
        self.secrets = Secrets.from_environment(extra=secrets)
        self.editor = editor.TextEditor(
            self.workspace, can_edit="edit" in self.tool_sets, redact=self.secrets.redact
        )
        self.shell = shell.Shell(
            self.workspace,
            timeout=shell_timeout,
            max_output=max_output,
            extra_secrets=secrets,
            passed=passed,
            sandbox=sandbox,
            role_name=role_name,
            boundary=boundary,
        )

    @property
    def names(self) -> list[str]:
        return [d["name"] for d in tool_definitions(self.tool_sets)] + list(self.extra)

    async def run(self, name: str, args: Any) -> tuple[str, bool]:
        if name not in self.names:
            offered = ", ".join(self.names) or "none"
            return f"tool {name!r} is not available to this role (available: {offered})", True
        if not isinstance(args, dict):
            return "the tool input must be a JSON object", True
        try:
            if name in self.extra:
                text, is_error = await self.extra[name].call(args, self.workspace.root)
            elif name == editor.TOOL_NAME:
                text, is_error = self.editor.run(args)
            elif name == search.TOOL_NAME:
                text, is_error = search.search(self.workspace, args, redact=self.secrets.redact)
            else:
                text, is_error = await self.shell.run(args)
        except Exception as exc:  # a tool bug or odd input must not end the step
            text, is_error = f"the {name} tool failed: {type(exc).__name__}: {exc}", True
        return self.scrub(text), is_error

    def scrub(self, text: str) -> str:
        return self.secrets.redact(text)
