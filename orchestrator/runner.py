"""The runner: the loop around the moderator, where I/O happens.

    decide(state) -> StartStep  : append StepStarted
                  -> RunStep    : ask the role's actor; extract and validate the reply;
                                  invalid -> append AttemptRejected and ask again (the repair
                                  loop, up to the role's max_repairs), then suspend;
                                  $SUSPEND -> append ThreadSuspended; valid -> StepCommitted
                  -> Finish     : append ThreadCompleted
                  -> Suspend    : append ThreadSuspended
Every event is appended (and so committed) before the state moves on, and the state is always
the fold of the stored events, so a crash at any moment loses at most the step in flight, which
runs again on resume.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import engine
from .actors.base import (
    ActorError,
    ActReply,
    ActRequest,
    Attempt,
    HistoryItem,
    HumanNeeded,
    Usage,
    Visit,
)
from .engine import (
    AttemptRejected,
    Event,
    Finish,
    HumanWaiting,
    Idle,
    RunStep,
    StartStep,
    StepCommitted,
    StepStarted,
    Suspend,
    ThreadCompleted,
    ThreadResumed,
    ThreadStarted,
    ThreadState,
    ThreadSuspended,
)
from .ids import new_thread_id
from .spec.models import SUSPEND, CommandActor, Graph, Role
from .store.base import EventStore, Owner, StoredEvent

ActorFor = Callable[[str, Role], Any]  # (role name, role) -> Actor
OnEvent = Callable[[StoredEvent, ThreadState], None]


class InputError(ValueError):
    """The thread's inputs do not satisfy the graph's `inputs` schema."""


@dataclass
class RunOptions:
    max_steps: int | None = None
    model: str | None = None  # --model: overrides every role's model
    on_event: OnEvent | None = None
    max_retries: int = 2  # the provider SDK's own retries
    timeout: float = 600.0  # seconds per provider call
    interactive: bool = False  # a human role may ask on this terminal


@dataclass
class ThreadResult:
    thread_id: str
    state: str
    final: str | None
    reason: str | None
    steps: int
    cost_usd: float
    path: list[str] = field(default_factory=list)
    kind: str | None = None  # why it suspended: role, repairs, limit, rate-limit, provider, ...

    def to_dict(self) -> dict[str, Any]:
        return {
            "thread": self.thread_id,
            "state": self.state,
            "final": self.final,
            "reason": self.reason,
            "steps": self.steps,
            "cost_usd": round(self.cost_usd, 6),
        }


# --------------------------------------------------------------------------- inputs


def check_inputs(graph: Graph, inputs: dict[str, Any]) -> None:
    """Validate the thread's inputs against the graph's input schema. Raises InputError."""
    from jsonschema import Draft202012Validator

    schema = graph.input_schema
    errors = sorted(Draft202012Validator(schema).iter_errors(inputs), key=lambda e: list(e.path))
    if errors:
        lines = []
        for err in errors:
            where = ".".join(str(p) for p in err.path)
            lines.append(f"input '{where}': {err.message}" if where else err.message)
        declared = ", ".join(sorted((schema.get("properties") or {}).keys())) or "none"
        raise InputError("; ".join(lines) + f" (declared inputs: {declared})")


# --------------------------------------------------------------------------- actors


def default_actor_for(options: RunOptions) -> ActorFor:
    """Who plays each role when nothing else is said: the role's own `actor:` setting."""
    shared: dict[str, Any] = {}

    def actor_for(name: str, role: Role) -> Any:
        if isinstance(role.actor, CommandActor):
            from .actors.command import CommandProcessActor

            return CommandProcessActor(role.actor.command, timeout=role.actor.timeout)
        if role.actor == "human":
            from .actors.human import HumanActor

            return HumanActor(interactive=options.interactive)
        if "anthropic" not in shared:
            from .actors.anthropic import AnthropicActor

            shared["anthropic"] = AnthropicActor(
                max_retries=options.max_retries, timeout=options.timeout
            )
        return shared["anthropic"]

    return actor_for


def resolve_model(graph: Graph, role: Role, override: str | None) -> str | None:
    """--model, then the role's model, then the graph's defaults, then ORCHESTRATOR_MODEL."""
    return override or role.model or graph.defaults.model or os.environ.get("ORCHESTRATOR_MODEL")


# --------------------------------------------------------------------------- the loop


