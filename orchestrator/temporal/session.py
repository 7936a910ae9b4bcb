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
    fork                    a new workflow from the original's log up to step N (forking.py)

It implements `ThreadSession` (run/contract.py). Sync methods run their own event loop (on a
thread of their own when the caller's thread already runs one); the async ones (`athread`,
`aevents`, ...) run in the caller's. Reads wait on the network: `blocking` is True.
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
from collections.abc import Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from temporalio.client import Client, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError, RPCStatusCode

from ..actors.recording import Recording, recording_from_events
from ..core import engine
from ..core.allowed import allowed
from ..core.events import ThreadStarted, ThreadStatus
from ..core.outcomes import Answered, CancelRequested, Outcome, ResumeRequested
from ..core.state import ThreadState
from ..core.steps import ThreadView, path_of, thread_view
from ..core.titles import ThreadQuery, titled
from ..definition.models import Graph
from ..run.options import ActorFor, RunOptions, ThreadResult
from ..run.preflight import check_graph, check_inputs, workspace_folder
from ..run.prune import Pruned
from ..run.session import Notify, SessionError, Started
from ..run.waiting import Question, answer_errors, question_for
from ..store.base import StoredEvent, ThreadNotFound, ThreadRow
from ..store.ids import new_thread_id
from ..vcs.git_safe import WorktreeError
from ..vcs.shared import SharedBranch, share
from ..vcs.worktrees import needs_isolation
from . import DEFAULT_TASK_QUEUE
from .carried import CarriedGraphs
from .client import READ_TIMEOUT, answered, connect
from .codec import (
    outcome_to_dict,
    stored_from_dict,
    stored_to_dict,
    subgraph_snapshots,
)
from .forking import Forks
from .inputs import ReplayInput
from .reading import Follower, TemporalRow, carried_graph, latest_runs, row_of, summary_line
from .workflow import WORKFLOW_NAME, ResumeInput, ThreadInput, ThreadWorkflow

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


