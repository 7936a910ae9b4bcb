"""What a thread's log holds: events, the thread states and the kinds of suspension.

Events are small immutable records of what happened; the log of a thread is the list of them in
the order they were appended. Every other view of a thread (its state, its steps, its summary
row, a recording) is derived from this list. Events hold JSON values only, so they serialise
as they are.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class ThreadStatus(StrEnum):
    """The states of a thread (docs/format.md section 7)."""

    NEW = "new"
    RUNNING = "running"
    WAITING = "waiting"  # for a person's answer
    SUSPENDED = "suspended"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def ended(self) -> bool:
        return self in (ThreadStatus.COMPLETED, ThreadStatus.FAILED, ThreadStatus.CANCELLED)


class SuspendKind(StrEnum):
    """Why a thread suspended: the one complete list. Stable: it appears in `--json` output."""

    ROLE = "role"  # a role replied $SUSPEND
    REPAIRS = "repairs"  # invalid replies exhausted max_repairs
    LIMIT = "limit"  # max_steps, max_visits or max_cost_usd reached
    TEMPLATE = "template"  # an edge prompt did not render
    GRAPH = "graph"  # no edge for a status, a role gone from a changed graph, a bad location
    INTERRUPTED = "interrupted"  # Ctrl-C, or the running task was cancelled
    ACTOR = "actor"  # an actor failed for a reason of its own
    PROVIDER = "provider"  # the model provider kept failing
    RATE_LIMIT = "rate-limit"  # the provider kept answering 429
    TIMEOUT = "timeout"  # a model call or an agent process ran out of time
    PROCESS = "process"  # an agent process could not start or exited non-zero
    TOOL_LOOP = "tool-loop"  # a model kept calling tools past the limit
    CONFIG = "config"  # the actor is not configured (no API key, bad model settings)
    SANDBOX = "sandbox"  # a process needs a sandbox that cannot be made here
    GUARD = "guard"  # an edge guard failed to evaluate (comparing a null, a wrong type)
    PRECONDITION = "precondition"  # a role's `requires:` did not hold when its step started
    REPLAY_DIVERGENCE = "replay-divergence"  # the graph asks for what a recording lacks
    SCRIPT_EXHAUSTED = "script-exhausted"  # simulate(): no scripted reply left


@dataclass(frozen=True)
class Event:
    """Base of all events. The class name is the event's `type` in the log."""

    def to_dict(self) -> dict[str, Any]:
        # A shallow copy: events hold JSON values only, and asdict's deep copy was most of the
        # cost of serialising an event. Enum members are str subclasses: kept as plain text.
        data = {name: _plain(getattr(self, name)) for name in _field_names(type(self))}
        data["type"] = type(self).__name__
        return data


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    """An event class's field names, looked up once (`dataclasses.fields` is not cheap, and
    every event of a durable step is serialised)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def _plain(value: Any) -> Any:
    return str(value) if isinstance(value, StrEnum) else value


@dataclass(frozen=True)
class ThreadStarted(Event):
    thread_id: str
    graph: str
    graph_hash: str
    inputs: dict[str, Any]
    workspace: str
    parent: str | None = None  # a subgraph's child thread: the parent thread's id
    parent_step: int | None = None  # and the parent's step it plays
    # A models file found in the current folder that changes aliases or prices (docs/security.md):
    # {"path", "changes"}. Written only when there is one, so older logs read the same.
    models_file: dict[str, Any] | None = None
    # What the thread is for (core/titles.py): written only when set, so older logs read the same
    # and a thread started without them keeps the log it always had.
    title: str = ""
    labels: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        if self.models_file is None:
            del data["models_file"]
        if not self.title:
            del data["title"]
        if not self.labels:
            del data["labels"]
        return data


@dataclass(frozen=True)
class StepStarted(Event):
    step: int
    role: str
    prompt: str
    source: str  # the role (or $START) whose edge led here
    status: str  # the edge key taken
    location: str | None = None
    option: int = 0  # which edge of a guarded list was taken
    branch: int | None = None  # a branch of a fan-out: its index (section 15)
    join: bool = False  # the join edge of a fan-out
    inputs: dict[str, Any] | None = None  # into a subgraph role: the child's rendered inputs


@dataclass(frozen=True)
class BranchesStarted(Event):
    """An edge fanned out (section 15): each branch will run as a step of its own, numbered
    from `first_step` in branch order. A branch is {role, prompt, location, inputs}."""

    source: str
    status: str
    first_step: int
    branches: list[dict[str, Any]]
    option: int = 0


@dataclass(frozen=True)
class BranchFailed(Event):
    """A branch suspended (a $SUSPEND, repairs used up, its actor failed): the thread suspends
    once the other running branches end."""

    step: int
    reason: str
    kind: SuspendKind
    reply: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    detail: str | None = None  # as ThreadSuspended.detail: a Python actor's traceback


@dataclass(frozen=True)
class AttemptRejected(Event):
    step: int
    reply: str
    errors: list[str]
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0


@dataclass(frozen=True)
class StepCommitted(Event):
    step: int
    role: str
    status: str
    frontmatter: dict[str, Any]
    body: str
    reply: str  # the accepted reply, verbatim
    message: str = ""  # the visit message the actor sent (for `memory: session`)
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    model: str | None = None
    tool_calls: int = 0
    duration_s: float = 0.0
    actor: str = ""  # who answered: anthropic, human, command, replay, scripted
    child: str | None = None  # a subgraph role's step: the child thread's id
    child_steps: int = 0  # and the child's steps, which count against the parent's limits


@dataclass(frozen=True)
class HumanWaiting(Event):
    step: int
    role: str


@dataclass(frozen=True)
class ThreadSuspended(Event):
    reason: str
    kind: SuspendKind
    step: int | None = None
    reply: str | None = None  # a $SUSPEND reply, verbatim
    usage: dict[str, int] = field(default_factory=dict)  # spent by a step that then failed
    cost_usd: float = 0.0
    # A Python actor's traceback, redacted (`threads show --full`, `--json`); the reason stays
    # one line. Optional: a log written before it loads with None.
    detail: str | None = None


@dataclass(frozen=True)
class ThreadResumed(Event):
    message: str | None = None
    interrupted: bool = False  # the previous process died with a step in flight


@dataclass(frozen=True)
class ThreadForked(Event):
    """This thread is a fork (docs/format.md section 20): the events before this one are
    `from_thread`'s up to its step `at_step` (that step and the rest dropped); step `at_step`
    is decided again from its edge, with `message` appended to its prompt, or, with `reply`,
    the StepStarted and StepCommitted that follow record that reply as its output."""

    from_thread: str
    at_step: int
    message: str | None = None
    reply: str | None = None  # the replacement reply, verbatim, as it was validated
    reuse: bool = False  # later steps equal to the original's take its replies (section 20)
    title: str | None = None  # the title asked for the fork


@dataclass(frozen=True)
class ThreadCompleted(Event):
    """An edge reached $END: `final` is its rendered prompt, `ending` its name (section 12)."""

    final: str
    ending: str = "done"
    outcome: str = "success"  # "failure": the thread is failed, not completed
    recovery: str | None = None  # the edge's rendered `recovery`, what to do next
    option: int = 0  # which edge of a guarded list was taken


@dataclass(frozen=True)
class ThreadFailed(Event):
    error: str


@dataclass(frozen=True)
class ThreadCancelled(Event):
    reason: str = "cancelled by the user"


EVENT_TYPES: dict[str, type[Event]] = {
    cls.__name__: cls
    for cls in (
        ThreadStarted,
        StepStarted,
        BranchesStarted,
        BranchFailed,
        AttemptRejected,
        StepCommitted,
        HumanWaiting,
        ThreadSuspended,
        ThreadResumed,
        ThreadForked,
        ThreadCompleted,
        ThreadFailed,
        ThreadCancelled,
    )
}


def event_from_dict(data: dict[str, Any]) -> Event:
    """The inverse of `Event.to_dict`; unknown keys are ignored (newer logs stay readable)."""
    data = dict(data)
    cls = EVENT_TYPES[data.pop("type")]
    names = {f.name for f in dataclasses.fields(cls)}
    values = {k: v for k, v in data.items() if k in names}
    if cls in (ThreadSuspended, BranchFailed):
        values["kind"] = suspend_kind(values.get("kind", ""))
    return cls(**values)


def suspend_kind(text: str) -> SuspendKind:
    """A kind read back from a log; a kind this version does not know reads as `actor`."""
    try:
        return SuspendKind(text)
    except ValueError:
        return SuspendKind.ACTOR
