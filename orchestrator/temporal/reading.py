"""Reading a thread on Temporal: its row from the workflow's memo, its log from queries.

`row_of` builds a `threads list` row from what the server lists (the memo the workflow keeps),
without a worker. `Follower` reads the log page by page through the workflow's `events` query
(a worker answers it), folds it with `engine.apply` and shows each new event as a local run
shows it, until the thread leaves `running`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from temporalio.client import Client, WorkflowExecution, WorkflowExecutionStatus, WorkflowHandle
from temporalio.service import RPCError

from ..core import engine
from ..core.events import ThreadStarted, ThreadStatus
from ..core.state import ThreadState
from ..definition.models import Graph
from ..run.options import RunOptions
from ..run.session import Notify, SessionError
from ..store.base import StoredEvent, ThreadRow
from .client import READ_TIMEOUT, answered, no_worker
from .codec import graph_from_snapshot, stored_from_dict
from .workflow import MEMO_KEY, WORKFLOW_NAME, ThreadWorkflow

POLL_MIN, POLL_MAX = 0.05, 0.5  # seconds between reads while following a thread
CLOSED_AS = {
    WorkflowExecutionStatus.TERMINATED: "its workflow was terminated in Temporal",
    WorkflowExecutionStatus.TIMED_OUT: "its workflow timed out in Temporal",
    WorkflowExecutionStatus.FAILED: "its workflow failed in Temporal",
}


@dataclass(frozen=True)
class TemporalRow(ThreadRow):
    """A thread's row, with where its workflow runs and whether its current run has closed."""

    task_queue: str = ""
    closed: bool = False
    worktree: dict[str, Any] | None = None  # the thread's branch (vcs/shared.SharedBranch)
    forked_from: dict[str, Any] | None = None  # a fork's origin: {thread, step} (forking.py)
    text: str = ""  # the start of its inputs' text, for `threads list --search`


async def row_of(found: WorkflowExecution) -> TemporalRow:
    memo: dict[str, Any] = await found.memo_value(MEMO_KEY, default={})
    created = found.start_time.timestamp()
    state = str(memo.get("state") or ThreadStatus.RUNNING)
    reason = str(memo.get("reason") or "")
    if found.status in CLOSED_AS and not ThreadStatus(state).ended:
        state, reason = str(ThreadStatus.FAILED), CLOSED_AS[found.status]
    return TemporalRow(
        id=found.id,
        graph=str(memo.get("graph") or ""),
        graph_hash=str(memo.get("graph_hash") or ""),
        graph_path=str(memo.get("graph_path") or ""),
        state=ThreadStatus(state),
        steps=int(memo.get("steps") or 0),
        cost_usd=float(memo.get("cost_usd") or 0.0),
        input_tokens=int(memo.get("input_tokens") or 0),
        output_tokens=int(memo.get("output_tokens") or 0),
        created=created,
        updated=float(memo.get("updated") or created),
        reason=reason,
        workspace=str(memo.get("workspace") or ""),
        seq=int(memo.get("seq") or 0),
        task_queue=found.task_queue,
        closed=found.status != WorkflowExecutionStatus.RUNNING,
        worktree=memo.get("worktree") if isinstance(memo.get("worktree"), dict) else None,
        forked_from=memo.get("forked_from") if isinstance(memo.get("forked_from"), dict) else None,
        title=str(memo.get("title") or ""),
        labels=labels if isinstance(labels := memo.get("labels"), dict) else {},
        text=str(memo.get("text") or ""),
    )


class Follower:
    """A thread's log as read from its workflow, shown as it grows."""

    def __init__(self, handle: WorkflowHandle[Any, Any], queue: str, options: RunOptions):
        self.handle = handle
        self.queue = queue
        self.options = options
        self.state = ThreadState()
        self.events: list[StoredEvent] = []
        self.log: list[dict[str, Any]] = []

    @property
    def seq(self) -> int:
        return len(self.events)

    async def read(self, *, quiet_upto: float = 0, notify: Notify | None = None) -> bool:
        """Fold the events appended since the last read, each shown through
        `options.on_event` unless its number is at most `quiet_upto`; True if there were any.
        With `notify`, a worker slow to answer is waited for (and said so, once)."""
        waiting = False
        while True:
            try:
                return await self._read(quiet_upto)
            except SessionError as exc:
                if notify is None or exc.message != no_worker(self.queue).message:
                    raise
                if not waiting:
                    notify(f"{exc.message}; waiting for one")
                waiting = True

    async def _read(self, quiet_upto: float) -> bool:
        new = False
        while True:
            call = self.handle.query(ThreadWorkflow.events, self.seq, rpc_timeout=READ_TIMEOUT)
            page = await answered(call, self.queue)
            for data in page.events:
                stored = stored_from_dict(data)
                engine.apply(self.state, stored.event)
                self.events.append(stored)
                self.log.append(data)
                if stored.seq > quiet_upto and self.options.on_event is not None:
                    self.options.on_event(stored, self.state)
            new = new or bool(page.events)
            if not page.events or self.seq >= page.seq:
                return new

    async def follow(self, notify: Notify) -> None:
        """Read until the thread stops running; a worker that is slow to answer is waited for."""
        pause = POLL_MIN
        while self.state.status == ThreadStatus.RUNNING:
            new = await self.read(notify=notify)
            if self.state.status != ThreadStatus.RUNNING:
                return
            pause = POLL_MIN if new else min(POLL_MAX, pause * 2)
            await asyncio.sleep(pause)


def summary_line(graph: Graph, started: ThreadStarted) -> str:
    """A line for Temporal's UI: the graph and the thread's title (core/titles.py)."""
    return f"{graph.name}: {started.title}" if started.title else graph.name


def carried_graph(carried: dict[str, Any]) -> Graph:
    """The graph a workflow carries, with its subgraph roles' graphs (its hash is theirs too)."""
    return graph_from_snapshot(carried["snapshot"], carried.get("subgraphs"))


async def latest_runs(client: Client) -> list[WorkflowExecution]:
    """The latest run of every thread's workflow on the server."""
    latest: dict[str, WorkflowExecution] = {}
    try:
        async for found in client.list_workflows(f'WorkflowType = "{WORKFLOW_NAME}"'):
            seen = latest.get(found.id)
            if seen is None or found.start_time > seen.start_time:
                latest[found.id] = found
    except RPCError as exc:
        raise SessionError(f"Temporal: {exc.message}", usage=False) from None
    return list(latest.values())
