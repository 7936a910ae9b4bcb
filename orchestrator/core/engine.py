"""The moderator: the one place that knows the rules of a thread.

Theory of operation
-------------------
A thread is a deterministic fold over its append-only event log. Everything that can differ
between two runs (a model's reply, a person's answer, a process's output, the clock) happens
outside this module, in an actor, and comes back as an *outcome*. This module does no I/O,
reads no clock and draws no random numbers; three pure functions hold every rule:

    apply(state, event) -> state         fold one event into the state (O(1) per event)
    decide(graph, state) -> Command      what must happen next: record an event, run a step
                                         (call an actor), or nothing (Idle)
    judge(graph, state, outcome) -> events
                                         what an outcome means, as the events to append;
                                         raises Refused when the outcome cannot be taken

The driver (driver.py) is the one loop that asks decide, has an executor carry the command out
(the local runner, or the Temporal workflow) and feeds the outcome to judge: RunStep goes to an
actor, RunChild to a subgraph role's child thread (S1-S6 below), RunBranches lists the branch
steps that should be running now. The session layer turns requests (answer, resume, cancel) into
outcomes, and the runner reports an interruption as one. None of them decides anything. (What an
executor turns into ActorFailed itself is I/O it alone sees: a location that escapes through a
symbolic link or cannot be made, inputs a child's graph refuses, an actor's unexpected error.)
What may happen now (answer which step, resume, cancel, fork) is asked of `allowed.allowed`,
which asks `judge`; every face asks it. A fork's first events are made by `fork.fork_events`.

apply: the states
    A1 ThreadStarted            -> running
    A2 StepStarted(n, role)     -> step n in flight (its prompt fixed now)
    A3 AttemptRejected(n)       -> the step stays in flight; one more repair used
    A4 StepCommitted(n, status) -> step n done (the next edge is graph[role][status]); a pending
                                   resume message is used up (a step that fails again keeps it
                                   for the next resume); a waiting thread (a person answered)
                                   is running again. The state keeps the role's latest output,
                                   the last HISTORY_LIMIT steps and the visit counts, no more:
                                   its size does not grow with the thread
    A5 HumanWaiting(n)          -> waiting: a person must answer step n
    A6 ThreadSuspended(kind)    -> suspended, with the reason and kind
    A7 ThreadResumed(message)   -> running. The step in flight is decided again from its edge
                                   (same number, prompt re-rendered plus a non-empty message,
                                   repairs anew). From an ending, $START.resume is taken next with
                                   the message as $inputs.message (empty when none was given;
                                   not kept as an input). After a
                                   limit, limits count anew.
    A8 ThreadCompleted(final, ending, outcome)
                                -> completed, or failed when the ending's outcome is failure;
                                   either way resumable through $START.resume
    A9 ThreadCancelled          -> cancelled: ended for good. (ThreadFailed, failed for good, is
                                   no longer emitted; it is folded when an older log holds it.)
    A10 BranchesStarted(first, branches)
                                -> a fan-out: branch i will be step first+i (prompts fixed now)
    A11 StepStarted(branch i) / BranchFailed(n)
                                -> a branch in flight (beside others) / a branch failed alone; a
                                   branch's StepCommitted records its output for the join; a
                                   resume forgets every branch in flight or failed (they run anew)
    A12 a fan-out whose only branches in flight wait for a person, with nothing left to start or
        failed, makes the thread waiting; a branch that can run makes it running again
    A13 ThreadForked(from, n, message)
                                -> running, `forked_from` {thread, step n}; the message (if
                                   any) is appended to the next step's prompt, as a resume's
    Cost and tokens add up from AttemptRejected, StepCommitted, BranchFailed, ThreadSuspended;
    a subgraph step's StepCommitted adds its child's cost, and its steps count against max_steps.

decide: on a thread that is not running                                      D1 Idle
        a step in flight whose role the graph no longer has (a resume under a
        changed graph re-decides such a step from its edge first, A7)        D2 Record(Suspended: graph)
        a step in flight                                                     D3 RunStep
        otherwise the next edge: $START._ first, $START.resume after a resume from an ending,
        else graph[last role][last status]; of a guarded list, the first edge whose CEL `when`
        holds, else the last (the default)
          no such edge                                                       D4 Record(Suspended: graph)
          a guard fails to evaluate (a null compared, a wrong type), or would
          cost more than its budget over these values (it is not run)        D4b Record(Suspended: guard)
          no guard holds and the last edge has one too                       D4c Record(Suspended: graph)
          its prompt (or location) does not render                           D5 Record(Suspended: template)
          its location is not a folder inside the workspace (absolute, `..`,
          a NUL, too long)                                                   D5b Record(Suspended: graph)
          it leads to $END                                                   D6 Record(Completed: prompt,
                                                                                 ending, outcome,
                                                                                 rendered recovery)
          max_steps, max_visits or max_cost_usd reached                      D7 Record(Suspended: limit)
          else                                                               D8 Record(StepStarted)
          it fans out (`parallel`, `for_each`): every branch rendered from
          the output that fanned out (a `for_each` item under `as`); a
          `for_each` that names no list                                      D10b Record(Suspended: template)
          the fan-out's steps over max_steps (a role counts one visit), or
          max_visits or max_cost_usd reached                                 D11 Record(Suspended: limit)
          else                                                               D10 Record(BranchesStarted)
        a fan-out in progress (fanout.py): a branch failed and others run   D12 RunBranches(the running)
          a branch failed and none runs                                      D12b Record(Suspended: its kind)
          a branch not started and fewer than max_parallel running           D9 Record(StepStarted(branch))
          branches running                                                   D9b RunBranches(the running)
          only branches waiting for a person                                 D13 Idle
          every branch committed: the join edge, as D5-D8, seeing $branches and the output
          that fanned out                                                    D14 Record(StepStarted(join)
                                                                                 or Completed)
    A committed step is never run again; a step in flight when a process died runs again.

subgraphs (subgraph.py, docs/format.md section 14; the driver asks these, judge takes the end):
    S1 decide: a step in flight (or a branch) of a subgraph role -> RunChild(child PARENT.STEP,
       the edge's inputs else {task: prompt}, the steps and cost the parent's limits leave)
    S2 no child yet: ThreadStarted, linked to the parent's step, in the step's folder; a child
       graph not loaded or inputs it refuses -> ActorFailed(graph)
    S3 a child that exists, its step run again: suspended, running (its process died) or waiting
       at a subgraph step of its own -> ResumeRequested(the parent's message); else nothing
    S4 where it stopped is the step's outcome: an ending -> ChildEnded (J19), waiting for a
       person -> NeedsPerson (J7: the parent waits), suspended or cancelled -> ActorFailed(kind)
    S5 an answer to a thread waiting at a subgraph step is its child's, followed down to the
       child that waits and judged there; judged here -> Refused. A resume continues it (S3)
    S6 a cancel goes on to the children of the steps in flight that have not ended

forks (fork.py, docs/format.md section 20; a new thread, the original untouched):
    F1 a fork at step n (1 to the last committed + 1, which is the default): the original's
       events before the first that starts step n or a later one, less a trailing suspension,
       ending, cancel, waiting step or rejected attempt, under ThreadStarted(the new id), then
       ThreadForked; step n is decided again from its edge (A13, D3-D8)
    F2 refused, nothing made: no committed step, no such step, a branch of a fan-out other than
       its first, a subgraph's child thread (allowed.fork_verdict, fork.py)
    F3 with a reply: step n started as decide starts it, the reply judged as a person's answer
       (J8, J9) -> StepStarted, StepCommitted(actor: fork); refused (nothing made) with the
       contract's errors, when it would suspend, or when step n is not one step (an ending, a
       fan-out, a subgraph role)

judge: outcomes of a step (Replied, ChildEnded, ActorFailed, PreconditionFailed, NeedsPerson)
       for a step not in flight (the thread was cancelled meanwhile)         J1 nothing
    Replied (an actor's reply text), extracted against the role's contract:
          invalid (or over MAX_REPLY_CHARS, kept cut), repairs left          J2 AttemptRejected
          invalid, repairs used up (more than max_repairs rejected; a person
          answering in a terminal is asked again however often)              J3 AttemptRejected, Suspended: repairs
          $status: $SUSPEND                                                  J4 Suspended: role
          valid                                                              J5 StepCommitted
    ActorFailed(kind)                                                        J6 Suspended: kind
    PreconditionFailed (the role's `requires:` did not hold)                 J6b Suspended: precondition
    NeedsPerson (a human role and no terminal, or a child that waits)        J7 HumanWaiting
    ChildEnded(ending) (a subgraph's child reached an ending)                J19 StepCommitted(status:
                                                                                 the ending)
    of a branch, a suspension of J3, J4, J6 or J6b fails the branch alone    J18 BranchFailed
    Answered (a person's answer from outside, for the step it names, else the first that waits):
          refused unless the thread is waiting and that step waits (a step in flight, or a
          waiting branch) for a role the graph still has (at a subgraph step: S5), refused with
          the errors when invalid
          (nothing recorded)                                                 J8 Refused
          else as Replied                                                    J9 StepCommitted / Suspended: role
    Interrupted (Ctrl-C, a cancelled task) on a running thread: a human step
          in flight waits for its answer                                     J10 HumanWaiting
          anything else                                                      J11 Suspended: interrupted
          on a thread that is not running                                    J12 nothing
    CancelRequested: refused on an ended thread                              J13 Refused
          else                                                               J14 ThreadCancelled
    ResumeRequested(message): refused when not started, cancelled, failed (but at an ending),
          waiting for a role the graph still has and that is not a subgraph's
          (answer it), at an ending with no $START.resume edge, or at an ending
          without a message when a $START.resume edge reads $inputs.message
          outside a section that tests it                                    J15 Refused
          running with a step in flight (its process died)                   J16 ThreadResumed(interrupted)
          else                                                               J17 ThreadResumed
"""

