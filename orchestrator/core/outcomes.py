"""What judge() takes: outcomes of a step and requests about a thread, and its refusal."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import Refused as Refused  # with its family; imported from here too
from .events import SuspendKind


@dataclass(frozen=True)
class Replied:
    """An actor's reply to step `step`, with what it cost."""

    step: int
    text: str
    message: str = ""  # the visit message as the actor sent it (for `memory: session`)
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    model: str | None = None
    tool_calls: int = 0
    duration_s: float = 0.0
    actor: str = ""


@dataclass(frozen=True)
class ActorFailed:
    """The actor could not reply (provider down, process failed, timeout, bad location)."""

    step: int
    message: str
    kind: SuspendKind
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    detail: str | None = None  # a Python actor's traceback, redacted (ThreadSuspended.detail)


@dataclass(frozen=True)
class ChildEnded:
    """A subgraph role's child thread reached an ending (section 14)."""

    step: int
    child: str  # the child thread's id
    ending: str
    final: str  # the child's final message: the step's $body
    frontmatter: dict[str, object] = field(default_factory=dict)  # its last committed step's
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    steps: int = 0  # the child's steps (its own children's included)
    duration_s: float = 0.0


@dataclass(frozen=True)
class PreconditionFailed:
    """The role's `requires:` did not hold when its step was about to start."""

    step: int
    failures: tuple[str, ...]


@dataclass(frozen=True)
class NeedsPerson:
    """A human role's step and no terminal to ask on."""

    step: int


@dataclass(frozen=True)
class Answered:
    """A person's answer for a waiting step, given from outside the running process: `step`
    names one of the steps that wait (a waiting branch of a fan-out); None, the first."""

    text: str
    step: int | None = None


@dataclass(frozen=True)
class Interrupted:
    """The process running the thread was interrupted (Ctrl-C) or its task cancelled."""


@dataclass(frozen=True)
class CancelRequested:
    reason: str = "cancelled by the user"


@dataclass(frozen=True)
class ResumeRequested:
    message: str | None = None


Outcome = (
    Replied
    | ChildEnded
    | ActorFailed
    | PreconditionFailed
    | NeedsPerson
    | Answered
    | Interrupted
    | CancelRequested
    | ResumeRequested
)
