"""A thread as a Temporal workflow: the same moderator, each role step an activity.

Theory of operation
-------------------
The workflow id is the thread id. The workflow keeps the thread's event log (each event with its
sequence number and the workflow's clock) and its folded state, and is an executor of the one
driver (`core/driver.py`), the local runner being the other: the driver asks `decide` and
`judge`, this module carries the commands out:

    commit         append the event to the log the workflow keeps (its history is the store)
    act            plan the request (`run/plan.plan_step`, pure) and run the `run_step`
                   activity on a worker (activities.py: the only place of its I/O); a fork
                   made with --reuse hands it the original's kept reply instead (reuse.py)
    single         the step in flight (stopped by a cancel or an interrupt)
    branches       the branch steps as tasks of the workflow
    run_child      a subgraph role's child: a child workflow (children.py)
    idle           completed, failed, cancelled: the workflow returns; suspended or waiting:
                   wait for a request

The workflow imports deterministic modules only (no actor, store, sandbox or process: a test
checks what importing it loads), so the worker passes them through its sandbox (worker.py).

Requests from outside are updates, judged by the same `judge`. Their validators ask
`allowed()` (core/allowed.py) whether the request may happen now, as every face does (and the
judge for an answer's text), so a refusal (`Refused`) rejects the update before anything reaches
the history:

    answer(text)                        Answered: a person's reply for the waiting step
    resume(message, limits, graph)      ResumeRequested: with --max-steps, --model, a changed graph
    cancel(reason)                      CancelRequested: also stops the step in flight
    interrupt()                         Interrupted: Ctrl-C of the command that follows the thread

A cancel from Temporal itself (its UI, `temporal workflow cancel`) is judged as CancelRequested.

Failures. An actor's own failure is an outcome (the step suspends, as locally). The activity is
never retried by Temporal: when its worker dies (no heartbeat) or stops, the workflow judges
ResumeRequested on the running thread (rule J16: ThreadResumed, interrupted), exactly what
`threads resume` does after a local process died, so the step runs again on another worker under
the same number and the log says so. After MAX_LOST such losses in a row, or any other error of
the activity, the step suspends (kind `actor`, or `timeout`) and can be resumed.

Readers. Queries return the events (paged) and the graph; the memo holds the thread's summary row
for `threads list`, so listing reads no log; it is written when the row changes (a state, a
step started or committed, a cost), never on a clock. Long threads continue as new with their log.
Everything here is deterministic: no decision follows from the clock (it only stamps events),
ids are made by the client; tests/test_temporal_kill_polling.py replays every history.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutType
from temporalio.exceptions import CancelledError as TemporalCancelled
from temporalio.exceptions import TimeoutError as TemporalTimeout

# Deterministic modules only (tests/test_workflow_imports.py): the host's, passed through the
# sandbox, so they are imported once per worker, not again for every workflow run; what they
# import on first use is passed through by the worker's runner (worker.py, DETERMINISTIC).
with workflow.unsafe.imports_passed_through():
    from ..core import engine
    from ..core.allowed import Verdict, allowed
    from ..core.commands import Limits, RunStep, limits_for
    from ..core.driver import Work, drive
    from ..core.events import Event, SuspendKind, ThreadStatus, event_from_dict
    from ..core.outcomes import (
        ActorFailed,
        Answered,
        CancelRequested,
        Interrupted,
        Outcome,
        Refused,
        ResumeRequested,
    )
    from ..core.state import ThreadState

    # What the moderator imports on first use (a contract's validators), which happens inside a
    # workflow: imported now, passed through like the rest.
    # (each by its full name: the sandbox knows a module passed through by the name imported)
    from ..definition.fastcheck import compile_fast_check  # noqa: F401
    from ..definition.metaschema import check_schema  # noqa: F401
    from ..definition.models import Graph
    from ..definition.validator import compile_validator  # noqa: F401
    from ..run.memory import SessionMemory
    from ..run.options import ThreadResult
    from ..run.plan import plan_step
    from ..views.plural import plural
    from .children import PARENT_CANCELLED, ChildThreads
    from .codec import graph_from_snapshot, outcome_from_dict, plan_to_dict, stored_to_dict
    from .inputs import EventsPage, ReplayInput
    from .inputs import ResumeInput as ResumeInput  # the sessions' and activities' names too
    from .inputs import StepInput as StepInput
    from .inputs import ThreadInput as ThreadInput
    from .memo import RIDING, memo_row
    from .reuse import reused

    with contextlib.suppress(ImportError):  # an optional speed-up of fastcheck
        import jsonschema_rs  # noqa: F401

WORKFLOW_NAME = "OrchestratorThread"
ACTIVITY_NAME = "run_step"
MEMO_KEY = "thread"
WORKER_SHUTDOWN = "WorkerShutdown"  # the type of the error a step ends with on a stopping worker
MAX_LOST = 3  # the thread suspends when one step has lost its worker this many times in a row
STEP_TIMEOUT = timedelta(hours=4)  # a step's whole run, its actor's own timeouts within it
PAGE_BYTES = 1_000_000  # what one `events` query returns at most (at least one event)


def refusal(exc: Refused) -> ApplicationError:
    """A refusal as the failure of an update: its message and errors reach the client."""
    return ApplicationError(exc.message, list(exc.errors), type="Refused", non_retryable=True)


@workflow.defn(name=WORKFLOW_NAME)
class ThreadWorkflow(ChildThreads):
    workflow_name = WORKFLOW_NAME

    @workflow.init
    def __init__(self, params: ThreadInput) -> None:
        self.thread_id = params.thread_id
        self.snapshot = params.snapshot
        self.subgraphs = params.subgraphs
        self.graph: Graph = graph_from_snapshot(params.snapshot, params.subgraphs)
        self.graph_path = params.graph_path
        self.max_cost_usd = params.max_cost_usd
        self.limits: Limits = limits_for(self.graph, params.max_steps, params.max_cost_usd)
        self.as_child = params.as_child
        self.children = dict(params.children)
        self.child_runs = {}
        self.recording, self.replay_pace = params.recording, params.replay_pace
        self.replaying = params.replaying
        self.max_steps = params.max_steps
        self.model = params.model
        self.heartbeat = timedelta(seconds=params.heartbeat_seconds)
        self.worktree = params.worktree
        self.reuse = params.reuse  # a fork's kept steps, until the first difference (reuse.py)
        self.log: list[dict[str, Any]] = []
        self.sizes: list[int] = []  # each stored event's JSON size, for paging
        self.state = ThreadState()
        self.memory = SessionMemory(self.graph)  # `memory: session` visits, fed as the state is
        for stored in params.events:
            self._keep(stored, event_from_dict(stored["event"]))
        self.activities: dict[int, asyncio.Task[Any]] = {}  # the steps in flight, by number
        self.running: dict[int, asyncio.Task[Outcome | None]] = {}  # branch steps running
        self.stopped = False  # the steps in flight were stopped by a cancel or an interrupt
        self.lost = (0, 0)  # (step, how many times its worker was lost)
        self.memo: dict[str, Any] = {}

    # ------------------------------------------------------------------ the loop

    @workflow.run
    async def run(self, params: ThreadInput) -> dict[str, Any]:
        try:
            if params.first is not None:
                self._judge(outcome_from_dict(params.first))
            # A replay started before its recording came: the first advance sends it.
            await workflow.wait_condition(lambda: self.recording is not None or not self.replaying)
            await drive(self)
        except asyncio.CancelledError:  # cancelled from Temporal: the thread is cancelled
            if not self.state.status.ended:
                self._judge(CancelRequested("cancelled in Temporal"))
        await workflow.wait_condition(workflow.all_handlers_finished)
        self._publish()
        # Its JSON form has no path: a session reads the path from the events it follows.
        result = ThreadResult.of(self.thread_id, self.state, []).to_dict()
        if self.as_child:  # what the parent keeps of its child (children.py)
            result.update(log=self.log, children=self.children)
        return result

    # ------------------------------------------------------------------ the executor

    async def commit(self, event: Event) -> None:
        self._append(event)

    async def idle(self, status: ThreadStatus) -> bool:
        """Completed, failed or cancelled: stop (the workflow returns); else wait for a request.
        A child workflow returns whenever it stops: its parent decides what comes next."""
        if status.ended or self.as_child:
            return False
        self._publish()
        await workflow.wait_condition(
            lambda: self.state.status == ThreadStatus.RUNNING or self.state.status.ended
        )
        return True

    async def turned(self) -> None:
        if workflow.info().is_continue_as_new_suggested() and self._quiet():
            self._publish()
            workflow.continue_as_new(self._carry(), memo={MEMO_KEY: self.memo})

    async def single(self, step: int, work: Work) -> Outcome | None:
        return await work()  # a cancel stops its activity (`_stop_step`)

    async def branches(self, work: Mapping[int, Work]) -> list[Outcome]:
        """Start the listed branches not running yet; the outcomes of those that ended."""
        for step, run in work.items():
            if step not in self.running:
                self.running[step] = asyncio.ensure_future(run())
        await workflow.wait_condition(lambda: any(t.done() for t in self.running.values()))
        outcomes = []
        for step in sorted(n for n, task in self.running.items() if task.done()):
            outcome = self.running.pop(step).result()
            if outcome is not None:
                outcomes.append(outcome)
        return outcomes

    async def act(self, command: RunStep) -> Outcome | None:
        role = self.graph.roles[command.role]
        plan = plan_step(self.graph, self.state, command, self.memory, self.model)
        kept, self.reuse = reused(
            self.reuse, plan.step, plan.role_name, command.prompt, bool(plan.attempts)
        )
        request = StepInput(
            command.role,
            role.model_dump(mode="json"),
            plan_to_dict(plan),
            self.state.workspace,
            self.recording,
            self.replay_pace,
            self.worktree,
            kept,
        )
        self._publish()
        self.stopped = False
        activity = self.activities[command.step] = workflow.start_activity(
            ACTIVITY_NAME,
            request,
            start_to_close_timeout=STEP_TIMEOUT,
            heartbeat_timeout=self.heartbeat,
            retry_policy=RetryPolicy(maximum_attempts=1),  # a lost step is resumed, below
            summary=f"step {command.step}: {command.role}",
        )
        try:
            result = await activity
            return outcome_from_dict(result)
        except (ActivityError, asyncio.CancelledError) as exc:
            if self.stopped:
                return None  # a cancel or an interrupt stopped it, and was recorded
            if not isinstance(exc, ActivityError) or isinstance(exc.cause, TemporalCancelled):
                raise asyncio.CancelledError() from None  # the workflow itself was cancelled
            return self._failed(command, exc)
        finally:
            self.activities.pop(command.step, None)

    def _failed(self, command: RunStep, exc: ActivityError) -> Outcome:
        cause = exc.cause
        if _lost(cause):
            step, times = self.lost
            times = times + 1 if step == command.step else 1
            self.lost = (command.step, times)
            if times < MAX_LOST:
                return ResumeRequested()  # J16: the step in flight runs again, on another worker
            return ActorFailed(
                command.step,
                f"the worker running the step was lost {times} times in a row",
                SuspendKind.ACTOR,
            )
        if isinstance(cause, TemporalTimeout):
            return ActorFailed(
                command.step, f"the step ran longer than {STEP_TIMEOUT}", SuspendKind.TIMEOUT
            )
        message = str(cause or exc) or type(cause or exc).__name__
        return ActorFailed(
            command.step, f"the step failed on a worker: {message}", SuspendKind.ACTOR
        )

    # ------------------------------------------------------------------ the log

    def _keep(self, stored: dict[str, Any], event: Event) -> None:
        engine.apply(self.state, event)
        self.memory.observe(event)
        self.log.append(stored)
        self.sizes.append(len(json.dumps(stored, ensure_ascii=False, default=str)))

    def _append(self, event: Event) -> None:
        at = workflow.now().timestamp()
        self._keep(stored_to_dict(len(self.log) + 1, at, event), event)

    def _judge(self, outcome: Outcome, graph: Any = None) -> None:
        events = engine.judge(graph or self.graph, self.state, outcome)
        for event in events:
            self._append(event)

    def _check(self, outcome: Outcome, graph: Any = None) -> None:
        try:
            engine.judge(graph or self.graph, self.state, outcome)  # pure: nothing recorded
        except Refused as exc:
            raise refusal(exc) from None

    def _stop_step(self) -> None:
        """After a cancel or an interrupt: the step in flight has no reader any more."""
        if self.activities and self.state.status != ThreadStatus.RUNNING:
            self.stopped = True
            for activity in self.activities.values():
                activity.cancel()

    def _quiet(self) -> bool:
        """Nothing in flight (a step, a branch, a child workflow): it may continue as new."""
        busy = self.activities or self.running or self.child_runs
        return not busy and workflow.all_handlers_finished()

    def _carry(self) -> ThreadInput:
        return ThreadInput(
            thread_id=self.thread_id,
            snapshot=self.snapshot,
            events=self.log,
            graph_path=self.graph_path,
            max_steps=self.max_steps,
            model=self.model,
            heartbeat_seconds=self.heartbeat.total_seconds(),
            subgraphs=self.subgraphs,
            children=self.children,
            max_cost_usd=self.max_cost_usd,
            as_child=self.as_child,
            recording=self.recording,
            replay_pace=self.replay_pace,
            replaying=self.replaying,
            worktree=self.worktree,
            reuse=self.reuse,
        )

    def _publish(self) -> None:
        """The summary row in the memo (for `threads list`) and a line for Temporal's UI.

        Each memo update is a command (a history event), so whether one is made must follow
        from the log alone, never from the clock: a worker that replays the history (taking
        over the thread, or answering a query) must make the same commands at the same points,
        or the replay fails with a nondeterminism error (and so does every later query). The
        row is written when what it shows changes: the state, a committed step, the cost, the
        reason, the graph, the steps in flight; not for every event (`seq` and `updated` ride
        along)."""
        s = self.state
        first = self.log[0]["event"] if self.log else {}
        row = memo_row(s, self.graph_path, self.worktree, first)
        if {k: v for k, v in self.memo.items() if k not in RIDING} != row:
            updated = self.log[-1]["at"] if self.log else 0.0
            self.memo = {**row, "seq": len(self.log), "updated": updated}
            workflow.upsert_memo({MEMO_KEY: self.memo})
        f = s.in_flight
        doing = f" · step {f.step}: {f.role}" if f is not None and s.status == "running" else ""
        workflow.set_current_details(
            f"**{s.status}**{doing} · {plural(s.committed, 'step')} committed"
            + (f"\n\n{s.reason}" if s.reason else "")
        )

    # ------------------------------------------------------------------ requests

    @workflow.update
    def answer(self, text: str) -> str:
        leaf = self.waiting_leaf()
        if leaf is None:
            self._judge(Answered(text))
            return str(self.state.status)
        # S5: the child's answer, kept in its log; the resume runs the child again from it (S3).
        log, graph, state = leaf[0]["log"], leaf[1], leaf[2]
        for event in engine.judge(graph, state, Answered(text)):
            engine.apply(state, event)
            log.append(stored_to_dict(len(log) + 1, workflow.now().timestamp(), event))
        self._judge(ResumeRequested())
        return str(self.state.status)

    @answer.validator
    def _answer_ok(self, text: str) -> None:
        asked = self.allowed_now()  # a person inside a kept child included (S5)
        if asked.answer is None:
            raise refusal(Refused(asked.why_no_answer))
        leaf = self.waiting_leaf()  # S5: judged against the role of the child that waits
        try:
            if leaf is None:
                engine.judge(self.graph, self.state, Answered(text))
            else:
                engine.judge(leaf[1], leaf[2], Answered(text))
        except Refused as exc:
            raise refusal(exc) from None

    @workflow.update
    def resume(self, request: ResumeInput) -> str:
        if request.snapshot is not None:
            self.snapshot = request.snapshot
            self.subgraphs = request.subgraphs or {}
            self.graph = graph_from_snapshot(request.snapshot, self.subgraphs)
            self.graph_path = request.graph_path or self.graph_path
            # Which roles keep a session, and their budgets, may have changed with it.
            self.memory = SessionMemory(self.graph)
            for stored in self.log:
                self.memory.observe(event_from_dict(stored["event"]))
        self.max_steps, self.model = request.max_steps, request.model
        self.limits = limits_for(self.graph, request.max_steps, self.max_cost_usd)
        self._judge(ResumeRequested(request.message))
        return str(self.state.status)

    @resume.validator
    def _resume_ok(self, request: ResumeInput) -> None:
        if self.state.status == ThreadStatus.RUNNING:  # the lease's rule: one runner at a time
            raise ApplicationError(
                f"thread {self.thread_id} is running on the workers; "
                "cancel it first if it must stop",
                type="ThreadBusy",
                non_retryable=True,
            )
        graph = (
            graph_from_snapshot(request.snapshot, request.subgraphs) if request.snapshot else None
        )
        verdict = allowed(graph or self.graph, self.state).resume
        missing = verdict.needs_message and not (request.message or "").strip()
        _allowed_or_refused(Verdict(verdict.ok and not missing, verdict.why))

    @workflow.update
    async def cancel(self, reason: str) -> str:
        children = self.children_to_cancel()  # S6: asked before the cancel ends the steps
        self._judge(CancelRequested(reason))
        self._stop_step()
        await self.cancel_children(children, reason)
        return str(self.state.status)

    @workflow.signal(name=PARENT_CANCELLED)
    def parent_cancelled(self, reason: str) -> None:
        """A child's parent was cancelled (S6): cancelled too, unless it ended already."""
        if not self.state.status.ended:
            self._judge(CancelRequested(reason))
            self._stop_step()

    @cancel.validator
    def _cancel_ok(self, reason: str) -> None:
        _allowed_or_refused(allowed(self.graph, self.state).cancel)

    @workflow.update
    def replay(self, request: ReplayInput) -> None:
        """A replay's recording (`run --replay --temporal`): its steps play it on the workers."""
        self.recording, self.replay_pace = request.recording, request.pace

    @workflow.update
    def interrupt(self) -> str:
        self._judge(Interrupted())
        self._stop_step()
        return str(self.state.status)

    # ------------------------------------------------------------------ reading

    @workflow.query
    def events(self, after: int) -> EventsPage:
        """The events after sequence number `after`, at most about PAGE_BYTES of them."""
        page: list[dict[str, Any]] = []
        size = 0
        for index in range(max(0, after), len(self.log)):
            size += self.sizes[index]
            if page and size > PAGE_BYTES:
                break
            page.append(self.log[index])
        return EventsPage(page, len(self.log), str(self.state.status))

    @workflow.query
    def graph_snapshot(self) -> dict[str, Any]:
        return {
            "snapshot": self.snapshot,
            "graph_path": self.graph_path,
            "subgraphs": self.subgraphs,
        }


def _allowed_or_refused(verdict: Verdict) -> None:
    """An update validator's answer from `allowed()`: a refusal rejects the update."""
    if not verdict.ok:
        raise refusal(Refused(verdict.why))


def _lost(cause: BaseException | None) -> bool:
    """The step's worker died (no heartbeat) or stopped: the step did not fail, it was lost."""
    if isinstance(cause, TemporalTimeout):
        return cause.type == TimeoutType.HEARTBEAT
    return isinstance(cause, ApplicationError) and cause.type == WORKER_SHUTDOWN
