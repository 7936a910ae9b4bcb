"""`AsyncOrchestrator`: the client of docs/format.md section 10b, awaitable (docs/api.md).

One object owns a store (or a Temporal connection) and every thread operation. It holds the
session contract (run/contract.py) and never asks which session it has: a local store and
Temporal are driven by the same lines.

- Owning: a store it opened (a folder, `$ORCHESTRATOR_HOME` or `./.orchestrator/`) is closed by
  `aclose()` / `async with`, which ends its writer thread and its file handles; a store object
  passed in (`MemoryStore()`) stays the caller's. A Temporal client it connected is let go of.
- Advancing: `run`, `answer` and `resume` return when the thread stops running (it completes,
  suspends, waits for a person, fails or is cancelled), as `orchestrator run` does; with
  `wait=False`, `run` returns once the thread exists and advances it in the background of this
  client. Closing the client interrupts what it still advances: the thread is left resumable,
  as after Ctrl-C.
- Reading: `get` (the log folded: final, path, question), `list` (summary rows only),
  `events(id, follow=True)`: the thread's typed events (`StoredEvent`: seq, at, event) as they
  are appended, until the thread has ended (break out of the loop to stop sooner).
- Errors are the session's own, raised as they are: `GraphError`, `InputError`, `Refused`
  (`.errors`), `SessionError` (an unknown id, a broken graph), `StoreError`, `ThreadBusy`.
- Options are explicit keywords; a `RunOptions` passed in is copied, never changed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections.abc import AsyncGenerator, Callable, Mapping
from pathlib import Path
from typing import Any

from ..actors.recording import Recording, load_recording
from ..core import engine
from ..core.events import ThreadStatus
from ..core.titles import ThreadQuery
from ..definition.loader import load_graph
from ..definition.models import Graph
from ..extract import format_reply
from ..run.contract import CANCELLED_BY_USER, ThreadSession
from ..run.errors import SessionError
from ..run.options import ActorFor, RunOptions, ThreadResult
from ..run.session import Session, open_store
from ..store.base import EventStore, StoredEvent
from .thread import Thread, of_log, of_result, of_row

GraphArg = Graph | str | os.PathLike[str]
StoreArg = EventStore | str | os.PathLike[str] | None
POLL_MIN, POLL_MAX = 0.05, 0.5  # seconds between reads while following a thread's events

# Notes for the person (a dirty checkout, a changed graph) go to this logger by default.
log = logging.getLogger("orchestrator")


def open_session(
    store: StoreArg,
    temporal: str | None,
    task_queue: str | None,
    notify: Callable[[str], None],
) -> tuple[ThreadSession, bool]:
    """The session, and whether closing the client closes it (what the client opened)."""
    if temporal is not None:
        if store is not None:
            raise SessionError("store= and temporal= name two places for threads: give one")
        try:
            # deferred: temporalio is an optional extra, loaded only for threads on Temporal
            from ..temporal import DEFAULT_TASK_QUEUE
            from ..temporal.session import TemporalSession
        except ImportError:
            raise SessionError(
                "threads on Temporal need the extra: pip install 'orchestrator[temporal]'"
            ) from None
        queue = task_queue or DEFAULT_TASK_QUEUE
        return TemporalSession(temporal, task_queue=queue, notify=notify), True
    if task_queue is not None:
        raise SessionError("task_queue= is for threads on Temporal: add temporal=ADDRESS")
    owned = store is None or isinstance(store, str | os.PathLike)
    return Session(open_store(store), notify=notify), owned


def copied(options: RunOptions | None, model: str | None, max_steps: int | None) -> RunOptions:
    """The caller's options with `model` and `max_steps` laid over them, in a copy."""
    options = options or RunOptions()
    return dataclasses.replace(
        options, model=model or options.model, max_steps=max_steps or options.max_steps
    )


