"""`TemporalSession`: a thread's life on Temporal, with the methods of `run/session.Session`.

The command line picks this session when `--temporal ADDRESS` (or `ORCHESTRATOR_TEMPORAL`) is
given and otherwise does exactly what it does for a local thread:

    preflight, start        the graph lints clean, the inputs fit; the workflow is started with
                            the thread's first event, its graph snapshot and how to run it; on
                            a git workspace, with its branch in a repository the workers reach
                            (vcs/shared.py: each worker's worktree, a commit per step)
    advance                 a request (resume, answer) as an update, then the thread's events
                            followed live (queries) until it leaves `running`
    resume, answer, cancel  updates judged in the workflow; a completed thread is resumed as a
                            new run of its workflow, carrying its log
    thread, threads         rows from the workflows' memos (no log read, no worker needed)
    events, state, view     the log, read from the workflow (a worker answers the query)
    graph_for               the graph the thread carries, or a changed one to resume with

Sync methods run their own event loop; the async ones run in the caller's.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import gc
import math
import os
import time
import weakref
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from temporalio.client import Client, WorkflowExecution, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError, RPCStatusCode

from ..actors.recording import Recording, recording_from_events
from ..core import engine
from ..core.events import ThreadStarted, ThreadStatus
from ..core.outcomes import Answered, CancelRequested, Outcome, ResumeRequested
from ..core.state import ThreadState
from ..core.steps import ThreadView, path_of, thread_view
from ..definition.graphdiff import graph_changes
from ..definition.loader import load_graph
from ..definition.models import Graph
from ..definition.problems import GraphError, has_errors
from ..linter import lint
from ..run.options import ActorFor, RunOptions, ThreadResult
from ..run.preflight import check_graph, check_inputs, workspace_folder
from ..run.session import Notify, SessionError, Started
from ..run.waiting import Question, answer_errors, question_of
from ..store.base import StoredEvent, ThreadRow
from ..store.ids import new_thread_id
from ..vcs.git_safe import WorktreeError
from ..vcs.shared import SharedBranch, share
from ..vcs.worktrees import needs_isolation
from . import DEFAULT_TASK_QUEUE
from .client import READ_TIMEOUT, answered, connect
from .codec import graph_from_snapshot, outcome_to_dict, stored_from_dict, stored_to_dict
from .reading import Follower, TemporalRow, row_of
from .workflow import NOT_ON_TEMPORAL, WORKFLOW_NAME, ResumeInput, ThreadInput, ThreadWorkflow

T = TypeVar("T")
OPEN: weakref.WeakSet[TemporalSession] = weakref.WeakSet()


@atexit.register
def _let_go() -> None:
    """A Temporal client destroyed while the interpreter finalizes can abort the process
    (temporalio sdk-python issue 300): destroy them before, while Python still runs."""
    for session in list(OPEN):
        session._client = None
    gc.collect()


HEARTBEAT_ENV = "ORCHESTRATOR_TEMPORAL_HEARTBEAT"  # seconds before a silent step is lost


class TemporalSession:
    """A thread's life on Temporal (see the module's docstring). `close()` lets go of the
    client; one still open when the interpreter exits is let go of then (see `_let_go`)."""

    def __init__(
        self,
        address: str,
        *,
        task_queue: str = DEFAULT_TASK_QUEUE,
        notify: Notify | None = None,
        heartbeat_seconds: float | None = None,
    ):
        self.address = address
        self.task_queue = task_queue
        self.notify: Notify = notify or (lambda text: None)
        self.heartbeat_seconds = heartbeat_seconds or float(os.environ.get(HEARTBEAT_ENV) or 10)
        self.directory = None  # no local store: the threads live in Temporal
        self._client: Client | None = None
        self._fresh: dict[str, int] = {}  # threads started here: shown from their first step
        OPEN.add(self)

    def close(self) -> None:
        self._client = None
        gc.collect()

    def __enter__(self) -> TemporalSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def client(self) -> Client:
        if self._client is None:
            self._client = await connect(self.address)
        return self._client

    def _sync(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run(coro)

    async def _handle(self, thread_id: str) -> WorkflowHandle[Any, Any]:
        return (await self.client()).get_workflow_handle(thread_id)

    # ------------------------------------------------------------------ starting

    def preflight(
        self,
        graph: Graph,
        *,
        workspace: str | os.PathLike[str] | None,
        replay: bool,
        model: str | None = None,  # prices are the workers' concern too
    ) -> Path:
        """The checks of a local run that hold on this machine. Credentials, programs and the
        sandbox are the workers' (a step that lacks one suspends saying so)."""
        if replay:
            raise SessionError("--replay runs on this machine: drop --temporal to replay")
        if any(r.graph for r in graph.roles.values()):
            raise SessionError(NOT_ON_TEMPORAL, usage=False)
        check_graph(graph)
        return workspace_folder(workspace)

    def start(
        self,
        graph: Graph,
        inputs: dict[str, Any],
        *,
        folder: Path,
        in_place: bool = False,
        replay: bool = False,
        thread_id: str | None = None,
        options: RunOptions | None = None,
    ) -> Started:
        return self._sync(
            self.astart(
                graph,
                inputs,
                folder=folder,
                in_place=in_place,
                thread_id=thread_id,
                options=options,
            )
        )

    async def astart(
        self,
        graph: Graph,
        inputs: dict[str, Any],
        *,
        folder: Path,
        in_place: bool = False,
        thread_id: str | None = None,
        options: RunOptions | None = None,
    ) -> Started:
        """Start the thread's workflow; it runs on the workers from now on."""
        check_inputs(graph, inputs)
        options = options or RunOptions()
        thread_id = thread_id or new_thread_id()
        shared = None if in_place or not needs_isolation(graph) else _share(folder, thread_id)
        if shared is not None:
            self.notify(
                f"the thread's files: branch {shared.branch} of {shared.repository}, from "
                f"{shared.base[:10]}; each worker commits every step there (docs/scale-out.md)"
            )
        started = ThreadStarted(thread_id, graph.name, graph.hash, dict(inputs), str(folder))
        first = stored_to_dict(1, time.time(), started)
        params = ThreadInput(
            thread_id=thread_id,
            snapshot=graph.model_dump(mode="json"),
            events=[first],
            graph_path=str(graph.path or ""),
            max_steps=options.max_steps,
            model=options.model,
            heartbeat_seconds=self.heartbeat_seconds,
            worktree=shared.to_dict() if shared else None,
        )
        await self._start_run(params, self.task_queue, summary=_summary(graph, inputs))
        self._fresh[thread_id] = 1
        return Started(thread_id, folder, None, stored_from_dict(first))

    async def _start_run(self, params: ThreadInput, task_queue: str, summary: str) -> None:
        client = await self.client()
        try:
            await client.start_workflow(
                ThreadWorkflow.run,
                params,
                id=params.thread_id,
                task_queue=task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
                static_summary=summary,
            )
        except RPCError as exc:
            raise SessionError(f"Temporal refused to start the thread: {exc.message}") from None

    # ------------------------------------------------------------------ advancing

    async def advance(
        self,
        graph: Graph,
        thread_id: str,
        *,
        options: RunOptions | None = None,
        actor_for: ActorFor | None = None,
        replay: Any = None,
        first: Outcome | None = None,
    ) -> ThreadResult:
        """Send `first` (a resume or an answer), then follow the thread until it stops running.

        Ctrl-C while following interrupts the thread, as it does a local run: the step in
        flight stops and the thread suspends (or, at a person's step, waits)."""
        if actor_for is not None or replay is not None:
            raise SessionError(
                "on Temporal the roles' own actors play them (no replay, no stand-ins)"
            )
        options = options or RunOptions()
        handle = await self._handle(thread_id)
        row = await self.athread(thread_id)
        follower = Follower(handle, row.task_queue or self.task_queue, options)
        # A thread started here is shown from its first step; any other from what comes next.
        await follower.read(quiet_upto=self._fresh.pop(thread_id, math.inf), notify=self.notify)
        if first is not None:
            await self._request(handle, row, graph, follower, first, options)
            await follower.read()
        try:
            await follower.follow(self.notify)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await answered(handle.execute_update(ThreadWorkflow.interrupt), follower.queue)
                await follower.read()
            raise
        path = path_of((stored.event for stored in follower.events), follower.state.ending)
        return ThreadResult.of(thread_id, follower.state, path)

    async def _request(
        self,
        handle: WorkflowHandle[Any, Any],
        row: TemporalRow,
        graph: Graph,
        follower: Follower,
        first: Outcome,
        options: RunOptions,
    ) -> None:
        queue = follower.queue
        if isinstance(first, Answered):
            await answered(handle.execute_update(ThreadWorkflow.answer, first.text), queue)
            return
        if not isinstance(first, ResumeRequested):
            raise TypeError(f"not a request for advance(): {first!r}")
        if row.closed:  # a completed thread continues as a new run of its workflow
            engine.judge(graph, follower.state, first)  # raises Refused, as the workflow would
            params = ThreadInput(
                thread_id=row.id,
                snapshot=graph.model_dump(mode="json"),
                events=follower.log,
                graph_path=str(graph.path or row.graph_path),
                max_steps=options.max_steps,
                model=options.model,
                first=outcome_to_dict(first),
                heartbeat_seconds=self.heartbeat_seconds,
                worktree=row.worktree,
            )
            await self._start_run(params, queue, summary=f"{row.graph} (resumed)")
            return
        carried = await self._carried(handle, queue)
        changed = graph.hash != graph_from_snapshot(carried["snapshot"]).hash
        request = ResumeInput(
            message=first.message,
            max_steps=options.max_steps,
            model=options.model,
            snapshot=graph.model_dump(mode="json") if changed else None,
            graph_path=str(graph.path) if changed and graph.path else None,
        )
        await answered(handle.execute_update(ThreadWorkflow.resume, request), queue)

    async def resume(
        self, graph: Graph, thread_id: str, *, message: str | None = None, **kw: Any
    ) -> ThreadResult:
        return await self.advance(graph, thread_id, first=ResumeRequested(message), **kw)

    async def answer(self, graph: Graph, thread_id: str, text: str, **kw: Any) -> ThreadResult:
        return await self.advance(graph, thread_id, first=Answered(text), **kw)

    async def outcome(self, thread_id: str) -> dict[str, Any]:
        """The result object once the thread's workflow closes (completed, failed, cancelled)."""
        result: dict[str, Any] = await (await self._handle(thread_id)).result()
        return result

    def cancel(self, thread_id: str, reason: str = "cancelled by the user") -> ThreadRow:
        return self._sync(self.acancel(thread_id, reason))

    async def acancel(self, thread_id: str, reason: str = "cancelled by the user") -> ThreadRow:
        row = await self.athread(thread_id)
        if row.closed:  # judged on the row: refused, since the thread has ended (J13)
            engine.judge(None, ThreadState(thread_id=row.id, status=row.state), CancelRequested())
        handle = await self._handle(row.id)
        await answered(handle.execute_update(ThreadWorkflow.cancel, reason), row.task_queue)
        return await self.athread(row.id)

    def worktree(self, thread_id: str) -> None:
        return None  # a thread on Temporal works in its folder itself

    # ------------------------------------------------------------------ reading

    def thread(self, thread_id: str) -> TemporalRow:
        return self._sync(self.athread(thread_id))

    async def athread(self, thread_id: str) -> TemporalRow:
        """A thread's row by id, or by a unique prefix or suffix of its id."""
        client = await self.client()
        try:
            found = await client.get_workflow_handle(thread_id).describe(rpc_timeout=READ_TIMEOUT)
            if found.workflow_type == WORKFLOW_NAME:
                return await row_of(found)
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                raise SessionError(f"Temporal: {exc.message}", usage=False) from None
        matches = [
            r
            for r in await self.athreads()
            if r.id.startswith(thread_id) or r.id.endswith(thread_id)
        ]
        if len(matches) != 1:
            how = "no" if not matches else f"{len(matches)} threads match, no single"
            raise SessionError(
                f"{how} thread '{thread_id}' on Temporal at {self.address} "
                "(see `orchestrator threads list --temporal ADDRESS`)"
            )
        return matches[0]

    def threads(self, state: str | None = None) -> list[ThreadRow]:
        return list(self._sync(self.athreads(state)))

    async def athreads(self, state: str | None = None) -> list[TemporalRow]:
        """Every thread on the server, oldest first: the latest run of each workflow."""
        client = await self.client()
        latest: dict[str, WorkflowExecution] = {}
        try:
            async for found in client.list_workflows(f'WorkflowType = "{WORKFLOW_NAME}"'):
                seen = latest.get(found.id)
                if seen is None or found.start_time > seen.start_time:
                    latest[found.id] = found
        except RPCError as exc:
            raise SessionError(f"Temporal: {exc.message}", usage=False) from None
        rows = [await row_of(found) for found in latest.values()]
        rows = [r for r in rows if state is None or r.state == state]
        return sorted(rows, key=lambda r: (r.created, r.id))

    def events(self, thread_id: str) -> list[StoredEvent]:
        return self._sync(self.aevents(thread_id))

    async def aevents(self, thread_id: str) -> list[StoredEvent]:
        row = await self.athread(thread_id)
        follower = Follower(await self._handle(row.id), row.task_queue, RunOptions())
        await follower.read(quiet_upto=math.inf)
        return follower.events

    def state(self, thread_id: str) -> ThreadState:
        return engine.fold([s.event for s in self.events(thread_id)])

    def child_events(self, thread_id: str) -> list[StoredEvent] | None:
        """None: a thread on Temporal has no subgraph children."""
        return None

    def recording(self, thread_id: str) -> Recording:
        """The thread's recording (a thread on Temporal has no subgraph children)."""
        return recording_from_events([s.event for s in self.events(thread_id)])

    def view(self, thread_id: str) -> ThreadView:
        return thread_view([s.event for s in self.events(thread_id)])

    async def _carried(self, handle: WorkflowHandle[Any, Any], queue: str) -> dict[str, Any]:
        call = handle.query(ThreadWorkflow.graph_snapshot, rpc_timeout=READ_TIMEOUT)
        carried: dict[str, Any] = await answered(call, queue)
        return carried

    def graph_for(self, row: ThreadRow, graph_arg: str | None = None) -> Graph:
        """The graph the thread carries; with `graph_arg`, that graph (linted), the changes
        noted: a resume then continues with it."""
        queue = getattr(row, "task_queue", self.task_queue)
        carried = self._sync(self._carried_by_id(row.id, queue))
        if graph_arg is None:
            return graph_from_snapshot(carried["snapshot"])
        graph = load_graph(graph_arg)
        problems = lint(graph)
        if has_errors(problems):
            raise SessionError(
                "the graph has errors; fix them, then resume", usage=False, problems=problems
            )
        current = graph_from_snapshot(carried["snapshot"])
        if graph.hash != current.hash:
            changes = graph_changes(carried["snapshot"], graph.model_dump(mode="json"))
            self.notify(
                f"the graph changed since thread {row.id} started "
                f"({current.hash[:15]}… → {graph.hash[:15]}…):\n"
                + "\n".join(f"  - {c}" for c in changes or ["(only formatting or library roles)"])
            )
        return graph

    def graph_of(self, row: ThreadRow) -> Graph | None:
        """The graph the thread carries, to show (as Session.graph_of); None when no worker
        answers for it."""
        try:
            return self.graph_for(row)
        except (SessionError, GraphError, ValueError, RuntimeError):
            return None

    async def _carried_by_id(self, thread_id: str, queue: str) -> dict[str, Any]:
        return await self._carried(await self._handle(thread_id), queue)

    def question(self, thread_id: str, graph: Graph | None = None) -> Question | None:
        """What a waiting thread asks (as Session.question), from the graph it carries."""
        row = self.thread(thread_id)
        state = self.state(row.id)
        if state.status != ThreadStatus.WAITING:
            return None
        return question_of(state, (graph or self.graph_for(row)).roles)

    def check_answer(self, graph: Graph, thread_id: str, text: str) -> tuple[str, ...]:
        """Why the moderator would refuse this answer (as Session.check_answer)."""
        return answer_errors(graph, self.state(thread_id), text)

    def prune(self, *, dry_run: bool = False, branches: bool = False) -> list[Any]:
        raise SessionError("threads on Temporal have no worktrees here: nothing to prune")


def _share(folder: Path, thread_id: str) -> SharedBranch | None:
    """The thread's branch in the repository its workers reach, when `folder` is in a git
    repository (vcs/shared.py); None to work in the folder itself."""
    try:
        return share(folder, thread_id)
    except WorktreeError as exc:
        raise SessionError(
            f"cannot give the thread a branch its workers share: {exc} "
            "(--in-place works in the folder itself)",
            usage=False,
        ) from None


def _summary(graph: Graph, inputs: dict[str, Any]) -> str:
    """A line for Temporal's UI: the graph and the first text input."""
    text = next((str(v) for v in inputs.values() if isinstance(v, str) and v.strip()), "")
    text = " ".join(text.split())
    return f"{graph.name}: {text[:120]}" if text else graph.name
