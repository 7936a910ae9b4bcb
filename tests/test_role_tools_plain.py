"""A role with no Python or MCP tool skips the step's tool set-up (no server pool, no loading),
and a role with one still gets it (the control)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from orchestrator.definition.loader import load_graph
from orchestrator.tools import role_tools
from orchestrator.tools.mcp_client import ServerPool, servers_for_step
from tests.tool_project import graph, make_project


def tools_of(path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], int]:
    """The extra tools the role's step gets, and how often a step's server pool was entered."""
    entered = 0

    @asynccontextmanager
    async def counting() -> AsyncIterator[ServerPool]:
        nonlocal entered
        entered += 1
        async with servers_for_step() as pool:
            yield pool

    monkeypatch.setattr(role_tools, "servers_for_step", counting)
    role = load_graph(path).roles["counter"]

    async def names() -> list[str]:
        async with role_tools.extra_tools(role, "counter", workspace) as extra:
            return [tool.name for tool in extra]

    return asyncio.run(names()), entered


def test_a_role_without_python_or_mcp_tools_sets_none_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path)
    assert tools_of(graph(project, "[read]"), tmp_path / "ws", monkeypatch) == ([], 0)


def test_a_role_with_a_python_tool_still_gets_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path)
    path = graph(project, '[read, {python: "wordtools:count_words"}]')
    assert tools_of(path, tmp_path / "ws", monkeypatch) == (["count_words"], 1)
