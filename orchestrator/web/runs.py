"""The threads this server advances: a resume or an answer given on the page runs here.

Each runs as an asyncio task on the server's loop, through a session of its own (a local one
has its own store connection), exactly as `threads resume` / `threads answer` run it: the thread's graph, loaded
and linted, its roles' own actors, the lease that keeps a second process out, the work committed
on the thread's branch when it completes. A request returns once the thread has moved (its
request judged and recorded) or the run has ended, so the page that follows shows the answer
taken, or the reason it was refused.

Stopping the server cancels the tasks: the runner then records the interruption, and the threads
are left resumable, as after Ctrl-C on the command line. Sessions are held as the contract
(run/contract.py) alone: `open_session` gives a context manager, which closes a session made for
the run and leaves a shared one (Temporal's) open; a `blocking` session's reads (Temporal's
wait on the network) run on a worker thread.

Why a request failed is worded by `orchestrator.errors.word`, as the command line and the MCP
server word it; an error outside the family is a bug, logged with its traceback here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import Any

from ..definition.models import Graph
from ..errors import OrchestratorError, Wording, word
from ..run.contract import ThreadSession
from ..run.options import RunOptions, ThreadResult

OpenSession = Callable[[], AbstractContextManager[ThreadSession]]

log = logging.getLogger("orchestrator")

Action = Callable[[Any, Graph, RunOptions], Awaitable[ThreadResult]]
SETTLE_POLL = 0.05  # seconds between looks at the store while a request is being judged
SETTLE_LIMIT = 200  # looks, at most, before the page is shown anyway (the run goes on)


class Runs:
    def __init__(self, open_session: OpenSession, *, blocking: bool = False):
        self.open_session = open_session
        self.blocking = blocking
        self.tasks: dict[str, asyncio.Task[ThreadResult | None]] = {}
        self.errors: dict[str, Wording] = {}  # the last failed run of each thread, for its page

    def running(self, thread_id: str) -> bool:
        task = self.tasks.get(thread_id)
        return task is not None and not task.done()

    async def start(self, thread_id: str, action: Action) -> Wording | None:
        """Run `action` on the thread; None once it moved, else why it could not."""
        if self.running(thread_id):
            return word(OrchestratorError("this server is already running this thread"))
        held = contextlib.ExitStack()
        session = held.enter_context(self.open_session())
        try:
            row = await self._read(session.thread, thread_id)
            graph = await self._read(session.graph_for, row)
            seen = row.seq
        except OrchestratorError as exc:
            held.close()
            return word(exc)
        self.errors.pop(thread_id, None)
        task = asyncio.create_task(self._run(thread_id, action, held, session, graph))
        self.tasks[thread_id] = task
        for _ in range(SETTLE_LIMIT):
            if task.done():
                return self.errors.get(thread_id)
            try:
                if (await self._read(session.thread, thread_id)).seq > seen:
                    return None
            except OrchestratorError:  # a busy store, a worker slow to answer: look again
                pass
            await asyncio.sleep(SETTLE_POLL)
        return None

    async def _read(self, function: Callable[..., Any], *args: Any) -> Any:
        if self.blocking:
            return await asyncio.to_thread(function, *args)
        return function(*args)

    async def _run(
        self,
        thread_id: str,
        action: Action,
        held: contextlib.ExitStack,
        session: ThreadSession,
        graph: Graph,
    ) -> ThreadResult | None:
        try:
            return await action(session, graph, RunOptions())
        except Exception as exc:  # shown on the thread's page; the thread stays as it was left
            self.errors[thread_id] = wording = word(exc)
            if not wording.expected:
                log.exception("thread %s stopped on an unexpected error", thread_id)
            return None
        finally:
            held.close()

    async def close(self) -> None:
        """Interrupt every run (each thread is left resumable) and wait for them to stop."""
        tasks = [t for t in self.tasks.values() if not t.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