class AsyncOrchestrator:
    """Threads in a store (`store=`) or on Temporal (`temporal="host:7233"`); see the module."""

    def __init__(
        self,
        store: StoreArg = None,
        *,
        temporal: str | None = None,
        task_queue: str | None = None,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        self._session, self._owned = open_session(
            store, temporal, task_queue, notify or log.warning
        )
        self._background: set[asyncio.Task[ThreadResult]] = set()
        self._closed = False

    @property
    def session(self) -> ThreadSession:
        """The session underneath (run/contract.py), for what the client does not offer."""
        return self._session

    async def __aenter__(self) -> AsyncOrchestrator:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Interrupt the runs advanced in the background, then close what was opened."""
        if self._closed:
            return
        self._closed = True
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        if self._owned:
            self._session.close()

    # ------------------------------------------------------------------ a thread's life

    async def run(
        self,
        graph: GraphArg,
        inputs: Mapping[str, Any] | None = None,
        *,
        workspace: str | os.PathLike[str] | None = None,
        in_place: bool = False,
        model: str | None = None,
        max_steps: int | None = None,
        replay: Recording | str | os.PathLike[str] | None = None,
        actor_for: ActorFor | None = None,
        options: RunOptions | None = None,
        wait: bool = True,
        title: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> Thread:
        """Start a thread of `graph` (a Graph, a file, or a graph name) and advance it.

        `inputs` fit the graph's `inputs` schema; `workspace` is the folder it works in (the
        current one by default; a git worktree of its own there unless `in_place`); `model` and
        `max_steps` as `--model` and `--max-steps`; `replay` a recording whose replies stand in
        for the actors; `actor_for(name, role)` who plays each role (local threads); `options`
        callbacks and timeouts (copied). With `wait=False` it returns at once, `running`.
        `title` says what the thread is for (default: the first line of the task or first
        input) and `labels` are `key: value` pairs to find it by (`list(labels=...)`).
        """
        loaded = _graph(graph)
        recording = replay if isinstance(replay, Recording | None) else load_recording(Path(replay))
        run_options = copied(options, model, max_steps)
        folder = self._session.preflight(
            loaded,
            workspace=workspace,
            replay=recording is not None or actor_for is not None,
            model=run_options.model,
        )
        values = dict(inputs or {})
        if recording is not None and not values:
            values = dict(recording.inputs)
        started = await self._session.astart(
            loaded,
            values,
            folder=folder,
            in_place=in_place,
            replay=recording is not None,
            options=run_options,
            title=title,
            labels=labels,
        )
        advancing = self._session.advance(
            loaded, started.thread_id, options=run_options, actor_for=actor_for, replay=recording
        )
        if not wait:
            task = asyncio.ensure_future(advancing)
            self._background.add(task)
            task.add_done_callback(self._settled)
            row = await self._session.athread(started.thread_id)
            return dataclasses.replace(of_row(row), state=ThreadStatus.RUNNING)
        return await self._result(loaded, await advancing)

    async def answer(
        self,
        thread_id: str,
        *,
        status: str | None = None,
        fields: Mapping[str, Any] | None = None,
        body: str = "",
        text: str | None = None,
        step: int | None = None,
        graph: GraphArg | None = None,
        actor_for: ActorFor | None = None,
        options: RunOptions | None = None,
    ) -> Thread:
        """Answer for the person the thread waits for (`status`, `fields`, `body`, or the whole
        reply as `text`; `step`: which one, when several branches wait), then advance it. An
        answer the role's contract refuses raises `Refused` with `.errors`; nothing is
        recorded."""
        row = await self._session.athread(thread_id)
        loaded = _graph(graph) if graph is not None else await self._session.agraph_for(row)
        reply = text if text is not None else format_reply(status, dict(fields or {}), body)
        result = await self._session.answer(
            loaded,
            row.id,
            reply,
            step=step,
            options=copied(options, None, None),
            actor_for=actor_for,
        )
        return await self._result(loaded, result)

    async def resume(
        self,
        thread_id: str,
        *,
        message: str | None = None,
        graph: GraphArg | None = None,
        model: str | None = None,
        max_steps: int | None = None,
        actor_for: ActorFor | None = None,
        options: RunOptions | None = None,
    ) -> Thread:
        """Continue a suspended, interrupted or completed thread, `message` added to its
        pending prompt; `graph` to continue with a changed graph."""
        row = await self._session.athread(thread_id)
        loaded = _graph(graph) if graph is not None else await self._session.agraph_for(row)
        result = await self._session.resume(
            loaded,
            row.id,
            message=message,
            options=copied(options, model, max_steps),
            actor_for=actor_for,
        )
        return await self._result(loaded, result)

    async def fork(
        self,
        thread_id: str,
        *,
        at: int | None = None,
        status: str | None = None,
        fields: Mapping[str, Any] | None = None,
        body: str = "",
        text: str | None = None,
        message: str | None = None,
        reuse: bool = False,
        title: str | None = None,
        graph: GraphArg | None = None,
        model: str | None = None,
        max_steps: int | None = None,
        actor_for: ActorFor | None = None,
        options: RunOptions | None = None,
    ) -> Thread:
        """Fork the thread at step `at` (default: after its last committed step) and advance
        the fork (docs/format.md section 20). A reply for step `at` (`status`, `fields`,
        `body`, or the whole text) stands as its output, checked like a person's answer;
        without one the step is decided again, `message` added to its prompt. `reuse` takes
        the original's replies until a step differs. A refused fork raises `Refused` (with
        `.errors` for a reply the contract refuses); nothing is made."""
        row = await self._session.athread(thread_id)
        loaded = _graph(graph) if graph is not None else await self._session.agraph_for(row)
        reply = text
        if reply is None and (status is not None or fields or body):
            reply = format_reply(status, dict(fields or {}), body)
        new_id = await self._session.afork(
            row.id,
            at=at,
            reply=reply,
            message=message,
            reuse=reuse,
            title=title,
            graph=loaded,
        )
        result = await self._session.advance(
            loaded, new_id, options=copied(options, model, max_steps), actor_for=actor_for
        )
        origin = {"thread": row.id, "step": at if at is not None else row.steps + 1}
        return dataclasses.replace(await self._result(loaded, result), forked_from=origin)

    async def cancel(self, thread_id: str, *, reason: str = CANCELLED_BY_USER) -> Thread:
        """Cancel the thread for good; a process running it stops its step in flight."""
        row = await self._session.acancel(thread_id, reason)
        return await self.get(row.id)

    # ------------------------------------------------------------------ reading

    async def get(self, thread_id: str) -> Thread:
        """The thread (an id, or a unique prefix or suffix of one), its log folded."""
        row = await self._session.athread(thread_id)
        events = await self._session.aevents(row.id)
        question = None
        if events and engine.fold([s.event for s in events]).status == ThreadStatus.WAITING:
            question = await self._session.aquestion(row.id)
        return of_log(row, events, question)

    async def list(
        self,
        *,
        state: str | None = None,
        graph: str | None = None,
        labels: Mapping[str, str] | None = None,
        search: str | None = None,
    ) -> list[Thread]:
        """The threads, oldest first, from their summary rows (see `Thread`): those in `state`,
        of `graph`, with every one of `labels`, whose title or inputs hold every word of
        `search` (as `threads list`)."""
        query = ThreadQuery(state, graph, dict(labels or {}), search)
        return [of_row(r) for r in await self._session.athreads(state, query)]

    async def events(
        self, thread_id: str, *, after: int = 0, follow: bool = False
    ) -> AsyncGenerator[StoredEvent, None]:
        """The thread's events numbered above `after`; with `follow`, then each one as it is
        appended, until the thread has ended."""
        seq, pause = after, POLL_MIN
        while True:
            row = await self._session.athread(thread_id)  # read before the events: see below
            new = await self._session.aevents(row.id, seq)
            for stored in new:
                seq = stored.seq
                yield stored
            # An end the row shows was appended before the events were read: all are yielded.
            if not follow or (not new and row.state.ended):
                return
            pause = POLL_MIN if new else min(POLL_MAX, pause * 2)
            await asyncio.sleep(pause)

    def _settled(self, task: asyncio.Task[ThreadResult]) -> None:
        """A background run ended: its thread is as the log says (`get`, `events`); a failure
        nobody awaits is said in the log rather than lost."""
        self._background.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            log.warning("a thread run in the background stopped: %s", error)

    async def _result(self, graph: Graph, result: ThreadResult) -> Thread:
        question = None
        if result.state == ThreadStatus.WAITING:
            question = await self._session.aquestion(result.thread_id, graph)
        row = await self._session.athread(result.thread_id)  # its title and labels
        return of_result(result, graph.name, question, row)


def _graph(graph: GraphArg) -> Graph:
    return graph if isinstance(graph, Graph) else load_graph(graph)
