"""The MCP tools of `orchestrator mcp`, each a thin call of `Operations` (operations.py).

A failure a caller can cause comes back as a tool error (`ToolError`: `is_error` with the
message), and so does anything unexpected, with its type and message: the server never dies of
a call. Tool names and arguments are the API a coding agent sees; their docstrings are what it
reads.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from .confine import Confinement, Refusal
from .operations import DEFAULT_WAIT, OperationFailed, Operations

T = TypeVar("T")

INSTRUCTIONS = (
    "orchestrator runs multi-agent work as graphs of roles. List the graphs, validate one, "
    "start a thread of it with its inputs, then read the thread's state and story. A thread "
    "that waits for a person is answered with answer_thread (a status and its fields); a "
    "suspended one is resumed with resume_thread. Calls that run a thread wait up to "
    "wait_seconds and otherwise answer state 'running': ask thread_state later."
)


def _tool_errors(function: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    @functools.wraps(function)
    async def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return await function(*args, **kwargs)
        except (OperationFailed, Refusal) as exc:
            raise ToolError(exc.message) from None
        except ToolError:
            raise
        except Exception as exc:  # a bug must come back as an error, not end the server
            raise ToolError(f"orchestrator failed: {type(exc).__name__}: {exc}") from None

    return wrapper


def build_server(
    store: str | os.PathLike[str] | None = None,
    cwd: Path | None = None,
    confinement: Confinement | None = None,
) -> tuple[MCPServer, Operations]:
    ops = Operations(store, cwd, confinement)
    server = MCPServer("orchestrator", instructions=INSTRUCTIONS)

    @server.tool()
    @_tool_errors
    async def list_graphs() -> list[dict[str, Any]]:
        """The graphs that can be run: those in ./graphs of the server's folder, the bundled
        ones, and those of folders the server was told to allow, each with its description and
        the JSON Schema of its inputs. No other graph can be validated or started."""
        return await ops.list_graphs()

    @server.tool()
    @_tool_errors
    async def validate_graph(graph: str) -> dict[str, Any]:
        """Check a graph (a name, or a path to its YAML file in one of the graph folders
        list_graphs shows) and list its problems, each with file, line, column, code and
        message."""
        return await ops.validate_graph(graph)

    @server.tool()
    @_tool_errors
    async def start_thread(
        graph: str,
        inputs: dict[str, Any] | None = None,
        workspace: str | None = None,
        replay: str | None = None,
        in_place: bool = False,
        model: str | None = None,
        wait_seconds: float = DEFAULT_WAIT,
    ) -> dict[str, Any]:
        """Start a thread of a graph with its inputs and run it.

        Args:
            graph: a graph name, or a path to its YAML file in a graph folder (list_graphs)
            inputs: the thread's inputs (see list_graphs for each graph's schema)
            workspace: the folder the roles work in, inside the server's folder (its default)
            replay: a recording file inside the server's folder, replayed instead of models
            in_place: work in the folder itself, not in a git worktree of its own
            model: a model every role is played on
            wait_seconds: how long to wait for the thread to stop before answering 'running'
        """
        return await ops.start_thread(
            graph, inputs, workspace, replay, in_place, model, wait_seconds
        )

    @server.tool()
    @_tool_errors
    async def thread_state(thread: str) -> dict[str, Any]:
        """A thread's state, steps, cost and final message; for a thread waiting for a person,
        what it asks and the statuses and fields an answer takes. `thread` is an id, or a
        unique prefix or suffix of one."""
        return await ops.thread_state(thread)

    @server.tool()
    @_tool_errors
    async def thread_story(thread: str, full: bool = False) -> str:
        """The story of a thread as text: each step, who played it, its status and fields.

        Args:
            thread: the thread's id, or a unique prefix or suffix of it
            full: keep long values whole instead of cutting them
        """
        return await ops.thread_story(thread, full)

    @server.tool()
    @_tool_errors
    async def list_threads(state: str | None = None) -> list[dict[str, Any]]:
        """The threads in the store, newest first; `state` keeps those in that state
        (running, waiting, suspended, completed, failed, cancelled, interrupted)."""
        return await ops.list_threads(state)

    @server.tool()
    @_tool_errors
    async def answer_thread(
        thread: str,
        status: str | None = None,
        fields: dict[str, Any] | None = None,
        body: str = "",
        text: str | None = None,
        wait_seconds: float = DEFAULT_WAIT,
    ) -> dict[str, Any]:
        """Answer for the person a waiting thread waits for, then continue the thread.

        Args:
            thread: the waiting thread's id
            status: the answer's status (one of those thread_state lists)
            fields: the answer's fields
            body: free text after the fields
            text: the whole reply (frontmatter and body) instead of status, fields and body
            wait_seconds: how long to wait for the thread to stop before answering 'running'
        """
        return await ops.answer_thread(thread, status, fields, body, text, wait_seconds)

    @server.tool()
    @_tool_errors
    async def resume_thread(
        thread: str, message: str | None = None, wait_seconds: float = DEFAULT_WAIT
    ) -> dict[str, Any]:
        """Continue a suspended or interrupted thread (or a completed one, with a message).

        Args:
            thread: the thread's id
            message: a note for the role that runs next
            wait_seconds: how long to wait for the thread to stop before answering 'running'
        """
        return await ops.resume_thread(thread, message, wait_seconds)

    @server.tool()
    @_tool_errors
    async def cancel_thread(thread: str, reason: str = "cancelled by the user") -> dict[str, Any]:
        """Cancel a thread for good; a step in flight is stopped."""
        return await ops.cancel_thread(thread, reason)

    return server, ops


async def serve(
    store: str | os.PathLike[str] | None = None, confinement: Confinement | None = None
) -> None:
    """Serve on stdin and stdout until the client goes away."""
    server, ops = build_server(store, confinement=confinement)
    try:
        await server.run_stdio_async()
    finally:
        await ops.close()
