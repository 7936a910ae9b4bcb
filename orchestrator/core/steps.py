"""One typed view of a thread's log: its steps, their attempts and the edges it took.

Every reader of a log (the story `threads show` tells, recordings, replay, the testing helpers,
the drawing of a thread's path) reads this view instead of walking events itself,
so they cannot disagree about what a step is:

- a step is numbered by its `StepStarted`; it may start more than once (a crash or a resume
  runs it again: `runs` counts the starts, and its prompt is the latest run's);
- its rejected replies are kept per run (`attempts` are the latest run's, `all_attempts`
  every run's, each with its run number);
- it is committed when its `StepCommitted` is in the log (`status` is then set);
- the edges a thread took are the edge into each step (taken once however often the step ran)
  and the edge into `$END` each time the thread completed; a branch's edge and a join's edge
  both start at the step that fanned out (`branch` and `join` tell them apart);
- a subgraph role's step names its child thread (`child`), whose own log is read apart.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from ..definition.models import END, SINGLE_EXIT, START
from .engine import fold
from .events import (
    AttemptRejected,
    BranchesStarted,
    BranchFailed,
    Event,
    HumanWaiting,
    StepCommitted,
    StepStarted,
    ThreadCompleted,
    ThreadResumed,
    ThreadSuspended,
)
from .ledger import TOKEN_KEYS
from .state import ThreadState

EdgeKey = tuple[str, str, str]  # (source, status, target)


class AttemptView(NamedTuple):
    """A rejected reply: `(reply, errors)` first, so it unpacks like a pair."""

    reply: str
    errors: tuple[str, ...]
    usage: dict[str, int] = {}
    cost_usd: float = 0.0
    run: int = 1


@dataclass(frozen=True)
class StepView:
    step: int
    role: str
    prompt: str = ""  # as its latest run was asked
    source: str = ""  # the edge that led here: source role (or $START) and the status taken
    edge_status: str = ""
    location: str | None = None
    runs: int = 0
    status: str | None = None  # None until committed
    frontmatter: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    reply: str = ""  # the accepted reply, verbatim
    message: str = ""
    all_attempts: tuple[AttemptView, ...] = ()
    usage: dict[str, int] = field(default_factory=dict)  # of the accepted reply
    cost_usd: float = 0.0  # of the accepted reply
    duration_s: float = 0.0
    model: str | None = None
    tool_calls: int = 0
    actor: str = ""
    notes: tuple[str, ...] = ()
    branch: int | None = None  # a branch of a fan-out: its index
    join: bool = False  # the step the join edge of a fan-out started
    inputs: dict[str, Any] | None = None  # a subgraph role's rendered inputs
    child: str | None = None  # a subgraph role's step: the child thread

    @property
    def committed(self) -> bool:
        return self.status is not None

    @property
    def attempts(self) -> tuple[AttemptView, ...]:
        """The rejected replies of the latest run (what a replay feeds again)."""
        return tuple(a for a in self.all_attempts if a.run == max(self.runs, 1))

    @property
    def edge(self) -> EdgeKey:
        return (self.source, self.edge_status, self.role)

    @property
    def total_usage(self) -> dict[str, int]:
        """Tokens of every reply of the step, rejected ones included."""
        total = dict.fromkeys(TOKEN_KEYS, 0)
        for usage in [a.usage for a in self.all_attempts] + [self.usage]:
            for key in TOKEN_KEYS:
                total[key] += int(usage.get(key, 0))
        return total

    @property
    def total_cost_usd(self) -> float:
        return self.cost_usd + sum(a.cost_usd for a in self.all_attempts)


@dataclass(frozen=True)
class ThreadView:
    state: ThreadState
    steps: tuple[StepView, ...]
    ends: tuple[tuple[int, EdgeKey], ...] = ()  # (steps before it, edge) per completion
    path: tuple[str, ...] = ()  # `path_of` the log

    @property
    def committed(self) -> list[StepView]:
        return [s for s in self.steps if s.committed]

    def edges(self, *, committed_only: bool = False) -> list[EdgeKey]:
        """The edges taken, in order: into each step, and into $END at each completion."""
        out: list[EdgeKey] = []
        ends = list(self.ends)
        for i, step in enumerate(self.steps):
            while ends and ends[0][0] <= i:
                out.append(ends.pop(0)[1])
            if step.committed or not committed_only:
                out.append(step.edge)
        out.extend(edge for _, edge in ends)
        return out


def thread_view(events: list[Event], state: ThreadState | None = None) -> ThreadView:
    """Read a log into steps. `state`, when the caller has folded it already, is reused."""
    if state is None:
        state = fold(events)
    steps: dict[int, StepView] = {}
    order: list[int] = []
    ends: list[tuple[int, EdgeKey]] = []
    last: StepView | None = None  # the latest started step
    after: tuple[str, str] = (START, SINGLE_EXIT)  # the latest committed step's edge key
    fanning: tuple[str, str] | None = None  # a fan-out whose join is not taken yet
    for event in events:
        match event:
            case BranchesStarted():
                fanning = (event.source, event.status)
            case StepStarted():
                old = steps.get(event.step)
                if old is None:
                    order.append(event.step)
                    old = StepView(event.step, event.role)
                last = steps[event.step] = replace(
                    old,
                    role=event.role,
                    prompt=event.prompt,
                    source=event.source,
                    edge_status=event.status,
                    location=event.location,
                    runs=old.runs + 1,
                    branch=event.branch,
                    join=event.join,
                    inputs=event.inputs,
                )
                if event.join:
                    fanning = None
            case AttemptRejected() if event.step in steps:
                s = steps[event.step]
                attempt = AttemptView(
                    event.reply, tuple(event.errors), dict(event.usage), event.cost_usd, s.runs
                )
                steps[event.step] = replace(s, all_attempts=(*s.all_attempts, attempt))
            case StepCommitted():
                if event.step not in steps:
                    order.append(event.step)
                    steps[event.step] = StepView(event.step, event.role)
                steps[event.step] = replace(
                    steps[event.step],
                    status=event.status,
                    frontmatter=dict(event.frontmatter),
                    body=event.body,
                    reply=event.reply,
                    message=event.message,
                    usage=dict(event.usage),
                    cost_usd=event.cost_usd,
                    duration_s=event.duration_s,
                    model=event.model,
                    tool_calls=event.tool_calls,
                    actor=event.actor,
                    child=event.child,
                )
                after = (event.role, event.status)
            case ThreadCompleted():
                ends.append((len(order), (*(fanning or after), END)))
                fanning = None
            case BranchFailed() if event.step in steps:
                s = steps[event.step]
                steps[event.step] = replace(s, notes=(*s.notes, f"branch failed: {event.reason}"))
            case ThreadSuspended() | ThreadResumed() | HumanWaiting():
                note = _note(event)
                if last is not None and not steps[last.step].committed and note:
                    s = steps[last.step]
                    steps[last.step] = replace(s, notes=(*s.notes, note))
    path = tuple(path_of(events, state.ending))
    return ThreadView(state, tuple(steps[n] for n in order), tuple(ends), path)


def path_of(events: Iterable[Event], ending: str | None) -> list[str]:
    """The roles in the order their steps committed, then $END if the thread ended there."""
    roles = [event.role for event in events if isinstance(event, StepCommitted)]
    return [*roles, END] if ending is not None else roles


def _note(event: Event) -> str:
    match event:
        case ThreadSuspended():
            return f"suspended: {event.reason}"
        case ThreadResumed(interrupted=True):
            return "the process died during this step; it ran again on resume"
        case ThreadResumed():
            return "resumed" + (f" with message: {event.message}" if event.message else "")
        case HumanWaiting():
            return "waited for a person"
    return ""
