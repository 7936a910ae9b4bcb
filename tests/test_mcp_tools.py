"""MCP tools of a model-played role, through real threads.

The real `anthropic` client talks to the fake Messages API; the MCP server is a real process
written here with the `mcp` package's own server API (`MCPServer`), started by the thread over
stdio and gone when the thread ends.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator import run_thread
from orchestrator.store.sqlite import SqliteStore
from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse
from tests.anthropic_fixtures import TEST_KEY, fake_server, tool_results
from tests.mcp_helpers import require_mcp
from tests.tool_project import graph, make_project, steps

require_mcp()  # the servers written here import `mcp`


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with fake_server(monkeypatch) as fake:
        yield fake


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


def live(marker: str) -> list[int]:
    """Processes whose command line mentions `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_an_mcp_server_serves_the_thread_and_is_gone_after_it(
    server: FakeAnthropic, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTES_TOKEN_SOURCE", "tok-123")
    seen: list[list[int]] = []

    def script(body: dict[str, Any]) -> FakeResponse:
        turn = len(server.message_requests)
        if turn == 1:
            return FakeResponse.tool_use("notes__count", {"text": "one two three"})
        if turn == 2:
            return FakeResponse.tool_use("notes__secret", {})
        if turn == 3:
            seen.append(live(str(project / "notes_server.py")))
            return FakeResponse.tool_use("notes__count", {"words": 3})
        return FakeResponse.text("---\nwords: 3\n---\nCounted by the server.")

    server.handler = script
    store = SqliteStore(tmp_path / "store")
    command = f"[{sys.executable}, {project / 'notes_server.py'}]"
    entry = f"[{{mcp: {{command: {command}, env: {{NOTES_TOKEN: '${{NOTES_TOKEN_SOURCE}}'}}}}}}]"
    result = run_thread(
        graph(project, entry), {"task": "count"}, store=store, workspace=tmp_path / "ws"
    )
    assert (result.state, result.final) == ("completed", "3 words"), result.reason

    bodies = server.message_requests
    names = [t["name"] for t in bodies[0]["tools"]]
    assert names == ["notes__count", "notes__secret", "notes__pid"]
    assert bodies[0]["tools"][0]["input_schema"]["required"] == ["text"]
    counted = tool_results(bodies[1])[0]
    assert (counted["content"], counted["is_error"]) == ("3", False)
    # the key stays out of the server's environment; what the graph names gets in
    assert tool_results(bodies[2])[0]["content"] == "key=(unset) token=tok-123"
    assert TEST_KEY not in str(bodies)
    bad = tool_results(bodies[3])[0]
    assert bad["is_error"] and "text" in bad["content"]
    assert seen and seen[0], "the server ran while the thread did"
    assert live(str(project / "notes_server.py")) == []
    assert steps(store, result.thread_id)[0].tool_calls == 3


def test_an_mcp_server_that_fails_to_start_suspends_with_its_stderr(
    server: FakeAnthropic, project: Path, tmp_path: Path
) -> None:
    (project / "broken.py").write_text(
        "import sys\nprint('cannot open the notes database', file=sys.stderr)\nsys.exit(3)\n"
    )
    entry = f"[{{mcp: {{command: [{sys.executable}, {project / 'broken.py'}]}}}}]"
    result = run_thread(
        graph(project, entry),
        {"task": "count"},
        store=tmp_path / "store",
        workspace=tmp_path / "ws",
    )
    assert result.state == "suspended" and result.kind == "process"
    reason = result.reason or ""
    assert "MCP server" in reason and "did not start" in reason
    assert "cannot open the notes database" in reason
    assert server.message_requests == []


def test_a_missing_variable_in_env_suspends(
    server: FakeAnthropic, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NOPE_TOKEN", raising=False)
    command = f"[{sys.executable}, {project / 'notes_server.py'}]"
    entry = f"[{{mcp: {{command: {command}, env: {{T: '${{NOPE_TOKEN}}'}}}}}}]"
    result = run_thread(
        graph(project, entry),
        {"task": "count"},
        store=tmp_path / "store",
        workspace=tmp_path / "ws",
    )
    assert result.state == "suspended"
    assert "${NOPE_TOKEN}, which is not set" in (result.reason or "")


PAGED_SERVER = '''\
from mcp.server import MCPServer
from mcp.types import ListToolsResult


class Paged(MCPServer):
    """Lists its tools one per page, as a server with many tools does."""

    async def _handle_list_tools(self, ctx, params):
        tools = await self.list_tools()
        start = int(params.cursor) if params is not None and params.cursor else 0
        more = str(start + 1) if start + 1 < len(tools) else None
        return ListToolsResult(tools=tools[start : start + 1], next_cursor=more)


server = Paged("paged")


@server.tool()
def first() -> str:
    """One."""
    return "1"


@server.tool()
def second() -> str:
    """Two."""
    return "2"


server.run()
'''


def test_every_page_of_a_servers_tool_list_is_offered(
    server: FakeAnthropic, project: Path, tmp_path: Path
) -> None:
    (project / "paged.py").write_text(PAGED_SERVER)
    server.reply(
        FakeResponse.tool_use("pages__second", {}), FakeResponse.text("---\nwords: 2\n---\n")
    )
    entry = f"[{{mcp: {{command: [{sys.executable}, {project / 'paged.py'}], name: pages}}}}]"
    result = run_thread(
        graph(project, entry),
        {"task": "count"},
        store=tmp_path / "store",
        workspace=tmp_path / "ws",
    )
    assert result.state == "completed", result.reason
    bodies = server.message_requests
    assert [t["name"] for t in bodies[0]["tools"]] == ["pages__first", "pages__second"]
    assert tool_results(bodies[1])[0]["content"] == "2"