class Thread:
    """One thread being advanced by this process: its store, state and sequence number."""

    def __init__(self, graph: Graph, store: EventStore, thread_id: str, options: RunOptions):
        self.graph = graph
        self.store = store
        self.thread_id = thread_id
        self.options = options
        self.owner = Owner.this_process(secrets.token_hex(8))
        self.state = ThreadState()
        self.seq = 0
        for stored in store.events(thread_id):
            engine.apply(self.state, stored.event)
            self.seq = stored.seq
        self._root: Path | None = None

    def workspace_root(self) -> Path:
        """The thread's workspace, resolved once per advance (not once per step)."""
        if self._root is None:
            self._root = Path(self.state.workspace).resolve()
        return self._root

    def append(self, event: Event) -> None:
        stored = self.store.append(self.thread_id, self.seq + 1, event)
        self.seq = stored.seq
        engine.apply(self.state, event)
        if self.options.on_event is not None:
            self.options.on_event(stored, self.state)

    def result(self) -> ThreadResult:
        s = self.state
        return ThreadResult(
            self.thread_id,
            s.status,
            s.final,
            s.reason,
            len(s.steps),
            s.cost_usd,
            s.path,
            s.suspend_kind,
        )


def start_thread(
    graph: Graph,
    inputs: dict[str, Any],
    store: EventStore,
    *,
    workspace: str | Path | None = None,
    thread_id: str | None = None,
) -> str:
    """Create a thread (validating its inputs) and append ThreadStarted. Returns its id."""
    check_inputs(graph, inputs)
    thread_id = thread_id or new_thread_id()
    started = ThreadStarted(
        thread_id=thread_id,
        graph=graph.name,
        graph_hash=graph.hash,
        inputs=dict(inputs),
        workspace=str(Path(workspace or Path.cwd()).resolve()),
    )
    store.create(started, graph_path=str(graph.path or ""), snapshot=graph.model_dump(mode="json"))
    return thread_id


async def advance(
    graph: Graph,
    store: EventStore,
    thread_id: str,
    *,
    actor_for: ActorFor | None = None,
    options: RunOptions | None = None,
    resume: bool = False,
    message: str | None = None,
) -> ThreadResult:
    """Advance a thread until it completes, suspends, waits, or fails.

    With `resume`, a suspended, waiting, completed or interrupted thread continues (appending
    ThreadResumed). Raises store.ThreadBusy when another live process holds the thread.
    """
    options = options or RunOptions()
    thread = Thread(graph, store, thread_id, options)
    store.acquire(thread_id, thread.owner)
    heartbeat = asyncio.create_task(_heartbeat(store, thread))
    try:
        if resume:
            _resume(thread, message)
        await _loop(thread, actor_for or default_actor_for(options))
    except asyncio.CancelledError:
        # Ctrl-C or a cancelled task: leave the thread resumable, then let the cancel through.
        if thread.state.status == "running":
            thread.append(
                ThreadSuspended("interrupted by the user; resume to continue", "interrupted")
            )
        raise
    finally:
        heartbeat.cancel()
        store.release(thread_id, thread.owner)
    return thread.result()


def _resume(thread: Thread, message: str | None) -> None:
    state = thread.state
    if state.status in ("failed", "cancelled"):
        raise ResumeError(f"thread {thread.thread_id} is {state.status} and cannot be resumed")
    if state.status == "completed" and thread.graph.edge("$START", "resume") is None:
        raise ResumeError(
            f"thread {thread.thread_id} is completed and its graph has no `$START.resume` edge"
        )
    if state.status == "waiting":
        raise ResumeError(
            f"thread {thread.thread_id} waits for a person: answer it with "
            f"`orchestrator threads answer {thread.thread_id} --status ...`"
        )
    interrupted = state.status == "running"  # the last process died without suspending
    thread.append(ThreadResumed(message=message, interrupted=interrupted))


class ResumeError(Exception):
    pass


async def _heartbeat(store: EventStore, thread: Thread) -> None:
    interval = max(1.0, float(getattr(store, "lease_seconds", 30.0)) / 3)
    while True:
        await asyncio.sleep(interval)
        store.renew(thread.thread_id, thread.owner)


async def _loop(thread: Thread, actor_for: ActorFor) -> None:
    limits = engine.limits_for(thread.graph, thread.options.max_steps)
    while True:
        command = engine.decide(thread.graph, thread.state, limits)
        match command:
            case Idle():
                return
            case StartStep():
                thread.append(
                    StepStarted(
                        command.step,
                        command.role,
                        command.prompt,
                        command.source,
                        command.status,
                        command.location,
                    )
                )
            case RunStep():
                await _run_step(thread, command, actor_for)
            case Finish():
                thread.append(ThreadCompleted(command.final))
            case Suspend():
                thread.append(ThreadSuspended(command.reason, command.kind))


