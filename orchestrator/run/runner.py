"""The runner: the loop around the moderator, where I/O happens.

It decides nothing. It asks `decide` for the next command and carries it out:

    Record(event)  append the event
    RunStep        build the actor's request, call the actor, and hand its outcome (a reply, a
                   failure, "a person must answer") to `judge`, appending the events it returns
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
from pathlib import Path

from ..actors.base import ActorError, ActReply, ActRequest, Attempt, HistoryItem, HumanNeeded, Visit
from ..core import context, engine
from ..core.commands import Idle, Record, RunStep
from ..core.events import Event, SuspendKind
from ..core.outcomes import (
    ActorFailed,
    Interrupted,
    NeedsPerson,
    Outcome,
    PreconditionFailed,
    Replied,
)
from ..core.state import ThreadState
from ..spec.models import Graph
from ..store.base import EventStore, Owner, StoreError, ThreadBusy
from .actors import default_actor_for, model_settings
from .options import ActorFor, RunOptions, ThreadResult
from .preconditions import afailing


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
        self.step_task: asyncio.Future[ActReply] | None = None
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
) -> ThreadResult:
    """Advance a thread until it completes, suspends, waits, fails or is cancelled.

    `first` (a resume request or a person's answer) is judged once this process holds the
    thread's lease. Raises store.ThreadBusy when another live process holds it,
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
        await _loop(thread, actor_for or default_actor_for(options))
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
    graph, state = thread.graph, thread.state
    role = graph.roles[command.role]  # decide() suspends a step whose role is gone
    try:
        workspace = _step_workspace(thread.workspace_root(), command.location)
    except OSError as exc:
        return ActorFailed(
            command.step,
            f"cannot make the step's folder '{command.location}': {exc.strerror or exc}",
            SuspendKind.GRAPH,
        )
    if workspace is None:
        return ActorFailed(
            command.step,
            f"location '{command.location}' is outside the workspace",
            SuspendKind.GRAPH,
        )
    failures = await afailing(role.requires, workspace)
    if failures:
        return PreconditionFailed(command.step, tuple(failures))
    if thread.state.status.ended:  # cancelled from elsewhere during the checks: start nothing
        return None
    settings = model_settings(graph, role, thread.options.model)
    request = ActRequest(
        thread_id=thread.thread_id,
        step=command.step,
        role_name=command.role,
        role=role,
        prompt=command.prompt,
        inputs=dict(state.inputs),
        history=tuple(
            HistoryItem(s.step, s.role, s.status, s.frontmatter, s.body)
            for s in context.history_for(state, command.role)
        ),
        previous_visits=tuple(
            Visit(s.message, s.reply) for s in context.previous_visits(state, command.role)
        )
        if role.memory == "session"
        else (),
        attempts=tuple(Attempt(reply, errors) for reply, errors in command.attempts),
        workspace=workspace,
        model=settings.model,
        max_tokens=settings.max_tokens,
        temperature=settings.temperature,
        graph_name=graph.name,
    )
    actor = actor_for(command.role, role)
    started = time.monotonic()
    thread.step_task = asyncio.ensure_future(actor.play(request))
    try:
        reply = await thread.step_task
    except HumanNeeded:
        return NeedsPerson(command.step)
    except ActorError as exc:
        return ActorFailed(
            command.step,
            exc.message,
            exc.kind,
            usage=exc.usage.to_dict() if any(exc.usage.to_dict().values()) else {},
            cost_usd=exc.cost_usd,
        )
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if thread.state.status.ended and (task is None or not task.cancelling()):
            return None  # stopped because another process cancelled the thread
        raise
    except Exception as exc:  # a bug in an actor: the thread suspends, it does not crash
        return ActorFailed(
            command.step,
            f"the {getattr(actor, 'kind', 'actor')} actor failed: {type(exc).__name__}: {exc}",
            SuspendKind.ACTOR,
        )
    finally:
        thread.step_task = None
    return Replied(
        command.step,
        reply.text,
        message=reply.message,
        usage=reply.usage.to_dict(),
        cost_usd=reply.cost_usd,
        model=reply.model,
        tool_calls=reply.tool_calls,
        duration_s=round(time.monotonic() - started, 3),
        actor=getattr(actor, "kind", type(actor).__name__),
    )


def _step_workspace(root: Path, location: str | None) -> Path | None:
    if not location:
        return root
    target = (root / location).resolve()
    if target != root and root not in target.parents:
        return None
    target.mkdir(parents=True, exist_ok=True)
    return target
