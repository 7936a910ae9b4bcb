"""The runner: the loop around the moderator, where I/O happens.

It decides nothing. It asks `decide` for the next command and carries it out:

    Record(event)  append the event
    RunStep        plan the actor's request from the state (`step.plan_step`, pure), perform it
                   (`step.perform_step`: the call and its outcome: a reply, a failure, "a person
                   must answer") and hand the outcome to `judge`, appending the events it returns
    Idle           stop: the thread completed, suspended, waits, failed or was cancelled

Every event is appended (and so committed) before the state moves on, and the state is always
the fold of the stored events, so a crash at any moment loses at most the step in flight, which
runs again on resume. While it runs, a watcher renews the thread's lease and reads events that
another process appended (a cancel): the step in flight is then stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Callable
from pathlib import Path

from ..core import engine
from ..core.commands import Idle, Record, RunStep
from ..core.events import Event
from ..core.outcomes import Interrupted, Outcome
from ..core.state import ThreadState
from ..spec.models import Graph
from ..store.base import EventStore, Owner, StoreError, ThreadBusy
from ..tools.mcp_client import thread_servers
from .actors import default_actor_for
from .options import ActorFor, RunOptions, ThreadResult
from .step import perform_step, plan_step


class LiveThread:
    """One thread advanced by this process: its store, folded state and sequence number."""

    def __init__(self, graph: Graph, store: EventStore, thread_id: str, options: RunOptions):
        self.graph = graph
        self.store = store
        self.thread_id = thread_id
        self.options = options
        self.owner = Owner.this_process(secrets.token_hex(8))
        self.state = ThreadState()
        self.seq = 0
        self.step_task: asyncio.Future[Outcome] | None = None
        self.catch_up(notify=False)
        self._root: Path | None = None

    def workspace_root(self) -> Path:
        """The thread's workspace, resolved once per advance (not once per step)."""
        if self._root is None:
            self._root = Path(self.state.workspace).resolve()
        return self._root

    def append(self, event: Event) -> None:
        engine.apply(self.state, event)
        try:
            stored = self.store.append(self.thread_id, self.seq + 1, event, self.state.summary())
        except ThreadBusy:
            # Someone else appended first (a cancel): the state is the store's, not ours.
            self.state, self.seq = ThreadState(), 0
            self.catch_up(notify=False)
            raise
        self.seq = stored.seq
        if self.options.on_event is not None:
            self.options.on_event(stored, self.state)

    def catch_up(self, *, notify: bool = True) -> bool:
        """Fold the events appended since we last looked; True if there were any."""
        new = self.store.events(self.thread_id, after=self.seq)
        for stored in new:
            engine.apply(self.state, stored.event)
            self.seq = stored.seq
            if notify and self.options.on_event is not None:
                self.options.on_event(stored, self.state)
        return bool(new)

    def judge(self, outcome: Outcome) -> None:
        for event in engine.judge(self.graph, self.state, outcome):
            self.append(event)

    def result(self) -> ThreadResult:
        return ThreadResult.of(self.thread_id, self.state)

    async def watch(self) -> None:
        """Renew the lease; stop the step in flight when another process ended the thread."""
        renew_every = max(1.0, float(getattr(self.store, "lease_seconds", 30.0)) / 3)
        renewed = time.monotonic()
        while True:
            await asyncio.sleep(self.options.poll_seconds)
            try:
                if time.monotonic() - renewed >= renew_every:
                    self.store.renew(self.thread_id, self.owner)
                    renewed = time.monotonic()
                if self.store.thread(self.thread_id).seq > self.seq:
                    self.catch_up()
            except StoreError:
                continue  # the step's own append meets the same error and reports it
            # Every poll, not only the one that saw the cancel: the step may start after it.
            if self.state.status.ended and self.step_task is not None:
                self.step_task.cancel()


async def advance(
    graph: Graph,
    store: EventStore,
    thread_id: str,
    *,
    actor_for: ActorFor | None = None,
    options: RunOptions | None = None,
    first: Outcome | None = None,
    finish: Callable[[ThreadResult], None] | None = None,
) -> ThreadResult:
    """Advance a thread until it completes, suspends, waits, fails or is cancelled.

    `first` (a resume request or a person's answer) is judged once this process holds the
    thread's lease; `finish` runs on the result while the lease is still held (the session
    commits the thread's work there, so no resume can start in the worktree meanwhile). Raises store.ThreadBusy when another live process holds it,
    core.outcomes.Refused when `first` cannot be taken, and store.StoreError when the store
    fails (the thread is then as its last saved event left it).
    """
    options = options or RunOptions()
    thread = LiveThread(graph, store, thread_id, options)
    store.acquire(thread_id, thread.owner)
    thread.catch_up(notify=False)  # what others appended before we held the lease
    watcher = asyncio.create_task(thread.watch())
    try:
        if first is not None:
            thread.judge(first)
        async with thread_servers():  # the thread's MCP servers stop when it stops here
            await _loop(thread, actor_for or default_actor_for(options))
        if finish is not None:
            finish(thread.result())
    except (asyncio.CancelledError, KeyboardInterrupt):
        # Ctrl-C or a cancelled task: leave the thread resumable (or answerable), then let the
        # interruption through.
        thread.judge(Interrupted())
        raise
    except ThreadBusy:
        if not thread.state.status.ended:
            raise
    finally:
        watcher.cancel()
        # A store that just failed (a full disk) may fail this too; the lease of a process
        # that is gone is taken over anyway, and the first error is the one to report.
        with contextlib.suppress(StoreError):
            store.release(thread_id, thread.owner)
    return thread.result()


async def _loop(thread: LiveThread, actor_for: ActorFor) -> None:
    limits = engine.limits_for(thread.graph, thread.options.max_steps)
    while True:
        command = engine.decide(thread.graph, thread.state, limits)
        match command:
            case Idle():
                return
            case Record():
                thread.append(command.event)
            case RunStep():
                outcome = await _perform(thread, command, actor_for)
                if outcome is not None:
                    thread.judge(outcome)


async def _perform(thread: LiveThread, command: RunStep, actor_for: ActorFor) -> Outcome | None:
    """Call the actor for the step in flight; its outcome, or None if the thread ended meanwhile."""
    role = thread.graph.roles[command.role]  # decide() suspends a step whose role is gone
    plan = plan_step(thread.graph, thread.state, command, thread.options.model)
    actor = actor_for(command.role, role)
    thread.step_task = asyncio.ensure_future(
        perform_step(plan, role, thread.workspace_root(), actor)
    )
    try:
        return await thread.step_task
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if thread.state.status.ended and (task is None or not task.cancelling()):
            return None  # stopped because another process cancelled the thread
        raise
    finally:
        thread.step_task = None