from __future__ import annotations

from typing import Any

from ..definition.models import END, SUSPEND, Edge, Graph, Join
from ..extract import ExtractError
from . import fanout
from .checks import (
    KEPT_OF_A_HUGE_REPLY,
    MAX_REPLY_CHARS,
    check_limits,
    extract_reply,
    suspend,
)
from .commands import Command, Idle, Limits, Record, limits_for
from .context import reads_steps, template_context
from .edges import choose_edge, next_edge_key, render_edge, render_one
from .events import (
    AttemptRejected,
    BranchFailed,
    Event,
    HumanWaiting,
    StepCommitted,
    StepStarted,
    SuspendKind,
    ThreadCancelled,
    ThreadCompleted,
    ThreadStatus,
    ThreadSuspended,
)
from .fold import apply as apply
from .fold import fold as fold
from .outcomes import (
    ActorFailed,
    Answered,
    CancelRequested,
    ChildEnded,
    Interrupted,
    NeedsPerson,
    Outcome,
    PreconditionFailed,
    Refused,
    Replied,
    ResumeRequested,
)
from .resume import judge_resume
from .state import InFlight, ThreadState
from .subgraph import child_id, step_command

# --------------------------------------------------------------------------- decide


def decide(graph: Graph, state: ThreadState, limits: Limits | None = None) -> Command:
    """The next command for a thread. Pure: same graph and state, same command. The D rules."""
    if state.status != ThreadStatus.RUNNING:
        return Idle(state.status)
    limits = limits or limits_for(graph)
    if state.in_flight is not None:
        f = state.in_flight
        if f.role not in graph.roles:  # the graph changed under a resumed thread
            return suspend(
                f"step {f.step}: the graph no longer has role '{f.role}'", SuspendKind.GRAPH, f.step
            )
        return step_command(graph, state, f, limits)  # D3, S1
    if state.fanout is not None:
        command = fanout.next_branch_command(graph, state, limits)
        return command if command is not None else _take_join(graph, state, limits)

    source, status = next_edge_key(state)
    chosen = choose_edge(graph, state, source, status)
    if isinstance(chosen, Record):
        return chosen
    option, edge = chosen
    label = f"edge {source} --{status}--> {edge.role or 'parallel'}"
    if edge.fans_out:
        context = template_context(graph, state, source, status)
        return fanout.fan_out(graph, state, limits, (source, status, option), edge, context)
    context = template_context(graph, state, source, status, steps=reads_steps(edge))
    return _take(graph, state, limits, label, edge, context, (source, status, option, False))


