"""The small project both tool test files run: a graph whose role counts words with tools, a
module of Python tools and an MCP server written with the `mcp` package's own server API, and
what sets them up beside a workspace (tests/test_python_tools.py,
tests/test_mcp_tools.py)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.core.events import StepCommitted
from orchestrator.store.sqlite import SqliteStore

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


def make_project(tmp_path: Path) -> Path:
    """The graph's folder (the tools module and the server beside it) and a workspace `ws`."""
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
