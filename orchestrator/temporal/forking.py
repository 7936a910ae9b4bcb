"""Forking a thread on Temporal (docs/format.md section 20): a new workflow, the original untouched.

A mixin of the Temporal session, as `CarriedGraphs` is, so that the session stays one idea a
module. `fork` does on Temporal what the local session's does in its store:

1. The original's log (a query) and the graph it carries (its snapshot, a query) are read;
   `core/fork.fork_events` makes the fork's first events from them, pure: the original's
   events up to step N under the new id, `ThreadForked`, and with a replacement reply, step N
   started and committed with it (validated against the role's contract, as a person's
   answer). A fork it refuses is refused here, before anything exists.
2. A thread whose files live on a shared branch (vcs/shared.py) gets a branch of its own in
   the same repository, at the commit step N started from (`fork_branch`).
3. The fork's workflow is started as a thread continued as new is (`ThreadInput` carrying its
   log): it folds the events, finds itself running and goes on through the driver on the
   workers like any thread: step N decided again from its edge (its prompt re-rendered, with
   the message), or, after a replacement reply, the edge that reply picks.

`forks` lists the forks on the server from the workflows' memos (each fork's memo holds its
lineage), as `threads list` reads its rows.

`reuse`: the original's steps after the fork point travel with the fork (temporal/reuse.py):
the workflow hands a step equal to the original's the kept reply, and the activity plays it
instead of calling the actor, until the first difference; replies are reused, not files (as
locally). The original workflow is only read (two queries), never signalled or updated.
"""

from __future__ import annotations

import time
from collections.abc import Coroutine, Mapping
from typing import Any, Protocol, TypeVar

from temporalio.client import WorkflowHandle

from ..core.fork import fork_events, reply_text
from ..core.state import ThreadState
from ..definition.models import Graph
from ..run.session import SessionError
from ..store.base import StoredEvent
from ..store.ids import new_thread_id
from ..vcs.git_safe import WorktreeError
from ..vcs.shared import SharedBranch, fork_branch
from .codec import stored_to_dict, subgraph_snapshots
from .inputs import ThreadInput
from .reading import TemporalRow, carried_graph
from .reuse import kept_steps

T = TypeVar("T")


class _Host(Protocol):
    task_queue: str
    heartbeat_seconds: float

    def _sync(self, coro: Coroutine[Any, Any, T]) -> T: ...
    async def _handle(self, thread_id: str) -> WorkflowHandle[Any, Any]: ...
    async def _carried_by_id(self, thread_id: str, queue: str) -> dict[str, Any]: ...
    async def athread(self, thread_id: str) -> TemporalRow: ...
    async def aevents(self, thread_id: str, after: int = 0) -> list[StoredEvent]: ...
    async def _start_run(self, params: ThreadInput, task_queue: str, summary: str) -> None: ...
    def state(self, thread_id: str) -> ThreadState: ...
    async def athreads(self, state: str | None = None) -> list[TemporalRow]: ...


class Forks:
    def forks(self: _Host) -> dict[str, dict[str, Any]]:
        """Thread id -> {thread, step}: each fork on the server and where it was forked from
        (the lineage its workflow's memo holds: no worker needed)."""
        rows = self._sync(self.athreads())
        return {r.id: dict(r.forked_from) for r in rows if r.forked_from}

    def fork(
        self: _Host,
        thread_id: str,
        *,
        at: int | None = None,
        reply: str | None = None,
        status: str | None = None,
        set: Mapping[str, Any] | None = None,  # noqa: A002  (the contract's name: --set)
        message: str | None = None,
        reuse: bool = False,
        title: str | None = None,
        graph: Graph | None = None,
    ) -> str:
        """A fork of the thread, started on the workers (see the module's docstring); its id.
        `graph`: the graph the fork runs on (default: the one the original carries)."""
        return self._sync(
            Forks.afork(
                self,
                thread_id,
                at=at,
                reply=reply,
                status=status,
                set=set,
                message=message,
                reuse=reuse,
                title=title,
                graph=graph,
            )
        )

    async def afork(
        self: _Host,
        thread_id: str,
        *,
        at: int | None = None,
        reply: str | None = None,
        status: str | None = None,
        set: Mapping[str, Any] | None = None,  # noqa: A002
        message: str | None = None,
        reuse: bool = False,
        title: str | None = None,
        graph: Graph | None = None,
    ) -> str:
        row = await self.athread(thread_id)
        queue = row.task_queue or self.task_queue
        carried = await self._carried_by_id(row.id, queue)
        if graph is not None:  # another graph to fork onto: carried as a resume's changed one
            carried = {
                "snapshot": graph.model_dump(mode="json"),
                "graph_path": str(graph.path or row.graph_path),
                "subgraphs": subgraph_snapshots(graph),
            }
        graph = carried_graph(carried)
        stored = await self.aevents(row.id)
        original = [s.event for s in stored]
        new_id = new_thread_id()
        text = reply_text(graph, original, at, reply, status, set)
        made = fork_events(
            original,
            graph,
            new_id=new_id,
            at=at,
            reply=text,
            message=message,
            reuse=reuse,
            title=title,
        )
        shared = None
        if row.worktree is not None:
            try:
                original_branch = SharedBranch.from_dict(row.worktree)
                shared = fork_branch(original_branch, new_id, made.at)
            except WorktreeError as exc:
                raise SessionError(f"cannot give the fork a branch: {exc}", usage=False) from None
        # The original's events keep their times; ThreadForked (and step N's reply) are now.
        copied = len(made.events) - (3 if text is not None else 1)
        now = time.time()
        log = [
            stored_to_dict(i + 1, stored[i].at if i < copied else now, event)
            for i, event in enumerate(made.events)
        ]
        params = ThreadInput(
            thread_id=new_id,
            snapshot=carried["snapshot"],
            events=log,
            graph_path=str(carried.get("graph_path") or row.graph_path),
            heartbeat_seconds=self.heartbeat_seconds,
            subgraphs=dict(carried.get("subgraphs") or {}),
            worktree=shared.to_dict() if shared is not None else None,
            reuse=kept_steps(row.id, original, made.at) if reuse else None,
        )
        summary = f"{row.graph} (fork of {row.id} at step {made.at})"
        await self._start_run(params, queue, summary=title or summary)
        return new_id