def _take(
    graph: Graph,
    state: ThreadState,
    limits: Limits,
    label: str,
    edge: Edge | Join,
    context: dict[str, Any],
    start: tuple[str, str, int, bool],
) -> Command:
    """Render an edge and start its step, or end the thread (D5-D8); `start` is where the edge
    comes from: the source, the status, the option taken and whether it is a join edge."""
    source, status, option, join = start
    rendered = render_edge(label, edge, context)
    if isinstance(rendered, Record):
        return rendered
    prompt, location, inputs = rendered
    if edge.role == END:
        recovery = render_one(label, edge.recovery, context) if edge.recovery else None
        if isinstance(recovery, Record):
            return recovery
        ending, outcome = edge.ending or "done", edge.outcome or "success"
        return Record(ThreadCompleted(prompt, ending, outcome, recovery, option))
    guard = check_limits(state, edge.role or "", limits)
    if guard is not None:
        return guard
    if state.resume_message:
        prompt = (
            f"{prompt}\n\nMessage from the person who {state.message_from} this thread:\n"
            f"{state.resume_message}"
        )
    step = state.committed + 1
    role = edge.role or ""
    return Record(
        StepStarted(step, role, prompt, source, status, location, option, join=join, inputs=inputs)
    )


def _take_join(graph: Graph, state: ThreadState, limits: Limits) -> Command:
    """D14: D5-D8 for the join edge, once every branch committed: it sees `$branches`, and the
    output that fanned out as its fields."""
    fo = state.fanout
    assert fo is not None
    edges = graph.edges(fo.source, fo.status)
    edge = edges[fo.option] if fo.option < len(edges) else None
    if edge is None or edge.join is None:
        return suspend(
            f"the fan-out of '{fo.source}' on '{fo.status}' is no longer in the graph",
            SuspendKind.GRAPH,
        )
    previous = fo.source_step
    branches = fanout.branches_value(graph, state)
    context = template_context(graph, state, fo.source, fo.status, previous, branches)
    label = f"join edge {fo.source} --{fo.status}--> {edge.join.role}"
    start = (fo.source, fo.status, fo.option, True)
    return _take(graph, state, limits, label, edge.join, context, start)