async def _run_step(thread: Thread, command: RunStep, actor_for: ActorFor) -> None:
    from .extract import ExtractError, extract_output

    graph, state = thread.graph, thread.state
    role = graph.roles.get(command.role)
    if role is None:  # the graph changed under a resumed thread
        thread.append(
            ThreadSuspended(
                f"step {command.step}: the graph no longer has role '{command.role}'",
                "graph",
                step=command.step,
            )
        )
        return
    workspace = _step_workspace(thread.workspace_root(), command.location)
    if workspace is None:
        thread.append(
            ThreadSuspended(
                f"step {command.step}: location '{command.location}' is outside the workspace",
                "graph",
                step=command.step,
            )
        )
        return
    actor = actor_for(command.role, role)
    request = ActRequest(
        thread_id=thread.thread_id,
        step=command.step,
        role_name=command.role,
        role=role,
        prompt=command.prompt,
        inputs=dict(state.inputs),
        history=tuple(
            HistoryItem(s.step, s.role, s.status, s.frontmatter, s.body)
            for s in engine.history_for(state, command.role)
        ),
        previous_visits=tuple(
            Visit(s.message, s.reply) for s in engine.previous_visits(state, command.role)
        )
        if role.memory == "session"
        else (),
        attempts=tuple(Attempt(reply, errors) for reply, errors in command.attempts),
        workspace=workspace,
        model=resolve_model(graph, role, thread.options.model),
        max_tokens=role.max_tokens or graph.defaults.max_tokens,
        temperature=role.temperature
        if role.temperature is not None
        else graph.defaults.temperature,
        graph_name=graph.name,
    )
    started = time.monotonic()
    try:
        reply: ActReply = await actor.play(request)
    except HumanNeeded:
        thread.append(HumanWaiting(command.step, command.role))
        return
    except ActorError as exc:
        thread.append(
            ThreadSuspended(
                f"step {command.step} ({command.role}): {exc.message}",
                exc.kind,
                step=command.step,
                usage=exc.usage.to_dict() if any(exc.usage.to_dict().values()) else {},
                cost_usd=exc.cost_usd,
            )
        )
        return
    usage = reply.usage if isinstance(reply.usage, Usage) else Usage()
    try:
        output = extract_output(reply.text, role)
    except ExtractError as exc:
        thread.append(
            AttemptRejected(
                command.step, reply.text, list(exc.errors), usage.to_dict(), reply.cost_usd
            )
        )
        rejected = len(command.attempts) + 1
        if rejected > role.max_repairs:
            errors = "; ".join(exc.errors)
            thread.append(
                ThreadSuspended(
                    f"step {command.step} ({command.role}): the reply was invalid {rejected} "
                    f"time(s) and max_repairs is {role.max_repairs}; last errors: {errors}",
                    "repairs",
                    step=command.step,
                )
            )
        return
    if output.status == SUSPEND:
        reason = str(output.frontmatter.get("reason", "")).strip()
        thread.append(
            ThreadSuspended(
                f"role '{command.role}' asked for a person at step {command.step}: {reason}",
                "role",
                step=command.step,
                reply=reply.text,
            )
        )
        return
    thread.append(
        StepCommitted(
            step=command.step,
            role=command.role,
            status=output.status,
            frontmatter=output.frontmatter,
            body=output.body,
            reply=reply.text,
            message=reply.message,
            usage=usage.to_dict(),
            cost_usd=reply.cost_usd,
            model=reply.model,
            tool_calls=reply.tool_calls,
            duration_s=round(time.monotonic() - started, 3),
            actor=getattr(actor, "kind", type(actor).__name__),
        )
    )


def _step_workspace(root: Path, location: str | None) -> Path | None:
    if not location:
        return root
    target = (root / location).resolve()
    if target != root and root not in target.parents:
        return None
    target.mkdir(parents=True, exist_ok=True)
    return target


# --------------------------------------------------------------------------- public API


async def arun_thread(
    graph: Graph,
    inputs: dict[str, Any] | None = None,
    *,
    store: EventStore | None = None,
    actor_for: ActorFor | None = None,
    workspace: str | Path | None = None,
    options: RunOptions | None = None,
) -> ThreadResult:
    """Start a thread of `graph` and advance it as far as it goes."""
    from .store.memory import MemoryStore

    store = store if store is not None else MemoryStore()
    thread_id = start_thread(graph, inputs or {}, store, workspace=workspace)
    return await advance(graph, store, thread_id, actor_for=actor_for, options=options)


def run_thread(
    graph: Graph,
    inputs: dict[str, Any] | None = None,
    *,
    store: EventStore | None = None,
    actor_for: ActorFor | None = None,
    workspace: str | Path | None = None,
    options: RunOptions | None = None,
) -> ThreadResult:
    """Synchronous `arun_thread` (FORMAT 10)."""
    return asyncio.run(
        arun_thread(
            graph, inputs, store=store, actor_for=actor_for, workspace=workspace, options=options
        )
    )
