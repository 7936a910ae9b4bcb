"""MCP servers as tools of a model-played role: `tools: [{mcp: {command: [...], env: {...}}}]`.

Theory of operation. A server is a process speaking MCP over stdio, through the official `mcp`
package (the optional extra `mcp`). Servers belong to a thread, not to a step: the runner opens
a `ServerPool` for the time it advances a thread (`thread_servers()`), a step asks the pool for
its role's servers, and the pool starts each one the first time it is asked (in the step's
workspace) and keeps it for the thread's later steps. When the thread stops advancing here (it
completed, suspends, waits for a person, failed or was cancelled) the pool stops every server
it started. A step that runs with no pool around it (an activity on a Temporal worker) gets a
pool of its own for that step.

Each server runs in a task of its own that owns the `mcp` client's context managers from entry
to exit (anyio requires that); steps talk to it through its session. Its tools are offered to
the model as `SERVER__TOOL`, where SERVER is the entry's `name`, else the name the server gives
itself in its handshake. Results come back as text; `is_error` results and failed calls are
tool errors for the model to read.

A server that cannot start (no such program, it exits, it does not answer the handshake within
`START_TIMEOUT`) is a `ServerFailed` with the tail of its stderr, which the actor turns into a
suspended step. Secrets: the server gets a child's allow-list (PATH, HOME, LANG, LC_*, TERM, TZ,
USER, TMPDIR; the `mcp` package adds SHELL and LOGNAME) plus the entry's `env`, where `${NAME}`
is taken from the orchestrator's environment: a secret reaches a server only when the graph
names it there, and a provider's key never does. The
process runs in the role's sandbox like a command actor (network on, files read-only outside the
workspace, the thread boundary's paths inside it read-only or hidden), unless the role says
`sandbox: off`; a server that fails to start there says "inside the sandbox".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import tempfile
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..definition.models import McpServer, Sandbox
from . import sandbox as sandboxing
from .boundary import Boundary
from .scrub import Secrets, is_provider_key, safe_environment

START_TIMEOUT = 30.0
CALL_TIMEOUT = 300.0
STOP_TIMEOUT = 10.0
SEPARATOR = "__"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
INSTALL = "MCP tools need the `mcp` package: pip install '.[mcp]' in orchestrator's folder"


class ServerFailed(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class McpTool:
    """One tool of a running server, as offered to the model."""

    server: Server
    name: str  # SERVER__TOOL
    tool: str  # the server's own name for it
    description: str
    input_schema: dict[str, Any]

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }

    async def call(self, args: Any, workspace: Path) -> tuple[str, bool]:
        return await self.server.call(self.tool, args)


class Server:
    """One running server: a task that holds its client session open until `stop()`."""

    def __init__(
        self,
        spec: McpServer,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        *,
        sandboxed: bool = False,
    ):
        self.spec = spec
        self.sandboxed = sandboxed
        self.argv = argv
        self.env = env
        self.cwd = cwd
        self.session: Any = None
        self.tools: list[McpTool] = []
        self.name = spec.name or ""
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._failure: str | None = None
        # Open for the server's whole life (its stderr goes there); closed by stop().
        self._stderr = tempfile.TemporaryFile(  # noqa: SIM115
            mode="w+", encoding="utf-8", errors="replace"
        )

    @property
    def label(self) -> str:
        return " ".join(self.spec.command)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"mcp server {self.label}")
        ready = asyncio.create_task(self._ready.wait())
        try:
            await asyncio.wait(
                {ready, self._task}, timeout=START_TIMEOUT, return_when="FIRST_COMPLETED"
            )
        finally:
            ready.cancel()
        if self._ready.is_set() and self._failure is None:
            return
        if not self._task.done():
            self._failure = f"it did not answer the MCP handshake within {START_TIMEOUT:g} s"
        await self._halt()
        where = " inside the sandbox" if self.sandboxed else ""
        message = f"MCP server `{self.label}` did not start{where}: {self._failure}{self._tail()}"
        self._stderr.close()
        raise ServerFailed(message)

    async def _run(self) -> None:
        # Deferred: `mcp` is an optional extra, needed only by graphs that name MCP servers.
        from mcp import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=self.argv[0], args=self.argv[1:], env=self.env, cwd=str(self.cwd)
        )
        try:
            async with (
                stdio_client(params, errlog=self._stderr) as (read, write),
                ClientSession(read, write) as session,
            ):
                init = await session.initialize()
                self.name = self.name or _safe(init.server_info.name) or "mcp"
                self.tools = await self._list_tools(session)
                self.session = session
                self._ready.set()
                await self._stop.wait()
        except Exception as exc:  # an exit, a broken pipe, a bad handshake: why it failed
            if not self._ready.is_set():
                self._failure = _describe(exc)
        finally:
            self.session = None

    async def _list_tools(self, session: Any) -> list[McpTool]:
        # Deferred: the optional extra, as in _run.
        from mcp.types import PaginatedRequestParams

        tools: list[McpTool] = []
        cursor = None
        while True:
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            for tool in page.tools:
                tools.append(
                    McpTool(
                        server=self,
                        name=f"{self.name}{SEPARATOR}{_safe(tool.name)}",
                        tool=tool.name,
                        description=tool.description or f"{tool.name} (MCP server {self.name})",
                        input_schema=dict(tool.input_schema or {"type": "object"}),
                    )
                )
            cursor = getattr(page, "next_cursor", None)
            if not cursor:
                return tools

    async def call(self, tool: str, args: Any) -> tuple[str, bool]:
        session = self.session
        if session is None:
            return f"the MCP server {self.name} is no longer running{self._tail()}", True
        if not isinstance(args, dict):
            return "the tool input must be a JSON object", True
        try:
            result = await asyncio.wait_for(session.call_tool(tool, args), CALL_TIMEOUT)
        except TimeoutError:
            return f"the MCP server {self.name} did not answer within {CALL_TIMEOUT:g} s", True
        except Exception as exc:  # a protocol error, a server that died mid-call
            return f"the MCP server {self.name} failed: {_describe(exc)}", True
        return _result_text(result), bool(getattr(result, "is_error", False))

    async def stop(self) -> None:
        await self._halt()
        self._stderr.close()

    async def _halt(self) -> None:
        self._stop.set()
        task = self._task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), STOP_TIMEOUT)
            except (TimeoutError, asyncio.CancelledError):
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task

    def _tail(self) -> str:
        try:
            self._stderr.seek(0)
            lines = [ln for ln in self._stderr.read().strip().splitlines() if ln.strip()][-8:]
        except (OSError, ValueError):
            return ""
        text = Secrets.from_environment().redact("\n".join(lines))
        return f"; its stderr:\n{text}" if text else " (it wrote nothing on stderr)"


class ServerPool:
    """The servers of one thread (or one step), started on first use, stopped together."""

    def __init__(self) -> None:
        self._servers: dict[str, Server] = {}
        self._lock = asyncio.Lock()

    async def server(
        self,
        spec: McpServer,
        cwd: Path,
        sandbox: Sandbox | Literal["off"],
        role: str,
        boundary: Boundary | None = None,
    ) -> Server:
        key = json.dumps([spec.model_dump(mode="json"), str(cwd), str(sandbox)], sort_keys=True)
        async with self._lock:
            found = self._servers.get(key)
            if found is not None and found.session is not None:
                return found
            if found is not None:  # it died since: start it again
                await found.stop()
            argv = _argv(spec, cwd, sandbox, role, boundary)
            server = Server(spec, argv, _environment(spec), cwd, sandboxed=sandbox != "off")
            await server.start()
            self._servers[key] = server
            return server

    async def aclose(self) -> None:
        servers, self._servers = list(self._servers.values()), {}
        await asyncio.gather(*(s.stop() for s in servers), return_exceptions=True)


_pool: ContextVar[ServerPool | None] = ContextVar("orchestrator_mcp_pool", default=None)


@contextlib.asynccontextmanager
async def thread_servers() -> AsyncIterator[ServerPool]:
    """The pool of a thread's servers, for as long as the thread advances in this process."""
    pool = ServerPool()
    token = _pool.set(pool)
    try:
        yield pool
    finally:
        _pool.reset(token)
        await asyncio.shield(pool.aclose())