# --------------------------------------------------------------------------- judge


def judge(graph: Graph | None, state: ThreadState, outcome: Outcome) -> list[Event]:
    """The events that record `outcome`. Pure. The J rules (and S5) of the theory of operation.

    `graph` may be None for a cancel, whose rules look at the state only (so a thread whose
    graph file is gone or broken can still be cancelled).
    """
    if isinstance(outcome, CancelRequested):
        if state.status.ended:
            raise Refused(f"thread {state.thread_id} is already {state.status}")  # J13
        return [ThreadCancelled(outcome.reason)]  # J14
    if graph is None:
        raise ValueError(f"judging {type(outcome).__name__} needs the thread's graph")
    match outcome:
        case Replied() | ChildEnded() | ActorFailed() | NeedsPerson() | PreconditionFailed():
            f = state.flight(outcome.step)
            if state.status != ThreadStatus.RUNNING or f is None or f.waiting:
                return []  # J1
            events = _judge_step(graph, f, outcome)
            if f.branch is None:
                return events
            return [_as_branch_failure(e) for e in events]  # J18
        case Answered():
            return _judge_answer(graph, state, outcome)
        case Interrupted():
            f = state.in_flight
            if state.status != ThreadStatus.RUNNING:
                return []  # J12
            role = graph.roles.get(f.role) if f is not None else None
            if f is not None and role is not None and role.is_human:
                return [HumanWaiting(f.step, f.role)]  # J10
            in_flight = f.step if f is not None else None
            if in_flight is None and state.fanout is not None and state.fanout.flights:
                in_flight = min(state.fanout.flights)
            return [
                ThreadSuspended(
                    "interrupted by the user; resume to continue",
                    SuspendKind.INTERRUPTED,
                    step=in_flight,
                )
            ]  # J11
        case ResumeRequested():
            return [judge_resume(graph, state, outcome)]
    raise TypeError(f"not an outcome: {outcome!r}")


def _judge_step(
    graph: Graph,
    f: InFlight,
    outcome: Replied | ChildEnded | ActorFailed | NeedsPerson | PreconditionFailed,
) -> list[Event]:
    match outcome:
        case ActorFailed():
            return [
                ThreadSuspended(
                    f"step {f.step} ({f.role}): {outcome.message}",
                    outcome.kind,
                    step=f.step,
                    usage=dict(outcome.usage),
                    cost_usd=outcome.cost_usd,
                    detail=outcome.detail,
                )
            ]  # J6
        case NeedsPerson():
            return [HumanWaiting(f.step, f.role)]  # J7
        case PreconditionFailed():
            return [
                ThreadSuspended(
                    f"step {f.step} ({f.role}) cannot start: " + "; ".join(outcome.failures),
                    SuspendKind.PRECONDITION,
                    step=f.step,
                )
            ]  # J6b
        case ChildEnded():
            return [
                StepCommitted(
                    step=f.step,
                    role=f.role,
                    status=outcome.ending,
                    frontmatter={k: v for k, v in outcome.frontmatter.items() if k != "$status"},
                    body=outcome.final,
                    reply=outcome.final,
                    usage=dict(outcome.usage),
                    cost_usd=outcome.cost_usd,
                    duration_s=outcome.duration_s,
                    actor="subgraph",
                    child=outcome.child,
                    child_steps=outcome.steps,
                )
            ]  # J19
    return _judge_reply(graph, f, outcome)


