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
from orchestrator.core.events import StepCommitted
from orchestrator.store.sqlite import SqliteStore
from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse
from tests.anthropic_fixtures import TEST_KEY, fake_server, tool_results
from tests.mcp_helpers import require_mcp

require_mcp()  # the servers written here import `mcp`

GRAPH = """\
name: count
description: A counter that uses tools.
roles:
  counter:
    description: Counts words
    goal: You count words with your tools.
    tools: TOOLS
    frontmatter:
      type: object
      properties:
        words: { type: integer }
      required: [words]
graph:
  $START:
    _: { role: counter, prompt: "Count the words of notes.txt" }
  counter:
    _: { role: $END, prompt: "{{words}} words" }
"""

TOOLS_PY = '''\
from pathlib import Path


def count_words(path: str, minimum: int = 1, workspace: Path = Path(".")) -> dict:
    """Count the words of a file in the workspace.

    Args:
        path: the file, relative to the workspace
        minimum: only words at least this long
            are counted
    """
    text = (workspace / path).read_text()
    return {"words": len([w for w in text.split() if len(w) >= minimum])}


async def shout(text: str) -> str:
    """Upper-case a text.

    :param text: what to shout
    """
    if text == "boom":
        raise ValueError("no shouting boom")
    return text.upper()
'''

SERVER_PY = '''\
import os
import sys

from mcp.server import MCPServer

server = MCPServer("notes")


@server.tool()
def count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


@server.tool()
def secret() -> str:
    """What the server's environment holds."""
    return "key=" + os.environ.get("ANTHROPIC_API_KEY", "(unset)") + " token=" + os.environ.get("NOTES_TOKEN", "(unset)")


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


print("notes server starting", file=sys.stderr)
server.run()
'''


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with fake_server(monkeypatch) as fake:
        yield fake


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "wordtools.py").write_text(TOOLS_PY)
    (folder / "notes_server.py").write_text(SERVER_PY)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("a few words in a file\n")
    return folder


def graph(project: Path, tools: str) -> Path:
    path = project / "count.yaml"
    path.write_text(GRAPH.replace("TOOLS", tools))
    return path


def steps(store: SqliteStore, thread_id: str) -> list[StepCommitted]:
    return [e.event for e in store.events(thread_id) if isinstance(e.event, StepCommitted)]


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
