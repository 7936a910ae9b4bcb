"""`Thread`: the one thread-shaped value the client returns (docs/api.md).

`run`, `answer`, `resume`, `cancel`, `get` and `list` all return a `Thread`, local or on
Temporal. It is a snapshot: it does not change when the thread moves on (ask `get` again, or
follow `events`). `state` is the thread's state (docs/format.md section 7); there is no second
name for it. `list` builds its threads from the summary rows alone (no log is read, no worker is
asked on Temporal), so `final`, `ending`, `path` and `question` are empty there: `get` fills them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core import engine
from ..core.events import SuspendKind, ThreadStatus
from ..core.steps import path_of
from ..run.options import ThreadResult
from ..run.waiting import Question
from ..store.base import StoredEvent, ThreadRow


@dataclass(frozen=True)
class Thread:
    id: str
    graph: str  # the graph's name
    state: ThreadStatus  # running, waiting, suspended, completed, failed or cancelled
    steps: int  # committed steps
    cost_usd: float
    final: str | None = None  # the prompt of the edge that reached $END
    reason: str | None = None  # why it suspended, failed or was cancelled
    kind: SuspendKind | None = None  # why it suspended, as a stable word
    ending: str | None = None  # the ending it reached (docs/format.md section 12)
    recovery: str | None = None  # the ending's `recovery`: what to do next
    path: tuple[str, ...] = ()  # the roles of its committed steps, then $END
    question: Question | None = None  # what a waiting thread asks, and the answers it takes
    worktree: Mapping[str, Any] | None = None  # its git branch, when it has one
    workspace: str = ""
    created: float = 0.0  # unix times
    updated: float = 0.0
    forked_from: Mapping[str, Any] | None = None  # a fork's origin: {thread, step} (`get`)
    title: str = ""  # what it is for (docs/threads.md, "Titles, labels and search")
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def ended(self) -> bool:
        """Completed, failed or cancelled: nothing runs it any more (a completed thread can
        still be resumed with a message)."""
        return self.state.ended

    def to_dict(self) -> dict[str, Any]:
        """The `--json` result's keys (`thread`, `state`, ...) and the rest, for a JSON API."""
        data: dict[str, Any] = {
            "thread": self.id,
            "title": self.title,
            "labels": dict(self.labels),
            "graph": self.graph,
            "state": str(self.state),
            "steps": self.steps,
            "cost_usd": round(self.cost_usd, 6),
            "final": self.final,
            "reason": self.reason,
            "ending": self.ending,
            "recovery": self.recovery,
            "path": list(self.path),
        }
        if self.kind is not None:
            data["kind"] = str(self.kind)
        if self.question is not None:
            data["question"] = {
                "step": self.question.step,
                "role": self.question.role_name,
                "prompt": self.question.prompt,
                "statuses": [form.status for form in self.question.forms],
            }
        if self.worktree is not None:
            data["worktree"] = dict(self.worktree)
        if self.forked_from is not None:
            data["forked_from"] = dict(self.forked_from)
        return data


def of_result(
    result: ThreadResult, graph: str, question: Question | None, row: ThreadRow | None = None
) -> Thread:
    """What a run, an answer or a resume returned (with the title and labels of its `row`)."""
    return Thread(
        title=row.title if row else "",
        labels=dict(row.labels) if row else {},
        id=result.thread_id,
        graph=graph,
        state=ThreadStatus(result.state),
        steps=result.steps,
        cost_usd=result.cost_usd,
        final=result.final,
        reason=result.reason,
        kind=result.kind,
        ending=result.ending,
        recovery=result.recovery,
        path=tuple(result.path),
        question=question,
        worktree=result.worktree,
    )


def of_row(row: ThreadRow) -> Thread:
    """A thread as `list` shows it: its summary row alone."""
    return Thread(
        id=row.id,
        graph=row.graph,
        state=ThreadStatus(row.state),
        steps=row.steps,
        cost_usd=row.cost_usd,
        reason=row.reason or None,
        workspace=row.workspace,
        created=row.created,
        updated=row.updated,
        title=row.title,
        labels=dict(row.labels),
    )


def of_log(row: ThreadRow, events: Sequence[StoredEvent], question: Question | None) -> Thread:
    """A thread as `get` shows it: its row, with its log folded for the rest."""
    if not events:
        return of_row(row)
    state = engine.fold([s.event for s in events])
    return Thread(
        id=row.id,
        graph=row.graph,
        state=state.status,
        steps=state.committed,
        cost_usd=state.cost_usd,
        final=state.final,
        reason=state.reason,
        kind=state.suspend_kind,
        ending=state.ending,
        recovery=state.recovery,
        path=tuple(path_of((s.event for s in events), state.ending)),
        question=question,
        workspace=state.workspace or row.workspace,
        created=row.created,
        updated=row.updated,
        forked_from=dict(state.forked_from) if state.forked_from else None,
        title=row.title,
        labels=dict(row.labels),
    )


__all__ = ["Thread", "of_log", "of_result", "of_row"]
