"""A thread's state: what the moderator needs, folded from the events by `engine.apply`.

The state is plain data; only `engine.apply` changes it. Its size does not grow with the thread:
of the committed steps it keeps each role's latest, the last HISTORY_LIMIT (what a role's
history shows) and the visit counts; every step stays in the log, which the readers
(`core/steps.py`) fold for themselves. `ThreadSummary` is the part of it a
store keeps beside the events (so `threads list` never reads a log): it is computed from the
state, never by rules of the store's own.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

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
    index: int = 0  # its place among the thread's committed steps, in commit order, from 0


HISTORY_LIMIT = 30  # committed steps shown to a role (prompting trims further to its size budget)


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
    branch: int | None = None  # a branch of the fan-out in progress: its index
    waiting: bool = False  # a branch waiting for a person while others run
    inputs: dict[str, Any] | None = None  # a subgraph role's rendered inputs


@dataclass
class FanOut:
    """An edge that fanned out and whose join has not been taken yet (section 15)."""

    source: str
    status: str
    option: int
    first_step: int
    branches: list[dict[str, Any]]  # {role, prompt, location, inputs}, in branch order
    source_step: Step | None  # the step that fanned out (None from $START)
    flights: dict[int, InFlight] = field(default_factory=dict)  # by step number
    done: dict[int, Step] = field(default_factory=dict)  # by branch index
    failed: dict[int, tuple[str, SuspendKind]] = field(default_factory=dict)  # by branch index

    def unstarted(self) -> list[int]:
        """Branch indexes neither running, committed nor failed, in order."""
        busy = {f.branch for f in self.flights.values()} | set(self.done) | set(self.failed)
        return [i for i in range(len(self.branches)) if i not in busy]

    def running(self) -> list[InFlight]:
        """Branches in flight that are not waiting for a person, by step number."""
        return sorted((f for f in self.flights.values() if not f.waiting), key=lambda f: f.step)

    def waiting(self) -> list[InFlight]:
        return sorted((f for f in self.flights.values() if f.waiting), key=lambda f: f.step)

    @property
    def complete(self) -> bool:
        return len(self.done) == len(self.branches)


@dataclass
class ThreadState:
    """Everything decide() and judge() need, folded from the events. Mutated only by apply()."""

    thread_id: str = ""
    graph: str = ""
    graph_hash: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    workspace: str = ""
    status: ThreadStatus = ThreadStatus.NEW
    committed: int = 0  # steps committed
    recent: deque[Step] = field(default_factory=lambda: deque(maxlen=HISTORY_LIMIT))
    latest: dict[str, Step] = field(default_factory=dict)  # each role's latest committed step
    visits: dict[str, int] = field(default_factory=dict)  # role -> steps it committed
    in_flight: InFlight | None = None
    fanout: FanOut | None = None  # branches in progress; their steps are in its flights
    child_steps: int = 0  # steps of subgraph children, counted against max_steps
    resume_message: str | None = None  # appended to the next step's prompt
    message_from: str = "resumed"  # who gave it: the person who "resumed" or "forked" it
    forked_from: dict[str, Any] | None = None  # a fork's origin: {thread, step} (A13)
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

    def flight(self, step: int) -> InFlight | None:
        """The step in flight with this number: the one step, or a branch."""
        if self.in_flight is not None and self.in_flight.step == step:
            return self.in_flight
        return self.fanout.flights.get(step) if self.fanout is not None else None

    @property
    def waiting_for(self) -> InFlight | None:
        """The step a person must answer: the one in flight, or the first waiting branch."""
        if self.status != ThreadStatus.WAITING:
            return None
        if self.in_flight is not None:
            return self.in_flight
        waiting = self.fanout.waiting() if self.fanout is not None else []
        return waiting[0] if waiting else None

    @property
    def busy(self) -> bool:
        """A step (or a branch) is in flight."""
        return self.in_flight is not None or bool(self.fanout and self.fanout.flights)

    @property
    def last(self) -> Step | None:
        """The step committed last."""
        return self.recent[-1] if self.recent else None

    def summary(self) -> ThreadSummary:
        return ThreadSummary(
            status=self.status,
            steps=self.committed,
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
