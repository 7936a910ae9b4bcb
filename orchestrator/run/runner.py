"""The runner: the local executor of the driver (core/driver.py), where I/O happens.

It decides nothing: the driver asks `decide` and `judge`; this module carries the commands out
in this process:

    commit         append the event to the thread's store (committed before the state moves on;
                   a model's StepStarted may overlap its call: `may_defer`)
    act            plan the actor's request from the state (`plan.plan_step`, pure), perform it
                   (`step.perform_step`: the call and its outcome: a reply, a failure, "a person
                   must answer")
    single         the step in flight, run in the thread's own task, stopped when another
                   process cancels the thread
    branches       the branches' tasks: start those not running yet, wait for the first to end
    start_child    a subgraph step's child (docs/format.md section 14): a thread of its own in
    run_child      the same store, advanced by `advance` as any thread, under what the parent's
                   limits leave (the RunChild command)
    idle           stop: the thread completed, suspended, waits, failed or was cancelled

Every event is appended (and so committed) before the state moves on, and the state is always
the fold of the stored events, so a crash at any moment loses at most the step in flight, which
runs again on resume. While it runs, a watcher renews the thread's lease and reads events that
another process appended (a cancel): the step in flight is then stopped.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..core import engine
from ..core.commands import Limits, RunChild, RunStep, limits_for
from ..core.driver import Work, drive
from ..core.driver import judge as judge_outcome
from ..core.events import Event, StepCommitted, StepStarted, ThreadStatus
from ..core.outcomes import Interrupted, Outcome
from ..core.state import ThreadState, ThreadSummary
from ..core.subgraph import child_started
from ..definition.models import END, Graph
from ..store.base import EventStore, Owner, StoredEvent, StoreError, ThreadBusy, ThreadNotFound
from ..tools.boundary import Boundary
from ..tools.boundary import current as current_boundary
from ..tools.mcp_client import thread_servers
from .actors import default_actor_for
from .memory import SessionMemory
from .options import ActorFor, RunOptions, ThreadResult
from .plan import plan_step
from .preflight import InputError, check_inputs
from .step import perform_step, step_workspace


class LiveThread:
    """One thread advanced by this process: its store, folded state and sequence number; the
    driver's executor (core/driver.py) for it."""

    def __init__(
        self,
        graph: Graph,
        store: EventStore,
        thread_id: str,
        options: RunOptions,
        actor_for: ActorFor | None = None,
    ):
        self.graph = graph
        self.store = store
        self.thread_id = thread_id
        self.options = options
        self.limits: Limits = limits_for(graph, options.max_steps, options.max_cost_usd)
        self.actor_for = actor_for or default_actor_for(options)
        self.owner = Owner.this_process(secrets.token_hex(8))
        self.state = ThreadState()
        self.seq = 0  # the last event applied to the state
        self.saved = 0  # the last event known to be committed (or reported, if deferred)
        # The task running the step in flight (the thread's own: `single`), and how many times
        # `stop_step` cancelled it since the step started.
        self.step_task: asyncio.Task[Any] | None = None
        self._stops = 0
        self.branch_tasks: dict[int, asyncio.Future[Outcome | None]] = {}  # by step number
        self._deferred: concurrent.futures.Future[StoredEvent] | None = None
        # A deferred StepStarted not handed to the store yet: (seq, event, summary); see defer.
        self._held: tuple[int, Event, ThreadSummary] | None = None
        self.memory = SessionMemory(graph)  # `memory: session` visits, fed as the state is
        self.roles: list[str] = []  # the roles of the committed steps, in order, as applied
        self.catch_up(notify=False)
        self._root: Path | None = None
        self._boundary: Boundary | None = None
        self._result: tuple[int, ThreadResult] | None = None  # (seq, the result then)
        self._defers: dict[str, bool] = {}  # may_defer per role: the graph is fixed per advance

    def _may_defer(self, event: Event) -> bool:
        """`may_defer`, found once per role and advance (a role's tools and actor are read
        through several properties of the graph's models, at every step otherwise)."""
        if not isinstance(event, StepStarted) or event.branch is not None:
            return False
        known = self._defers.get(event.role)
        if known is None:
            known = self._defers[event.role] = may_defer(self.graph, event)
        return known

    def workspace_root(self) -> Path:
        """The thread's workspace, resolved once per advance (not once per step)."""
        if self._root is None:
            self._root = Path(self.state.workspace).resolve()
        return self._root

    def boundary(self) -> Boundary:
        """The thread's trust boundary, looked up once per advance like its workspace: the
        session enters it around the whole advance, and finding it resolves the workspace's
        path on disk (a `realpath`, a tenth of a step's own cost with an instant model)."""
        if self._boundary is None:
            self._boundary = current_boundary(self.workspace_root())
        return self._boundary

    async def append(self, event: Event) -> None:
        """Apply the event and wait until it is committed. The SQLite store commits it at once,
        on this thread, when no other thread is writing (`store/writer.py`): the future is then
        done already and `_committed` does not go through the event loop. A held StepStarted
        (`defer`) is committed first, in the same transaction."""
        self._apply(event)
        self.seq += 1
        before = self._take_held()
        pending = self.store.append_future(
            self.thread_id, self.seq, event, self.state.summary(), before
        )
        await self.flush()  # a deferred StepStarted whose commit is under way
        self._stored(await self._committed(pending))

    def defer(self, event: Event) -> None:
        """Apply the event and hold it back from the store for a moment, without waiting.

        Only for the StepStarted of a step whose actor changes nothing outside its reply
        (`may_defer`). It is committed as soon as the step waits for its actor (`release`:
        the commit then overlaps the model's call), or, when the actor answers without ever
        waiting, in one transaction with the step's result, before it. Either way the step's
        result is committed after it, never before, and if the process dies first the step runs
        again on resume, as any step in flight does. Reported to `on_event` now; if its commit
        fails, the step is stopped and the failure raised."""
        self._apply(event)
        self.seq += 1
        self._held = (self.seq, event, self.state.summary())
        self._stored(StoredEvent(self.seq, time.time(), event))

    def holding(self) -> bool:
        return self._held is not None

    def drop_held(self) -> None:
        """An error ended the advance with a step's start still held: it is not saved, as if
        the process had died there (`may_defer`: the step runs again on resume)."""
        self._held = None

    def _take_held(self) -> tuple[tuple[Event, ThreadSummary], ...]:
        """The held StepStarted, to be written just before event `seq` (taken: held no more)."""
        held, self._held = self._held, None
        if held is None:
            return ()
        seq, event, summary = held
        assert seq == self.seq - 1, (seq, self.seq)  # nothing else was applied since
        return ((event, summary),)

    def release(self) -> None:
        """Commit the held StepStarted now, without waiting (unless the step's result took it
        along already: `append`). Called once the step has run up to its first wait: the actor
        is then waiting for its model."""
        if self._held is None:
            return
        seq, event, summary = self._held
        self._held = None
        pending = self.store.append_future(self.thread_id, seq, event, summary)
        if pending.done() and pending.exception() is None:
            return  # committed at once: nothing left to wait for
        self._deferred = pending
        if pending.done():
            self._check_deferred(pending)
        else:
            loop = asyncio.get_running_loop()
            pending.add_done_callback(lambda f: loop.call_soon_threadsafe(self._check_deferred, f))

    def _check_deferred(self, pending: concurrent.futures.Future[StoredEvent]) -> None:
        """The deferred event failed: stop the step in flight (`flush` raises why)."""
        if pending is self._deferred and pending.exception() is not None:
            self.stop_step()

    async def flush(self) -> None:
        """Commit a held event; wait for a deferred event's commit; raise its failure."""
        self.release()
        pending, self._deferred = self._deferred, None
        if pending is not None:
            await self._committed(pending)

    async def _committed(self, pending: concurrent.futures.Future[StoredEvent]) -> StoredEvent:
        try:
            try:
                # An in-memory store is done at once: no need to go through the loop.
                return pending.result() if pending.done() else await asyncio.wrap_future(pending)
            except asyncio.CancelledError:
                # Interrupted while the write was under way: it is carried out all the same,
                # so learn its fate (a few ms at most) before letting the interruption through.
                concurrent.futures.wait([pending])
                pending.result()
                raise
        except ThreadBusy:
            # Someone else appended first (a cancel): the state is the store's, not ours.
            self._deferred = self._held = None
            self.state, self.seq, self.saved = ThreadState(), 0, 0
            self.memory = SessionMemory(self.graph)
            self.roles = []
            self.catch_up(notify=False)
            raise

    def _stored(self, stored: StoredEvent) -> None:
        self.saved = stored.seq
        if self.options.on_event is not None:
            self.options.on_event(stored, self.state)

    def deferred_failed(self) -> bool:
        pending = self._deferred
        return pending is not None and pending.done() and pending.exception() is not None

    def _apply(self, event: Event) -> None:
        engine.apply(self.state, event)
        self.memory.observe(event)
        if isinstance(event, StepCommitted):
            self.roles.append(event.role)

    def catch_up(self, *, notify: bool = True) -> bool:
        """Fold the events appended since we last looked; True if there were any."""
        new = self.store.events(self.thread_id, after=self.seq)
        for stored in new:
            self._apply(stored.event)
            self.seq = self.saved = stored.seq
            if notify and self.options.on_event is not None:
                self.options.on_event(stored, self.state)
        return bool(new)

    def result(self) -> ThreadResult:
        """The thread's result now, once per state; its path is the roles of the committed
        steps, kept as the events are applied (the same as the store's `committed_roles`,
        which each result read back from SQLite before: a query per thread, for nothing)."""
        if self._result is None or self._result[0] != self.seq:
            roles = list(self.roles)
            path = [*roles, END] if self.state.ending is not None else roles
            self._result = (self.seq, ThreadResult.of(self.thread_id, self.state, path))
        return self._result[1]

    async def watch(self) -> None:
        """Renew the lease; stop the step in flight when another process ended the thread."""
        renew_every = max(1.0, float(getattr(self.store, "lease_seconds", 30.0)) / 3)
        renewed = time.monotonic()
        while True:
            await asyncio.sleep(self.options.poll_seconds)
            try:
                if time.monotonic() - renewed >= renew_every:
                    # On a worker thread: the store's writer may be busy with other threads.
                    await asyncio.to_thread(self.store.renew, self.thread_id, self.owner)
                    renewed = time.monotonic()
                # Only while none of our own writes is under way: those would look new.
                idle = self._deferred is None and self._held is None and self.saved == self.seq
                if idle and self.store.thread(self.thread_id).seq > self.seq:
                    self.catch_up()
            except StoreError:
                continue  # the step's own append meets the same error and reports it
            # Every poll, not only the one that saw the cancel: the step may start after it.
            if self.state.status.ended:
                self.stop_steps()

    def stop_step(self) -> None:
        """Stop the single step in flight, if any: cancel the task running it, counted, so that
        `single` tells this cancel apart from one of the task itself and takes it back."""
        if self.step_task is not None:
            self._stops += 1
            self.step_task.cancel()

    def stop_steps(self) -> None:
        """Cancel every step in flight in this process."""
        self.stop_step()
        for task in self.branch_tasks.values():
            task.cancel()


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
    thread = LocalExecutor(graph, store, thread_id, options, actor_for)
    store.acquire(thread_id, thread.owner)
    thread.catch_up(notify=False)  # what others appended before we held the lease
    watcher = asyncio.create_task(thread.watch())
    try:
        if first is not None:
            await thread.judge(first)
        async with thread_servers():  # the thread's MCP servers stop when it stops here
            await drive(thread)
        if finish is not None:
            finish(thread.result())
    except (asyncio.CancelledError, KeyboardInterrupt):
        # Ctrl-C or a cancelled task: leave the thread resumable (or answerable), then let the
        # interruption through.
        await thread.judge(Interrupted())
        raise
    except ThreadBusy:
        if not thread.state.status.ended:
            raise
    finally:
        watcher.cancel()
        thread.stop_steps()
        thread.drop_held()
        # A store that just failed (a full disk) may fail this too; the lease of a process
        # that is gone is taken over anyway, and the first error is the one to report.
        with contextlib.suppress(StoreError):
            store.release(thread_id, thread.owner)
    return thread.result()