def _as_branch_failure(event: Event) -> Event:
    """A branch that would suspend the thread fails alone; the thread suspends once the other
    running branches end (D12)."""
    if not isinstance(event, ThreadSuspended) or event.step is None:
        return event
    failed = (event.step, event.reason, event.kind, event.reply, dict(event.usage))
    return BranchFailed(*failed, event.cost_usd, event.detail)


def _judge_reply(graph: Graph, f: InFlight, outcome: Replied) -> list[Event]:
    role = graph.roles[f.role]  # decide() suspended a step whose role is gone (D2)
    try:
        output = extract_reply(outcome.text, role)
    except ExtractError as exc:
        kept = outcome.text
        if len(kept) > MAX_REPLY_CHARS:  # the log keeps what a person needs to see why
            kept = f"{kept[:KEPT_OF_A_HUGE_REPLY]}\n… [cut: the reply had {len(kept):,} characters]"
        events: list[Event] = [
            AttemptRejected(f.step, kept, list(exc.errors), outcome.usage, outcome.cost_usd)
        ]  # J2
        rejected = len(f.attempts) + 1
        if rejected > role.max_repairs and not role.is_human:  # a person is asked again
            events.append(
                ThreadSuspended(
                    f"step {f.step} ({f.role}): the reply was invalid {rejected} time(s) and "
                    f"max_repairs is {role.max_repairs}; last errors: {'; '.join(exc.errors)}",
                    SuspendKind.REPAIRS,
                    step=f.step,
                )
            )  # J3
        return events
    if output.status == SUSPEND:
        reason = str(output.frontmatter.get("reason", "")).strip()
        who = "the person answering as" if role.is_human else "role"
        return [
            ThreadSuspended(
                f"{who} '{f.role}' suspended the thread at step {f.step}: {reason}",
                SuspendKind.ROLE,
                step=f.step,
                reply=outcome.text,
                usage=dict(outcome.usage),
                cost_usd=outcome.cost_usd,
            )
        ]  # J4
    return [
        StepCommitted(
            step=f.step,
            role=f.role,
            status=output.status,
            frontmatter=output.frontmatter,
            body=output.body,
            reply=outcome.text,
            message=outcome.message,
            usage=dict(outcome.usage),
            cost_usd=outcome.cost_usd,
            model=outcome.model,
            tool_calls=outcome.tool_calls,
            duration_s=outcome.duration_s,
            actor=outcome.actor,
        )
    ]  # J5


def _judge_answer(graph: Graph, state: ThreadState, outcome: Answered) -> list[Event]:
    f = state.waiting_for
    if f is None:
        raise Refused(f"thread {state.thread_id} is {state.status}, not waiting for an answer")
    if outcome.step is not None and outcome.step != f.step:
        f = state.flight(outcome.step)
        if f is None or not f.waiting:  # J8
            tid = state.thread_id
            raise Refused(f"step {outcome.step} of thread {tid} does not wait for an answer")
    if graph.subgraph(f.role) is not None:  # S5: a person inside the child answers there
        inside = child_id(state.thread_id, f.step)
        raise Refused(f"step {f.step} ({f.role}) waits inside child thread {inside}: answer it")
    role = graph.roles.get(f.role)
    if role is None:
        raise Refused(f"the graph no longer has role '{f.role}', which step {f.step} waits for")
    events = _judge_reply(graph, f, Replied(f.step, outcome.text, actor="human"))  # J9
    if isinstance(events[0], AttemptRejected):  # an invalid answer is refused, not recorded
        errors = tuple(events[0].errors)
        raise Refused(f"the answer was not accepted for role '{f.role}'", errors)  # J8
    return events