class TemporalSession(CarriedGraphs, Forks):
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

    blocking = True  # reads wait on the server (and a worker): not on a server's loop

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
        """Run `coro` to its end; inside a running loop (which cannot host another), on a
        thread of its own, so that a sync call works from async code too."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)
        with ThreadPoolExecutor(1, thread_name_prefix="orchestrator-temporal") as pool:
            return pool.submit(asyncio.run, coro).result()

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
        title: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> Started:
        return self._sync(
            self.astart(
                graph,
                inputs,
                folder=folder,
                in_place=in_place,
                replay=replay,
                thread_id=thread_id,
                options=options,
                title=title,
                labels=labels,
            )
        )

    async def astart(
        self,
        graph: Graph,
        inputs: dict[str, Any],
        *,
        folder: Path,
        in_place: bool = False,
        replay: bool = False,
        thread_id: str | None = None,
        options: RunOptions | None = None,
        title: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> Started:
        """Start the thread's workflow; it runs on the workers from now on (a replay's once
        `advance` gives it the recording)."""
        check_inputs(graph, inputs)
        options = options or RunOptions()
        thread_id = thread_id or new_thread_id()
        shared = (
            None if in_place or replay or not needs_isolation(graph) else _share(folder, thread_id)
        )
        if shared is not None:
            self.notify(
                f"the thread's files: branch {shared.branch} of {shared.repository}, from "
                f"{shared.base[:10]}; each worker commits every step there (docs/scale-out.md)"
            )
        started = ThreadStarted(thread_id, graph.name, graph.hash, dict(inputs), str(folder))
        started = titled(started, title, labels)
        first = stored_to_dict(1, time.time(), started)
        params = ThreadInput(
            thread_id=thread_id,
            snapshot=graph.model_dump(mode="json"),
            events=[first],
            subgraphs=subgraph_snapshots(graph),
            graph_path=str(graph.path or ""),
            max_steps=options.max_steps,
            model=options.model,
            heartbeat_seconds=self.heartbeat_seconds,
            replaying=replay,
            worktree=shared.to_dict() if shared else None,
        )
        await self._start_run(params, self.task_queue, summary=summary_line(graph, started))
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
        replay: Recording | None = None,
        first: Outcome | None = None,
    ) -> ThreadResult:
        """Send `first` (a resume or an answer), then follow the thread until it stops running.

        Ctrl-C while following interrupts the thread, as it does a local run: the step in
        flight stops and the thread suspends (or, at a person's step, waits)."""
        if actor_for is not None:
            raise SessionError("on Temporal the roles' own actors play them (no stand-ins)")
        options = options or RunOptions()
        handle = await self._handle(thread_id)
        row = await self.athread(thread_id)
        follower = Follower(handle, row.task_queue or self.task_queue, options)
        recorded = ReplayInput(replay.to_dict(), options.replay_pace) if replay else None
        if recorded is not None and not row.closed:  # a replay: the workers play the recording
            await answered(handle.execute_update(ThreadWorkflow.replay, recorded), follower.queue)
        # A thread started here is shown from its first step; any other from what comes next.
        await follower.read(quiet_upto=self._fresh.pop(thread_id, math.inf), notify=self.notify)
        if first is not None:
            await self._request(handle, row, graph, follower, first, options, recorded)
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
        recorded: ReplayInput | None = None,
    ) -> None:
        queue = follower.queue
        if isinstance(first, Answered):
            waits = follower.state.waiting_for
            if first.step is not None and waits is not None and first.step != waits.step:
                # The workflow's `answer` update carries the text alone: the first step.
                raise SessionError(
                    f"on Temporal, the first waiting step (step {waits.step}) is answered "
                    f"first; answer it, then step {first.step}"
                )
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
                subgraphs=subgraph_snapshots(graph),
                graph_path=str(graph.path or row.graph_path),
                max_steps=options.max_steps,
                model=options.model,
                first=outcome_to_dict(first),
                heartbeat_seconds=self.heartbeat_seconds,
                recording=recorded.recording if recorded is not None else None,
                replay_pace=recorded.pace if recorded is not None else 0.0,
                worktree=row.worktree,
            )
            await self._start_run(params, queue, summary=f"{row.graph} (resumed)")
            return
        carried = await self._carried(handle, queue)
        changed = graph.hash != carried_graph(carried).hash
        request = ResumeInput(
            message=first.message,
            max_steps=options.max_steps,
            model=options.model,
            snapshot=graph.model_dump(mode="json") if changed else None,
            graph_path=str(graph.path) if changed and graph.path else None,
            subgraphs=subgraph_snapshots(graph) if changed else None,
        )
        await answered(handle.execute_update(ThreadWorkflow.resume, request), queue)

    async def resume(
        self,
        graph: Graph,
        thread_id: str,
        *,
        message: str | None = None,
        options: RunOptions | None = None,
        actor_for: ActorFor | None = None,
    ) -> ThreadResult:
        first = ResumeRequested(message)
        return await self.advance(
            graph, thread_id, options=options, actor_for=actor_for, first=first
        )

    async def answer(
        self,
        graph: Graph,
        thread_id: str,
        text: str,
        *,
        step: int | None = None,
        options: RunOptions | None = None,
        actor_for: ActorFor | None = None,
    ) -> ThreadResult:
        first = Answered(text, step)
        return await self.advance(
            graph, thread_id, options=options, actor_for=actor_for, first=first
        )

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
            raise ThreadNotFound(
                thread_id,
                f"{how} thread '{thread_id}' on Temporal at {self.address}",
                hint="see `orchestrator threads list --temporal ADDRESS`",
            )
        return matches[0]

    def threads(
        self, state: str | None = None, query: ThreadQuery | None = None
    ) -> list[ThreadRow]:
        return list(self._sync(self.athreads(state, query)))

    async def athreads(
        self, state: str | None = None, query: ThreadQuery | None = None
    ) -> list[TemporalRow]:
        """Every thread on the server, oldest first: the latest run of each workflow."""
        rows = [await row_of(found) for found in await latest_runs(await self.client())]
        query = (query or ThreadQuery()).narrowed(state)
        rows = [r for r in rows if query.matches(r, r.text)]  # the memo's title, labels, text
        return sorted(rows, key=lambda r: (r.created, r.id))

    def events(self, thread_id: str, after: int = 0) -> list[StoredEvent]:
        return self._sync(self.aevents(thread_id, after))

    async def aevents(self, thread_id: str, after: int = 0) -> list[StoredEvent]:
        """The thread's events, or those numbered above `after` (a watcher's next read)."""
        row = await self.athread(thread_id)
        follower = Follower(await self._handle(row.id), row.task_queue, RunOptions())
        await follower.read(quiet_upto=math.inf)
        return [stored for stored in follower.events if stored.seq > after]

    def state(self, thread_id: str) -> ThreadState:
        return engine.fold([s.event for s in self.events(thread_id)])

    def child_events(self, thread_id: str) -> list[StoredEvent] | None:
        """The log of a subgraph step's child (its workflow `PARENT.STEP`), or None."""
        try:
            return self.events(thread_id)
        except SessionError:
            return None

    def recording(self, thread_id: str) -> Recording:
        """The thread's recording, with its subgraph children's steps inside."""
        return recording_from_events(
            [s.event for s in self.events(thread_id)],
            lambda child: [s.event for s in self.child_events(child) or []],
        )

    def view(self, thread_id: str) -> ThreadView:
        return thread_view([s.event for s in self.events(thread_id)])

    def question(
        self, thread_id: str, graph: Graph | None = None, step: int | None = None
    ) -> Question | None:
        return self._sync(self.aquestion(thread_id, graph, step))

    async def aquestion(
        self, thread_id: str, graph: Graph | None = None, step: int | None = None
    ) -> Question | None:
        """What a waiting thread asks (as Session.question), from the graph it carries."""
        row = await self.athread(thread_id)
        state = engine.fold([s.event for s in await self.aevents(row.id)])
        if state.status != ThreadStatus.WAITING:
            return None
        return question_for(allowed(graph or await self.agraph_for(row), state), step)

    def check_answer(
        self, graph: Graph, thread_id: str, text: str, step: int | None = None
    ) -> tuple[str, ...]:
        """Why the moderator would refuse this answer (as Session.check_answer)."""
        return answer_errors(graph, self.state(thread_id), text, step)

    def prune(self, *, dry_run: bool = False, branches: bool = False) -> list[Pruned]:
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