def may_defer(graph: Graph, event: Event) -> bool:
    """May this event's commit overlap the step it starts? Only a StepStarted whose role asks a
    model and changes nothing outside its reply (no `edit` or `shell` tool, not a command or a
    person): if the process dies before that commit, the step runs again on resume, as any step
    in flight does, and nothing it did is lost. Every other event is committed before the
    runner goes on, and a step's result always after its StepStarted."""
    if not isinstance(event, StepStarted) or event.branch is not None:
        return False  # branches: several start at once, each committed before it runs
    role = graph.roles.get(event.role)
    return (
        role is not None
        and role.is_model  # not a subgraph role: its child thread is made once its step is saved
        and not role.edits_files  # edit, shell, Python and MCP tools may change anything
    )


class LocalExecutor(LiveThread):
    """The driver's commands carried out in this process (see the module's docstring)."""

    async def judge(self, outcome: Outcome) -> None:
        await judge_outcome(self, outcome)

    async def commit(self, event: Event) -> None:
        if self._may_defer(event):
            self.defer(event)
        else:
            await self.append(event)

    async def idle(self, status: ThreadStatus) -> bool:
        await self.flush()
        return False  # a thread that waits or suspended is continued by a later request

    async def turned(self) -> None:
        return None

    async def act(self, command: RunStep) -> Outcome | None:
        role = self.graph.roles[command.role]  # decide() suspends a step whose role is gone
        plan = plan_step(self.graph, self.state, command, self.memory, self.options.model)
        actor = self.actor_for(command.role, role)
        root = self.workspace_root()
        return await perform_step(
            plan, role, root, actor, self.options.on_progress, self.boundary()
        )

    async def single(self, step: int, work: Work) -> Outcome | None:
        """The step in flight; None if the thread ended meanwhile.

        Run in the thread's own task, not a task of its own: that would pass through the event
        loop twice per step (to start it, and to hand its result back), and on a busy loop each
        pass waits for every other ready task, while the thread's connection sits idle in the
        SDK's pool, probed at every other request (docs/performance.md, issue 23). `stop_step`
        cancels this task; its cancels are counted and taken back (`uncancel`) here, so that one
        of the task itself (Ctrl-C, a cancelled batch) still goes through."""
        if self.deferred_failed():
            await self.flush()  # raises why: the step's StepStarted could not be saved
        task = asyncio.current_task()
        assert task is not None  # the driver runs in a task
        self.step_task, self._stops = task, 0
        if self.holding():
            # Runs once the step first waits: the step's StepStarted is committed while its
            # actor waits, or, if the actor answered at once, with its result (`defer`).
            asyncio.get_running_loop().call_soon(self.release)
        try:
            return await work()
        except asyncio.CancelledError:
            self._end_step(task)
            if self.deferred_failed():
                await self.flush()  # raises why: the step's own StepStarted could not be saved
            if self.state.status.ended and not task.cancelling():
                return None  # stopped because another process cancelled the thread
            raise
        finally:
            self._end_step(task)

    def _end_step(self, task: asyncio.Task[Any]) -> None:
        """No step in flight any more: take back the cancels `stop_step` made (even one the
        step swallowed), so that the task is left as cancelled as it was by anyone else."""
        self.step_task = None
        for _ in range(self._stops):
            task.uncancel()
        self._stops = 0

    async def branches(self, work: Mapping[int, Work]) -> list[Outcome]:
        tasks = self.branch_tasks
        for step, run in work.items():
            if step not in tasks:
                tasks[step] = asyncio.ensure_future(run())
        await asyncio.wait(list(tasks.values()), return_when=asyncio.FIRST_COMPLETED)
        outcomes = []
        for step in sorted(s for s, task in tasks.items() if task.done()):
            task = tasks.pop(step)
            if task.cancelled():
                if self.state.status.ended:
                    continue  # stopped because another process cancelled the thread
                raise asyncio.CancelledError
            outcome = task.result()
            if outcome is not None:
                outcomes.append(outcome)
        return outcomes

    # ------------------------------------------------------------------ children (S2-S4)

    async def child_state(self, child: str) -> ThreadState | None:
        try:
            row = self.store.thread(child)
        except ThreadNotFound:
            return None
        if row.id != child:  # a store also matches ids by prefix
            return None
        return engine.fold([s.event for s in self.store.events(child)])

    async def start_child(self, command: RunChild, graph: Graph) -> str | None:
        try:
            workspace = step_workspace(self.workspace_root(), command.location)
        except OSError as exc:
            return f"cannot make the step's folder: {exc}"
        if workspace is None:
            return "the step's location is outside the workspace"
        try:
            check_inputs(graph, command.inputs)
        except InputError as exc:
            return f"the inputs of graph '{graph.name}': {exc}"
        started = child_started(self.state, command, graph, str(workspace))
        state = engine.apply(ThreadState(), started)
        self.store.create(
            started,
            state.summary(),
            graph_path=str(graph.path or ""),
            snapshot=graph.model_dump(mode="json"),
        )
        return None

    async def run_child(
        self, command: RunChild, graph: Graph, first: Outcome | None
    ) -> tuple[ThreadState, float]:
        on_child = self.options.on_child_event
        shown = functools.partial(on_child, command.child) if on_child is not None else None
        options = replace(
            self.options,
            max_steps=command.max_steps,
            max_cost_usd=command.max_cost_usd,
            on_event=shown,
        )
        started = time.monotonic()
        await advance(
            graph, self.store, command.child, actor_for=self.actor_for, options=options, first=first
        )
        state = await self.child_state(command.child)
        assert state is not None  # made by start_child, never deleted
        return state, time.monotonic() - started
