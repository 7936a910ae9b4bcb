"""Subgraph roles (docs/format.md section 14): the moderator's rules for a step played by a child
thread. Pure, like the rest of the moderator; the rules S1-S6 are listed in engine.py's theory of
operation, and the driver (driver.py) is their one caller on every executor.

A child is a thread of its own with the id `PARENT.STEP` (so running the parent's step again,
after a crash or a resume, finds the same child and continues it), a link to its parent in its
first event, and the parent's workspace (the step's folder). It runs under what the parent's
limits leave: the steps and the cost it may still spend. Its end is the parent step's outcome.
"""

from __future__ import annotations

from typing import Any

from ..definition.models import Graph
from .commands import Limits, RunChild, RunStep
from .events import SuspendKind, ThreadStarted, ThreadStatus
from .outcomes import ActorFailed, ChildEnded, NeedsPerson, Outcome, ResumeRequested
from .state import InFlight, ThreadState


def child_id(parent: str, step: int) -> str:
    return f"{parent}.{step}"


def parent_of(thread_id: str) -> tuple[str, int] | None:
    """The parent thread and step of a child's id, or None for a thread of its own."""
    head, _, step = thread_id.rpartition(".")
    return (head, int(step)) if head and step.isdigit() else None


def step_command(
    graph: Graph, state: ThreadState, f: InFlight, limits: Limits
) -> RunStep | RunChild:
    """D3 and S1: the command for a step (or a branch) in flight. A subgraph role's step runs its
    child, with what the parent's limits leave it (its steps and cost count against them)."""
    attempts = tuple((reply, tuple(errors)) for reply, errors in f.attempts)
    # Only a role with `graph:` has a child graph (the loader and the Temporal codec make one for
    # those alone); asking the graph's private map costs a pydantic `__getattr__` at every step.
    role = graph.roles.get(f.role)
    child = graph.subgraph(f.role) if role is not None and role.graph is not None else None
    if child is None:
        return RunStep(f.step, f.role, f.prompt, f.location, attempts, f.inputs)
    steps_left = limits.max_steps - (state.committed + state.child_steps - state.budget_step)
    cost_left = None
    if limits.max_cost_usd is not None:
        cost_left = max(limits.max_cost_usd - (state.cost_usd - state.budget_cost), 1e-9)
        if child.limits.max_cost_usd is not None:
            cost_left = min(cost_left, child.limits.max_cost_usd)
    return RunChild(
        step=f.step,
        role=f.role,
        child=child_id(state.thread_id, f.step),
        inputs=dict(f.inputs) if f.inputs is not None else {"task": f.prompt},
        location=f.location,
        max_steps=max(1, min(child.limits.max_steps, steps_left)),
        max_cost_usd=cost_left,
        message=state.resume_message,
    )


def child_started(
    parent: ThreadState, command: RunChild, child: Graph, workspace: str
) -> ThreadStarted:
    """S2: the first event of a child not started yet, linked to its parent's step."""
    return ThreadStarted(
        thread_id=command.child,
        graph=child.name,
        graph_hash=child.hash,
        inputs=dict(command.inputs),
        workspace=workspace,
        parent=parent.thread_id,
        parent_step=command.step,
    )


def child_request(child: Graph, state: ThreadState, message: str | None) -> Outcome | None:
    """S3: what a child that exists is told when its parent's step runs again. Suspended, or
    running (the process running it died), or waiting at a subgraph step of its own: resumed,
    with the parent's resume message. Waiting for a person, or ended: nothing (it waits again, or
    its end is the outcome at once)."""
    if state.status in (ThreadStatus.SUSPENDED, ThreadStatus.RUNNING):
        return ResumeRequested(message)
    flight = state.waiting_for
    if flight is not None and child.subgraph(flight.role) is not None:
        return ResumeRequested(message)
    return None


def child_outcome(command: RunChild, state: ThreadState, took: float) -> Outcome:
    """S4: the parent step's outcome for where its child stopped."""
    ended = state.status in (ThreadStatus.COMPLETED, ThreadStatus.FAILED)
    if ended and state.ending is not None:
        last: dict[str, Any] = dict(state.last.frontmatter) if state.last is not None else {}
        return ChildEnded(
            command.step,
            command.child,
            state.ending,
            state.final or "",
            last,
            usage={"input_tokens": state.input_tokens, "output_tokens": state.output_tokens},
            cost_usd=state.cost_usd,
            steps=state.committed + state.child_steps,
            duration_s=round(took, 3),
        )
    if state.status == ThreadStatus.WAITING:
        return NeedsPerson(command.step)
    kind = state.suspend_kind or SuspendKind.ACTOR
    what = "was cancelled" if state.status == ThreadStatus.CANCELLED else f"is {state.status}"
    return ActorFailed(
        command.step, f"its subgraph thread {command.child} {what}: {state.reason}", kind
    )


def waiting_child(graph: Graph, state: ThreadState) -> tuple[str, Graph] | None:
    """S5: the child (its id and graph) a request to this waiting thread goes to: the child of the
    subgraph step it waits at; None when a person's step of its own is what waits."""
    flight = state.waiting_for
    if flight is None:
        return None
    child = graph.subgraph(flight.role)
    return (child_id(state.thread_id, flight.step), child) if child is not None else None


def children_in_flight(state: ThreadState) -> list[str]:
    """S6: the children a cancel of this thread goes on to (those of its steps in flight, the
    branches' too; a step that is not a subgraph's has none, and one that ended is left)."""
    steps = [state.in_flight.step] if state.in_flight is not None else []
    steps += sorted(state.fanout.flights) if state.fanout is not None else []
    return [child_id(state.thread_id, step) for step in steps]