@contextlib.asynccontextmanager
async def servers_for_step() -> AsyncIterator[ServerPool]:
    """The thread's pool when there is one; else a pool for this step alone."""
    pool = _pool.get()
    if pool is not None:
        yield pool
        return
    own = ServerPool()
    try:
        yield own
    finally:
        await asyncio.shield(own.aclose())


async def role_mcp_tools(
    specs: tuple[McpServer, ...],
    pool: ServerPool,
    cwd: Path,
    sandbox: Sandbox | Literal["off"],
    role: str,
    boundary: Boundary | None = None,
) -> list[McpTool]:
    """The tools of the role's servers, each server started if it is not running yet."""
    if not specs:
        return []
    try:
        import mcp  # noqa: F401  # why: an optional extra; say how to get it when it is missing
    except ImportError:
        raise ServerFailed(INSTALL) from None
    tools: list[McpTool] = []
    for spec in specs:
        server = await pool.server(spec, cwd, sandbox, role, boundary)
        tools += server.tools
    return tools


def _argv(
    spec: McpServer,
    cwd: Path,
    setting: Sandbox | Literal["off"],
    role: str,
    boundary: Boundary | None,
) -> list[str]:
    policy = sandboxing.policy_for(setting, agent=True)
    if policy is None:
        return list(spec.command)
    try:
        return sandboxing.wrap(list(spec.command), workspace=cwd, policy=policy, boundary=boundary)
    except sandboxing.SandboxUnavailable as exc:
        raise ServerFailed(
            f"MCP server `{' '.join(spec.command)}` was not started: {exc}"
        ) from None


def _environment(spec: McpServer) -> dict[str, str]:
    """A child's allow-list, plus the entry's `env`, with `${NAME}` taken from the
    orchestrator's environment (never a provider's key)."""
    env = safe_environment()
    for key, value in spec.env.items():
        keys = [m for m in _VAR.findall(value) if is_provider_key(m)]
        if keys:
            raise ServerFailed(
                f"MCP server `{' '.join(spec.command)}`: env {key} uses ${{{keys[0]}}}, a model "
                "provider's key, which the processes a role starts never get"
            )
        missing = [m for m in _VAR.findall(value) if m not in os.environ]
        if missing:
            raise ServerFailed(
                f"MCP server `{' '.join(spec.command)}`: env {key} uses ${{{missing[0]}}}, which "
                "is not set in the orchestrator's environment"
            )
        env[key] = _VAR.sub(lambda m: os.environ[m.group(1)], value)
    return env


def _safe(name: str) -> str:
    return _UNSAFE.sub("_", name or "")[:64]


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    if isinstance(exc, FileNotFoundError):
        return f"no such program ({exc.filename or exc})"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _result_text(result: Any) -> str:
    parts: list[str] = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource" and getattr(block.resource, "text", None) is not None:
            parts.append(block.resource.text)
        else:
            mime = getattr(block, "mime_type", None) or getattr(block, "uri", None) or ""
            parts.append(f"[{kind or 'content'} {mime}]".replace(" ]", "]"))
    if not parts and getattr(result, "structured_content", None) is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts) or "(no output)"
