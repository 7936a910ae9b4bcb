"""`apply`: fold one event into a thread's state (rules A1-A13 of engine.py's theory of operation).

Pure and O(1) per event. It lives apart from `decide` and `judge` only to keep each module small;
the rules are listed, all together, in engine.py.
"""

from __future__ import annotations

from .events import (
    AttemptRejected,
    BranchesStarted,
    BranchFailed,
    Event,
    HumanWaiting,
    StepCommitted,
    StepStarted,
    SuspendKind,
    ThreadCancelled,
    ThreadCompleted,
    ThreadFailed,
    ThreadForked,
    ThreadResumed,
    ThreadStarted,
    ThreadStatus,
    ThreadSuspended,
)
from .state import FanOut, InFlight, Step, ThreadState


def _add_usage(state: ThreadState, usage: dict[str, int], cost_usd: float) -> None:
    state.cost_usd += cost_usd
    state.input_tokens += (
        int(usage.get("input_tokens", 0))
        + int(usage.get("cache_read_input_tokens", 0))
        + int(usage.get("cache_creation_input_tokens", 0))
    )
    state.output_tokens += int(usage.get("output_tokens", 0))


def _settle(state: ThreadState) -> None:
    """A12: a fan-out whose only branches in flight wait for a person makes the thread wait
    (once nothing else can run or fail); when a branch can run again, the thread runs."""
    fo = state.fanout
    if fo is None or state.status not in (ThreadStatus.RUNNING, ThreadStatus.WAITING):
        return
    idle = not fo.running() and (fo.failed or not fo.unstarted())
    if idle and fo.waiting() and not fo.failed:
        first = fo.waiting()[0]
        state.status = ThreadStatus.WAITING
        state.reason = f"step {first.step} waits for a person to answer as '{first.role}'"
    elif state.status == ThreadStatus.WAITING and not idle:
        state.status = ThreadStatus.RUNNING
        state.reason = None


def apply(state: ThreadState, event: Event) -> ThreadState:
    """Fold one event into the state (in place; returns it for convenience)."""
    state.events += 1
    match event:
        case ThreadStarted():
            state.thread_id = event.thread_id
            state.graph = event.graph
            state.graph_hash = event.graph_hash
            state.inputs = dict(event.inputs)
            state.workspace = event.workspace
            state.status = ThreadStatus.RUNNING
        case BranchesStarted():
            state.fanout = FanOut(
                event.source,
                event.status,
                event.option,
                event.first_step,
                [dict(b) for b in event.branches],
                state.last if event.source != "$START" else None,
            )
            state.resume_from_end = False
        case StepStarted():
            started = InFlight(
                event.step,
                event.role,
                event.prompt,
                event.source,
                event.status,
                event.location,
                branch=event.branch,
                inputs=dict(event.inputs) if event.inputs is not None else None,
            )
            if event.branch is not None and state.fanout is not None:
                state.fanout.flights[event.step] = started
            else:
                if event.join:
                    state.fanout = None
                state.in_flight = started
            state.resume_from_end = False
        case AttemptRejected():
            if (rejected := state.flight(event.step)) is not None:
                rejected.attempts.append((event.reply, list(event.errors)))
            _add_usage(state, event.usage, event.cost_usd)
        case StepCommitted():
            _commit(state, event)
        case HumanWaiting():
            asked = state.flight(event.step)
            if asked is not None and asked.branch is not None:
                asked.waiting = True
                _settle(state)
            else:
                state.status = ThreadStatus.WAITING
                state.reason = f"step {event.step} waits for a person to answer as '{event.role}'"
        case BranchFailed():
            _add_usage(state, event.usage, event.cost_usd)
            fo = state.fanout
            failed = fo.flights.pop(event.step, None) if fo is not None else None
            if fo is not None and failed is not None and failed.branch is not None:
                fo.failed[failed.branch] = (event.reason, event.kind)
                _settle(state)
        case ThreadSuspended():
            _add_usage(state, event.usage, event.cost_usd)
            state.status = ThreadStatus.SUSPENDED
            state.reason = event.reason
            state.suspend_kind = event.kind
        case ThreadResumed():
            _resume(state, event)
        case ThreadForked():
            _forked(state, event)
        case ThreadCompleted():
            state.resume_message = None
            state.fanout = None
            is_failure = event.outcome == "failure"
            state.status = ThreadStatus.FAILED if is_failure else ThreadStatus.COMPLETED
            state.final = event.final
            state.ending = event.ending
            state.recovery = event.recovery
            state.reason = (
                f"it reached the ending '{event.ending}' (a failure)" if is_failure else None
            )
        case ThreadFailed():
            state.status = ThreadStatus.FAILED
            state.reason = event.error
        case ThreadCancelled():
            state.status = ThreadStatus.CANCELLED
            state.reason = event.reason
    return state


def _commit(state: ThreadState, event: StepCommitted) -> None:
    step = Step(
        event.step,
        event.role,
        event.status,
        dict(event.frontmatter),
        event.body,
        event.reply,
        event.message,
        event.cost_usd,
        state.committed,
    )
    state.committed += 1
    state.recent.append(step)
    state.latest[event.role] = step
    state.visits[event.role] = state.visits.get(event.role, 0) + 1
    state.child_steps += event.child_steps
    _add_usage(state, event.usage, event.cost_usd)
    fo = state.fanout
    branch = fo.flights.pop(event.step, None) if fo is not None else None
    if fo is not None and branch is not None and branch.branch is not None:
        fo.done[branch.branch] = step
    else:
        state.in_flight = None
    state.resume_message = None  # it reached the step it was meant for
    if state.status == ThreadStatus.WAITING:
        state.status = ThreadStatus.RUNNING
        state.reason = None
    _settle(state)


def _resume(state: ThreadState, event: ThreadResumed) -> None:
    if state.ending is not None:  # from an ending, success or failure
        state.resume_from_end = True
        state.final = state.ending = state.recovery = None
        state.end_message = event.message or ""  # $inputs.message on $START.resume (A7)
    else:
        state.end_message = None
        if event.message:
            state.resume_message = event.message
            state.message_from = "resumed"
    state.in_flight = None
    if state.fanout is not None:  # every branch not committed runs again
        state.fanout.flights.clear()
        state.fanout.failed.clear()
    if state.suspend_kind == SuspendKind.LIMIT:
        state.budget_step = state.committed + state.child_steps
        state.budget_cost = state.cost_usd
        state.budget_visits = dict(state.visits)
    state.status = ThreadStatus.RUNNING
    state.reason = None
    state.suspend_kind = None


def _forked(state: ThreadState, event: ThreadForked) -> None:
    """A13: the log so far is the original's up to the fork point; from here the thread runs
    as itself, its next step decided from its edge (core/fork.py cut off any suspension,
    ending or waiting step that followed)."""
    state.forked_from = {"thread": event.from_thread, "step": event.at_step}
    if event.message:
        state.resume_message = event.message
        state.message_from = "forked"
    state.in_flight = None
    state.status = ThreadStatus.RUNNING
    state.reason = None
    state.suspend_kind = None


def fold(events: list[Event]) -> ThreadState:
    state = ThreadState()
    for event in events:
        apply(state, event)
    return state
