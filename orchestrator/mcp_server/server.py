"""The MCP tools of `orchestrator mcp`, each a thin call of `Operations` (operations.py).

A failure a caller can cause comes back as a tool error (`ToolError`: `is_error` with the
error worded by `orchestrator.errors.word`, as the command line and the web page word it), and
so does anything unexpected, worded as the bug it is: the server never dies of a call. Tool names and arguments are the API a coding agent sees; the tools' docstrings and
each argument's own description are what it reads, and each tool's annotations say whether it
only reads, runs a thread, or ends one. Arguments that do not fit the schema are told in a
sentence naming the argument.
"""

from __future__ import annotations

import functools
import importlib.metadata
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError

from ..errors import word
from .confine import Confinement
from .operations import DEFAULT_WAIT, Operations

T = TypeVar("T")
log = logging.getLogger("orchestrator")

INSTRUCTIONS = (
    "orchestrator runs multi-agent work as graphs of roles. List the graphs, validate one, "
    "start a thread of it with its inputs, then read the thread's state and story. A thread "
    "that waits for a person is answered with answer_thread (a status and its fields); a "
    "suspended one is resumed with resume_thread; fork_thread tries a step again in a new "
    "thread. Calls that run a thread wait up to "
    "wait_seconds and otherwise answer state 'running': ask thread_state later."
)

# What a client may tell its user before a call: reading, running a thread, or ending one.
READS = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
RUNS = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True)
DESTROYS = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)

GraphArg = Annotated[
    str,
    Field(
        description="a graph name, or a path to its YAML file in one of the graph folders "
        "list_graphs shows (no other file is read)"
    ),
]
ThreadArg = Annotated[str, Field(description="a thread's id, or a unique prefix or suffix of it")]
WaitArg = Annotated[
    float,
    Field(description="how long to wait for the thread to stop before answering 'running'"),
]


