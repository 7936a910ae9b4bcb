"""A finished thread as tests read it: its state, path and steps (the log's typed view)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.steps import StepView, thread_view
from ..store.base import EventStore

TraceStep = StepView  # a step of a simulated thread: the same typed view every reader uses


@dataclass
class Trace:
    thread_id: str
    state: str  # completed | suspended | waiting | failed | ...
    path: list[str]  # the roles in step order, then "$END" when completed
    steps: list[StepView]
    final: str | None
    reason: str | None
    store: EventStore = field(repr=False)
    ending: str | None = None  # the ending reached, when the thread reached $END

    @property
    def statuses(self) -> list[str]:
        return [s.status for s in self.steps if s.status is not None]

    @property
    def prompts(self) -> list[str]:
        return [s.prompt for s in self.steps]


def trace_from_store(store: EventStore, thread_id: str) -> Trace:
    """Read a thread's events back into a Trace."""
    view = thread_view([s.event for s in store.events(thread_id)])
    state = view.state
    steps = view.committed + [s for s in view.steps if not s.committed]
    return Trace(
        thread_id,
        state.status,
        list(view.path),
        steps,
        state.final,
        state.reason,
        store,
        state.ending,
    )
