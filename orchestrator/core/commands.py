"""What decide() asks for: commands, and the limits it checks."""

from __future__ import annotations

from dataclasses import dataclass

from ..spec.models import Graph
from .events import Event, ThreadStatus


@dataclass(frozen=True)
class RunStep:
    """Call the role's actor for the step in flight; its outcome goes to judge()."""

    step: int
    role: str
    prompt: str
    location: str | None
    attempts: tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class Record:
    """Append this event: nothing outside the moderator is needed to know it."""

    event: Event


@dataclass(frozen=True)
class Idle:
    """Nothing to do: the thread is not running."""

    status: ThreadStatus


Command = RunStep | Record | Idle


@dataclass(frozen=True)
class Limits:
    max_steps: int
    max_visits: int
    max_cost_usd: float | None


def limits_for(graph: Graph, max_steps: int | None = None) -> Limits:
    return Limits(
        max_steps if max_steps is not None else graph.limits.max_steps,
        graph.limits.max_visits,
        graph.limits.max_cost_usd,
    )
