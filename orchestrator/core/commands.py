"""What decide() asks for: commands, and the limits it checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..definition.models import Graph
from .events import Event, ThreadStatus


@dataclass(frozen=True)
class RunStep:
    """Call the role's actor for the step in flight; its outcome goes to judge()."""

    step: int
    role: str
    prompt: str
    location: str | None
    attempts: tuple[tuple[str, tuple[str, ...]], ...]
    inputs: dict[str, Any] | None = None  # into a subgraph role: the child's inputs


@dataclass(frozen=True)
class RunChild:
    """Run the child thread of a subgraph role's step (docs/format.md section 14, rule S1): start
    it, or continue it, until it stops; its end goes to judge() as the step's outcome (S4)."""

    step: int
    role: str
    child: str  # the child thread's id: PARENT.STEP, so a step run again finds the same child
    inputs: dict[str, Any]  # the edge's `inputs`, else the prompt as `task`
    location: str | None
    max_steps: int  # what the parent's limits leave: the child's steps count against them
    max_cost_usd: float | None
    message: str | None = None  # the parent's resume message, passed on to a child resumed


@dataclass(frozen=True)
class RunBranches:
    """Keep these branch steps running (start those not running yet); each outcome goes to
    judge() as it comes. Level-triggered: decide() lists every branch that should be running."""

    steps: tuple[RunStep | RunChild, ...]


@dataclass(frozen=True)
class Record:
    """Append this event: nothing outside the moderator is needed to know it."""

    event: Event


@dataclass(frozen=True)
class Idle:
    """Nothing to do: the thread is not running."""

    status: ThreadStatus


Command = RunStep | RunChild | RunBranches | Record | Idle


@dataclass(frozen=True)
class Limits:
    max_steps: int
    max_visits: int
    max_cost_usd: float | None
    max_parallel: int = 4


def limits_for(
    graph: Graph, max_steps: int | None = None, max_cost_usd: float | None = None
) -> Limits:
    """The graph's limits; `max_steps` (--max-steps) and `max_cost_usd` (what a parent thread
    has left for a subgraph's child) override them."""
    return Limits(
        max_steps if max_steps is not None else graph.limits.max_steps,
        graph.limits.max_visits,
        max_cost_usd if max_cost_usd is not None else graph.limits.max_cost_usd,
        graph.limits.max_parallel,
    )
