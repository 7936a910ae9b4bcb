"""The actor protocol: the boundary between the deterministic moderator and the world.

An actor receives an `ActRequest` holding everything it needs (the role, the rendered edge
prompt, the history since the role last spoke, its own earlier visits when the role's memory is
`session`, and this step's rejected attempts when the reply is being repaired) and returns an
`ActReply`. Actors keep no state between calls that matters for correctness: a crashed process
rebuilds every request from the event log, so a resumed thread sends the same conversation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..core.events import SuspendKind
from ..core.records import Attempt as Attempt
from ..core.records import HistoryItem as HistoryItem
from ..core.records import Visit as Visit
from ..definition.models import Role
from ..errors import ProviderError
from .progress import OnProgress

if TYPE_CHECKING:
    from ..tools.boundary import Boundary


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
        )

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Usage:
        data = data or {}
        return cls(**{k: int(data.get(k) or 0) for k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class ActRequest:
    thread_id: str
    step: int
    role_name: str
    role: Role
    prompt: str  # the rendered edge prompt (with a resume message appended, if any)
    inputs: dict[str, Any] = field(default_factory=dict)
    history: tuple[HistoryItem, ...] = ()
    previous_visits: tuple[Visit, ...] = ()  # empty when the role's memory is `fresh`
    attempts: tuple[Attempt, ...] = ()  # non-empty when this call asks for a repair
    workspace: Path = Path(".")
    model: str | None = None  # resolved model alias or id
    max_tokens: int | None = None
    temperature: float | None = None
    graph_name: str = ""
    # The thread's trust boundary (tools/boundary.py), fixed when it started: what the role's
    # sandbox and file tools keep read-only or hidden. None: the workspace's `.git` only.
    boundary: Boundary | None = field(default=None, compare=False, repr=False)
    # Told what happens during the step (tokens, tool calls), for a display; never recorded.
    progress: OnProgress | None = field(default=None, compare=False, repr=False)

    @property
    def is_repair(self) -> bool:
        return bool(self.attempts)


@dataclass(frozen=True)
class ActReply:
    text: str
    message: str = ""  # the visit message as the actor sent it (kept for `memory: session`)
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    model: str | None = None
    tool_calls: int = 0


class ActorError(ProviderError):
    """The actor could not produce a reply (provider down, process failed, timeout).

    The thread suspends with this message and can be resumed; `kind` says why (one of
    `SuspendKind`: provider, rate-limit, timeout, process, tool-loop, replay-divergence, ...).
    """

    def __init__(
        self,
        message: str,
        kind: SuspendKind | str = SuspendKind.ACTOR,
        *,
        usage: Usage | None = None,
        cost_usd: float = 0.0,
        detail: str | None = None,
    ):
        super().__init__(message)
        self.detail = detail  # what `threads show --full` adds to the message: a traceback
        self.message = message
        self.kind = SuspendKind(kind)  # an unknown kind is a bug: fail where it is raised
        # What the failed step already spent (calls that succeeded before the failure), so
        # the ledger counts it even though the step did not commit.
        self.usage = usage or Usage()
        self.cost_usd = cost_usd


class HumanNeeded(Exception):
    """A human must answer and no terminal is attached: the thread waits."""


class Actor(Protocol):
    async def play(self, request: ActRequest) -> ActReply: ...
