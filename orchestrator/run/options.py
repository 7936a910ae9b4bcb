"""What a caller can say about a run, and what it gets back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.events import SuspendKind, ThreadStatus
from ..core.state import ThreadState
from ..definition.models import Role
from ..store.base import StoredEvent

if TYPE_CHECKING:  # a type only: the Temporal workflow imports this module, and no actor
    from ..actors.progress import OnProgress

ActorFor = Callable[[str, Role], Any]  # (role name, role) -> Actor
OnEvent = Callable[[StoredEvent, ThreadState], None]
OnChildEvent = Callable[[str, StoredEvent, ThreadState], None]  # (child thread id, ...)


@dataclass
class RunOptions:
    max_steps: int | None = None
    max_cost_usd: float | None = None  # a subgraph's child: what its parent's limit leaves
    model: str | None = None  # --model: overrides every role's model
    on_event: OnEvent | None = None
    on_child_event: OnChildEvent | None = None  # events of subgraph children, any depth
    on_progress: OnProgress | None = None  # inside a step: tokens, tool calls (not recorded)
    max_retries: int = 2  # the provider SDK's own retries
    timeout: float = 600.0  # seconds per provider call
    interactive: bool = False  # a human role may ask on this terminal
    poll_seconds: float = 1.0  # how often a running thread looks for a cancel from elsewhere
    replay_pace: float = 0.0  # --pace: a replay at its recorded pace (1.0), N times faster (N)


@dataclass
class ThreadResult:
    thread_id: str
    state: ThreadStatus
    final: str | None
    reason: str | None
    steps: int
    cost_usd: float
    path: list[str] = field(default_factory=list)
    kind: SuspendKind | None = None  # why it suspended
    ending: str | None = None  # the ending it reached (docs/format.md section 12)
    recovery: str | None = None  # the ending's rendered `recovery`: what to do next
    worktree: dict[str, Any] | None = None  # the thread's branch and what was committed there

    @classmethod
    def of(cls, thread_id: str, state: ThreadState, path: list[str]) -> ThreadResult:
        """`path` is the log's (`ThreadView.path`): the state keeps no list of its steps."""
        return cls(
            thread_id,
            state.status,
            state.final,
            state.reason,
            state.committed,
            state.cost_usd,
            path,
            state.suspend_kind,
            ending=state.ending,
            recovery=state.recovery,
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "thread": self.thread_id,
            "state": str(self.state),
            "final": self.final,
            "reason": self.reason,
            "steps": self.steps,
            "cost_usd": round(self.cost_usd, 6),
        }
        if self.ending is not None:
            data["ending"] = self.ending
            data["recovery"] = self.recovery
        if self.worktree is not None:
            data["worktree"] = self.worktree
        return data
