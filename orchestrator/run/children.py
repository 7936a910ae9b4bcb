"""A subgraph role's step: its child thread (docs/format.md section 14).

The child is a thread of its own in the parent's store, with the id `PARENT.STEP` (so running
the parent's step again, after a crash or a resume, finds the same child and continues it), a
link to its parent in its first event, and the parent's workspace (the step's folder). It runs
under what the parent's limits leave: the steps and the cost it may still spend.

Its end is the parent step's outcome:
    an ending             ChildEnded: the parent's step commits with the ending as its status
    suspended             ActorFailed with the child's kind: the parent suspends too; resuming
                          the parent resumes the child (with the parent's resume message)
    waiting for a person  NeedsPerson: the parent waits; an answer to the parent goes to the
                          child (Session.answer), then the parent runs the step again
    cancelled             ActorFailed: the parent suspends
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import engine
from ..core.commands import RunStep, limits_for
from ..core.events import SuspendKind, ThreadStarted, ThreadStatus
from ..core.outcomes import ActorFailed, ChildEnded, NeedsPerson, Outcome, ResumeRequested
from ..core.state import ThreadState
from ..definition.models import Graph
from ..store.base import ThreadNotFound
from .options import ActorFor, RunOptions, ThreadResult
from .preflight import InputError, check_inputs
from .step import step_workspace

if TYPE_CHECKING:
    from .runner import LiveThread

Advance = Callable[..., Awaitable[ThreadResult]]


def child_id(parent: str, step: int) -> str:
    return f"{parent}.{step}"


def parent_of(thread_id: str) -> tuple[str, int] | None:
    """The parent thread and step of a child's id, or None for a thread of its own."""
    head, _, step = thread_id.rpartition(".")
    return (head, int(step)) if head and step.isdigit() else None


def child_inputs(graph: Graph, command: RunStep) -> dict[str, Any]:
    """The child's inputs: the edge's `inputs`, or its prompt as the `task`."""
    if command.inputs is not None:
        return dict(command.inputs)
    return {"task": command.prompt}


def _options_for(parent: LiveThread, child: Graph, thread_id: str) -> RunOptions:
    """What the parent's limits leave for the child (its steps and cost count against them)."""
    limits = limits_for(parent.graph, parent.options.max_steps, parent.options.max_cost_usd)
    state = parent.state
    steps_left = limits.max_steps - (state.committed + state.child_steps - state.budget_step)
    max_steps = max(1, min(child.limits.max_steps, steps_left))
    cost_left = None
    if limits.max_cost_usd is not None:
        cost_left = max(limits.max_cost_usd - (state.cost_usd - state.budget_cost), 1e-9)
        if child.limits.max_cost_usd is not None:
            cost_left = min(cost_left, child.limits.max_cost_usd)
    on_child = parent.options.on_child_event
    shown = functools.partial(on_child, thread_id) if on_child is not None else None
    return replace(parent.options, max_steps=max_steps, max_cost_usd=cost_left, on_event=shown)


def _create(
    parent: LiveThread,
    child: Graph,
    thread_id: str,
    inputs: dict[str, Any],
    workspace: Path,
    step: int,
) -> None:
    started = ThreadStarted(
        thread_id=thread_id,
        graph=child.name,
        graph_hash=child.hash,
        inputs=inputs,
        workspace=str(workspace),
        parent=parent.thread_id,
        parent_step=step,
    )
    state = engine.apply(ThreadState(), started)
    parent.store.create(
        started,
        state.summary(),
        graph_path=str(child.path or ""),
        snapshot=child.model_dump(mode="json"),
    )


async def run_child(
    parent: LiveThread, command: RunStep, actor_for: ActorFor, advance: Advance
) -> Outcome:
    """Start or continue the child thread of a subgraph step; its end as the step's outcome."""
    child = parent.graph.subgraph(command.role)
    if child is None:
        return ActorFailed(
            command.step,
            f"the graph of subgraph role '{command.role}' is not loaded",
            SuspendKind.GRAPH,
        )
    try:
        workspace = step_workspace(parent.workspace_root(), command.location)
    except OSError as exc:
        return ActorFailed(command.step, f"cannot make the step's folder: {exc}", SuspendKind.GRAPH)
    if workspace is None:
        return ActorFailed(
            command.step, "the step's location is outside the workspace", SuspendKind.GRAPH
        )
    thread_id = child_id(parent.thread_id, command.step)
    started = time.monotonic()
    first = None
    try:
        row = parent.store.thread(thread_id)
    except ThreadNotFound:
        row = None
    if row is None or row.id != thread_id:  # a store also matches ids by prefix
        inputs = child_inputs(child, command)
        try:
            check_inputs(child, inputs)
        except InputError as exc:
            return ActorFailed(
                command.step, f"the inputs of graph '{child.name}': {exc}", SuspendKind.GRAPH
            )
        _create(parent, child, thread_id, inputs, workspace, command.step)
    elif row.state in (ThreadStatus.SUSPENDED, ThreadStatus.RUNNING) or _waits_on_child(
        parent, child, thread_id
    ):
        first = ResumeRequested(parent.state.resume_message)  # the parent was resumed
    result = await advance(
        child,
        parent.store,
        thread_id,
        actor_for=actor_for,
        options=_options_for(parent, child, thread_id),
        first=first,
    )
    return outcome_of(command.step, thread_id, parent, result, time.monotonic() - started)


def _waits_on_child(parent: LiveThread, child: Graph, thread_id: str) -> bool:
    """A waiting child whose own waiting step is a subgraph's: resuming goes on down to it."""
    state = engine.fold([s.event for s in parent.store.events(thread_id)])
    flight = state.waiting_for
    return flight is not None and child.subgraph(flight.role) is not None


def outcome_of(
    step: int, thread_id: str, parent: LiveThread, result: ThreadResult, took: float
) -> Outcome:
    """The parent step's outcome for the child's result."""
    state = engine.fold([s.event for s in parent.store.events(thread_id)])
    if result.state in (ThreadStatus.COMPLETED, ThreadStatus.FAILED) and state.ending is not None:
        last = state.last.frontmatter if state.last is not None else {}
        return ChildEnded(
            step,
            thread_id,
            state.ending,
            state.final or "",
            dict(last),
            usage={"input_tokens": state.input_tokens, "output_tokens": state.output_tokens},
            cost_usd=state.cost_usd,
            steps=state.committed + state.child_steps,
            duration_s=round(took, 3),
        )
    if result.state == ThreadStatus.WAITING:
        return NeedsPerson(step)
    kind = result.kind or SuspendKind.ACTOR
    what = "was cancelled" if result.state == ThreadStatus.CANCELLED else f"is {result.state}"
    return ActorFailed(step, f"its subgraph thread {thread_id} {what}: {result.reason}", kind)
