"""A thread's state: what the moderator needs, folded from the events by `engine.apply`.

The state is plain data; only `engine.apply` changes it. `ThreadSummary` is the part of it a
store keeps beside the events (so `threads list` never reads a log): it is computed from the
state, never by rules of the store's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..spec.models import END
from .events import SuspendKind, ThreadStatus


@dataclass
class Step:
    """A committed step as the state keeps it."""

    step: int
    role: str
    status: str
    frontmatter: dict[str, Any]
    body: str
    reply: str
    message: str
    cost_usd: float


@dataclass
class InFlight:
    """The step that started and has not committed yet."""

    step: int
    role: str
    prompt: str
    source: str
    status: str
    location: str | None
    attempts: list[tuple[str, list[str]]] = field(default_factory=list)


@dataclass
class ThreadState:
    """Everything decide() and judge() need, folded from the events. Mutated only by apply()."""

    thread_id: str = ""
    graph: str = ""
    graph_hash: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    workspace: str = ""
    status: ThreadStatus = ThreadStatus.NEW
    steps: list[Step] = field(default_factory=list)
    latest: dict[str, Step] = field(default_factory=dict)  # each role's latest committed step
    visits: dict[str, list[int]] = field(default_factory=dict)  # role -> indexes into steps
    in_flight: InFlight | None = None
    resume_message: str | None = None  # appended to the next step's prompt
    resume_from_end: bool = False  # take $START.resume next
    end_message: str | None = None  # the message of a resume from an ending: $inputs.message
    reason: str | None = None  # why it waits, or is suspended, failed or cancelled
    suspend_kind: SuspendKind | None = None
    final: str | None = None
    ending: str | None = None  # the ending reached ($END), until a resume continues the thread
    recovery: str | None = None
    cost_usd: float = 0.0
    input_tokens: int = 0  # cache reads and writes included
    output_tokens: int = 0
    events: int = 0
    # Limits count from here (a resume after a limit grants them anew).
    budget_step: int = 0
    budget_cost: float = 0.0
    budget_visits: dict[str, int] = field(default_factory=dict)

    @property
    def step_count(self) -> int:
        return len(self.steps)

    @property
    def path(self) -> list[str]:
        roles = [s.role for s in self.steps]
        return roles + [END] if self.ending is not None else roles

    def summary(self) -> ThreadSummary:
        return ThreadSummary(
            status=self.status,
            steps=len(self.steps),
            cost_usd=self.cost_usd,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            reason=self.reason or "",
        )


@dataclass(frozen=True)
class ThreadSummary:
    """What a store keeps per thread beside its events, for listing without reading logs."""

    status: ThreadStatus
    steps: int
    cost_usd: float
    input_tokens: int
    output_tokens: int
    reason: str
