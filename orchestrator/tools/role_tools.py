"""The tools a role has beyond the built-in sets: its Python functions and its MCP servers.

`extra_tools(role, workspace)` is entered for one step: it loads the role's Python tools
(`pytools.py`) and gets its MCP servers' tools from the thread's server pool (`mcp_client.py`),
in the order the role lists them, so the tool definitions, and the provider's prompt cache, stay
the same from one visit to the next. What cannot be set up (a function that cannot be loaded, a
server that does not start, two tools of the same name) is a `ToolSetupFailed`, which the actor
turns into a suspended step.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from ..core.events import SuspendKind
from ..definition.models import PythonTool, Role
from ..definition.pyref import PyRefError
from .boundary import Boundary
from .mcp_client import ServerFailed, role_mcp_tools, servers_for_step
from .pytools import load_tool
from .toolbox import ExtraTool, tool_definitions


class ToolSetupFailed(Exception):
    def __init__(self, message: str, kind: SuspendKind):
        super().__init__(message)
        self.message = message
        self.kind = kind


@asynccontextmanager
async def extra_tools(
    role: Role, name: str, workspace: Path, boundary: Boundary | None = None
) -> AsyncIterator[list[ExtraTool]]:
    if not role.mcp_servers and not role.python_tools:
        # No tool of either kind: nothing to load, start or check (a step pool would stay
        # empty). Most model roles; the rest costs ~18 µs of CPU per model call.
        yield []
        return
    python: list[ExtraTool] = []
    for entry in role.tools:
        if isinstance(entry, PythonTool):
            try:
                python.append(load_tool(entry.python, role.folder))
            except PyRefError as exc:
                raise ToolSetupFailed(
                    f"role {name!r}: python tool {entry.python}: {exc.message}", SuspendKind.CONFIG
                ) from None
    async with servers_for_step() as pool:
        try:
            served = await role_mcp_tools(
                role.mcp_servers, pool, workspace, role.sandbox, name, boundary
            )
        except ServerFailed as exc:
            raise ToolSetupFailed(f"role {name!r}: {exc.message}", SuspendKind.PROCESS) from None
        tools: list[ExtraTool] = [*python, *served]
        taken = {d["name"] for d in tool_definitions(role)}
        for tool in tools:
            if tool.name in taken:
                raise ToolSetupFailed(
                    f"role {name!r} has two tools named {tool.name!r}; rename one (an MCP "
                    "entry's `name:` sets its SERVER prefix)",
                    SuspendKind.CONFIG,
                )
            taken.add(tool.name)
        yield tools