def _tool_errors(function: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    @functools.wraps(function)
    async def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return await function(*args, **kwargs)
        except ToolError:
            raise
        except Exception as exc:  # a bug too must come back as an error, not end the server
            wording = word(exc)
            if not wording.expected:
                log.error("a tool call failed", exc_info=exc)
            raise ToolError(wording.text()) from None

    return wrapper


def build_server(
    store: str | os.PathLike[str] | None = None,
    cwd: Path | None = None,
    confinement: Confinement | None = None,
) -> tuple[MCPServer, Operations]:
    ops = Operations(store, cwd, confinement)
    server = _Server("orchestrator", instructions=INSTRUCTIONS, version=_version())

    @server.tool(annotations=READS)
    @_tool_errors
    async def list_graphs() -> list[dict[str, Any]]:
        """The graphs that can be run: those in ./graphs of the server's folder, the bundled
        ones, and those of folders the server was told to allow, each with its description and
        the JSON Schema of its inputs. No other graph can be validated or started."""
        return await ops.list_graphs()

    @server.tool(annotations=READS)
    @_tool_errors
    async def validate_graph(graph: GraphArg) -> dict[str, Any]:
        """Check a graph and list its problems, each with file, line, column, code and
        message."""
        return await ops.validate_graph(graph)

    @server.tool(annotations=RUNS)
    @_tool_errors
    async def start_thread(
        graph: GraphArg,
        inputs: Annotated[
            dict[str, Any] | None,
            Field(description="the thread's inputs (list_graphs gives each graph's schema)"),
        ] = None,
        workspace: Annotated[
            str | None,
            Field(
                description="the folder the roles work in, inside the server's folder (its default)"
            ),
        ] = None,
        replay: Annotated[
            str | None,
            Field(
                description="a recording file inside the server's folder, replayed instead "
                "of calling models"
            ),
        ] = None,
        in_place: Annotated[
            bool, Field(description="work in the folder itself, not in a git worktree of its own")
        ] = False,
        model: Annotated[str | None, Field(description="a model every role is played on")] = None,
        wait_seconds: WaitArg = DEFAULT_WAIT,
        title: Annotated[
            str | None,
            Field(description="what the thread is for, in a line (default: the task's first line)"),
        ] = None,
        labels: Annotated[
            dict[str, str] | None,
            Field(description="key: value labels to find the thread by (list_threads)"),
        ] = None,
    ) -> dict[str, Any]:
        """Start a thread of a graph with its inputs and run it."""
        return await ops.start_thread(
            graph, inputs, workspace, replay, in_place, model, wait_seconds, title, labels
        )

    @server.tool(annotations=READS)
    @_tool_errors
    async def thread_state(thread: ThreadArg) -> dict[str, Any]:
        """A thread's state, steps, cost and final message; for a thread waiting for a person,
        what it asks and the statuses and fields an answer takes."""
        return await ops.thread_state(thread)

    @server.tool(annotations=READS)
    @_tool_errors
    async def thread_story(
        thread: ThreadArg,
        full: Annotated[
            bool, Field(description="keep long values whole instead of cutting them")
        ] = False,
    ) -> str:
        """The story of a thread as text: each step, who played it, its status and fields."""
        return await ops.thread_story(thread, full)

    @server.tool(annotations=READS)
    @_tool_errors
    async def list_threads(
        state: Annotated[
            str | None,
            Field(
                description="keep the threads in this state: running, waiting, suspended, "
                "completed, failed, cancelled or interrupted"
            ),
        ] = None,
        graph: Annotated[str | None, Field(description="keep the threads of this graph")] = None,
        labels: Annotated[
            dict[str, str] | None,
            Field(description="keep the threads with every one of these key: value labels"),
        ] = None,
        search: Annotated[
            str | None,
            Field(description="keep the threads whose title or inputs hold every word of this"),
        ] = None,
    ) -> list[dict[str, Any]]:
        """The threads in the store, oldest first, each with its title and labels."""
        return await ops.list_threads(state, graph, labels, search)

    @server.tool(annotations=RUNS)
    @_tool_errors
    async def answer_thread(
        thread: ThreadArg,
        status: Annotated[
            str | None, Field(description="the answer's status (one of those thread_state lists)")
        ] = None,
        fields: Annotated[dict[str, Any] | None, Field(description="the answer's fields")] = None,
        body: Annotated[str, Field(description="free text after the fields")] = "",
        text: Annotated[
            str | None,
            Field(
                description="the whole reply (frontmatter and body) instead of status, fields "
                "and body"
            ),
        ] = None,
        wait_seconds: WaitArg = DEFAULT_WAIT,
        step: Annotated[
            int | None,
            Field(
                description="the waiting step to answer when several wait (thread_state lists "
                "them under allowed.answer); default: the first"
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Answer for the person a waiting thread waits for, then continue the thread."""
        return await ops.answer_thread(thread, status, fields, body, text, wait_seconds, step)

    @server.tool(annotations=RUNS)
    @_tool_errors
    async def resume_thread(
        thread: ThreadArg,
        message: Annotated[
            str | None, Field(description="a note for the role that runs next")
        ] = None,
        wait_seconds: WaitArg = DEFAULT_WAIT,
    ) -> dict[str, Any]:
        """Continue a suspended or interrupted thread (or a completed one, with a message)."""
        return await ops.resume_thread(thread, message, wait_seconds)

    @server.tool(annotations=RUNS)
    @_tool_errors
    async def fork_thread(
        thread: ThreadArg,
        at: Annotated[
            int | None,
            Field(
                description="the step to fork at (thread_state lists them under allowed.fork."
                "steps); default: after the last committed step"
            ),
        ] = None,
        status: Annotated[
            str | None, Field(description="a reply for that step: its status")
        ] = None,
        fields: Annotated[dict[str, Any] | None, Field(description="the reply's fields")] = None,
        body: Annotated[str, Field(description="free text after the fields")] = "",
        text: Annotated[
            str | None, Field(description="the whole reply instead of status, fields and body")
        ] = None,
        message: Annotated[
            str | None, Field(description="without a reply: a note added to the step's prompt")
        ] = None,
        reuse: Annotated[
            bool, Field(description="take the original's replies until a step differs")
        ] = False,
        wait_seconds: WaitArg = DEFAULT_WAIT,
    ) -> dict[str, Any]:
        """Fork a thread at a step into a new thread (the original is untouched), with a reply
        for that step or the step decided again, and run the fork."""
        return await ops.fork_thread(
            thread, at, status, fields, body, text, message, reuse, wait_seconds
        )

    @server.tool(annotations=DESTROYS)
    @_tool_errors
    async def cancel_thread(
        thread: ThreadArg,
        reason: Annotated[str, Field(description="why, recorded in the thread")] = (
            "cancelled by the user"
        ),
    ) -> dict[str, Any]:
        """Cancel a thread for good; a step in flight is stopped."""
        return await ops.cancel_thread(thread, reason)

    return server, ops


class _Server(MCPServer):
    """The `mcp` package's server, with arguments that do not fit told in a sentence rather
    than in pydantic's report (its types, its links)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(_arguments_problem(name, exc.__cause__)) from None
            raise


def _arguments_problem(tool: str, error: ValidationError) -> str:
    lines = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"])
        if problem["type"] == "missing":
            lines.append(f"{tool} needs the argument '{where}'")
        else:
            lines.append(f"{tool}: the argument '{where}' {_lower(problem['msg'])}")
    return "\n".join(lines) + " (list_tools describes each argument)"


def _lower(message: str) -> str:
    return message[:1].lower() + message[1:]


def _version() -> str:
    try:
        return importlib.metadata.version("orchestrator")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout never installed
        return "0+unknown"


async def serve(
    store: str | os.PathLike[str] | None = None, confinement: Confinement | None = None
) -> None:
    """Serve on stdin and stdout until the client goes away."""
    server, ops = build_server(store, confinement=confinement)
    try:
        await server.run_stdio_async()
    finally:
        await ops.close()
