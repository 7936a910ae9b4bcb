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

The runner carries RunStep commands to actors and their outcomes back; the session layer turns
requests (answer, resume, cancel) into outcomes, and the runner reports an interruption as one.
Neither decides anything. (What the runner turns into ActorFailed itself is I/O it alone sees:
a location that escapes through a symbolic link or cannot be made, an actor's unexpected error.)

apply: the states
    A1 ThreadStarted            -> running
    A2 StepStarted(n, role)     -> step n in flight (its prompt fixed now)
    A3 AttemptRejected(n)       -> the step stays in flight; one more repair used
    A4 StepCommitted(n, status) -> step n done (the next edge is graph[role][status]); a pending
                                   resume message is used up (a step that fails again keeps it
                                   for the next resume); a waiting thread (a person answered)
                                   is running again
    A5 HumanWaiting(n)          -> waiting: a person must answer step n
    A6 ThreadSuspended(kind)    -> suspended, with the reason and kind
    A7 ThreadResumed(message)   -> running. The step in flight is decided again from its edge
                                   (same number, prompt re-rendered plus a non-empty message,
                                   repairs anew). From an ending, $START.resume is taken next with
                                   the message as $inputs.message (not kept as an input). After a
                                   limit, limits count anew.
    A8 ThreadCompleted(final, ending, outcome)
                                -> completed, or failed when the ending's outcome is failure;
                                   either way resumable through $START.resume
    A9 ThreadCancelled          -> cancelled: ended for good. (ThreadFailed, failed for good, is
                                   no longer emitted; it is folded when an older log holds it.)
    Cost and tokens add up from AttemptRejected, StepCommitted and ThreadSuspended.

decide: on a thread that is not running                                      D1 Idle
        a step in flight whose role the graph no longer has (a resume under a
        changed graph re-decides such a step from its edge first, A7)        D2 Record(Suspended: graph)
        a step in flight                                                     D3 RunStep
        otherwise the next edge: $START._ first, $START.resume after a resume from an ending,
        else graph[last role][last status]; of a guarded list, the first edge whose CEL `when`
        holds, else the last (the default)
          no such edge                                                       D4 Record(Suspended: graph)
          a guard fails to evaluate (a null compared, a wrong type)          D4b Record(Suspended: guard)
          no guard holds and the last edge has one too                       D4c Record(Suspended: graph)
          its prompt (or location) does not render                           D5 Record(Suspended: template)
          its location is not a folder inside the workspace (absolute, `..`,
          a NUL, too long)                                                   D5b Record(Suspended: graph)
          it leads to $END                                                   D6 Record(Completed: prompt,
                                                                                 ending, outcome,
                                                                                 rendered recovery)
          max_steps, max_visits or max_cost_usd reached                      D7 Record(Suspended: limit)
          else                                                               D8 Record(StepStarted)
    A committed step is never run again; a step in flight when a process died runs again.

judge: outcomes of a step (Replied, ActorFailed, PreconditionFailed, NeedsPerson) for a step not in flight
       (the thread was cancelled meanwhile)                                  J1 nothing
    Replied (an actor's reply text), extracted against the role's contract:
          invalid (or over MAX_REPLY_CHARS, kept cut), repairs left          J2 AttemptRejected
          invalid, repairs used up (more than max_repairs rejected; a person
          answering in a terminal is asked again however often)              J3 AttemptRejected, Suspended: repairs
          $status: $SUSPEND                                                  J4 Suspended: role
          valid                                                              J5 StepCommitted
    ActorFailed(kind)                                                        J6 Suspended: kind
    PreconditionFailed (the role's `requires:` did not hold)                 J6b Suspended: precondition
    NeedsPerson (a human role and no terminal)                               J7 HumanWaiting
    Answered (a person's answer from outside): refused unless the thread is waiting for a role
          the graph still has, refused with the errors when invalid
          (nothing recorded)                                                 J8 Refused
          else as Replied                                                    J9 StepCommitted / Suspended: role
    Interrupted (Ctrl-C, a cancelled task) on a running thread: a human step
          in flight waits for its answer                                     J10 HumanWaiting
          anything else                                                      J11 Suspended: interrupted
          on a thread that is not running                                    J12 nothing
    CancelRequested: refused on an ended thread                              J13 Refused
          else                                                               J14 ThreadCancelled
    ResumeRequested(message): refused when not started, cancelled, failed (but at an ending),
          waiting for a role the graph still has (answer it), or at an ending with no
          $START.resume edge                                                 J15 Refused
          running with a step in flight (its process died)                   J16 ThreadResumed(interrupted)
          else                                                               J17 ThreadResumed
"""

from __future__ import annotations

from ..extract import ExtractError
from ..spec.models import END, RESUME, SINGLE_EXIT, START, SUSPEND, Edge, Graph
from ..templates import TemplateEmptyError, TemplateSyntaxError, TemplateVarError, render_prompt
from .checks import (
    KEPT_OF_A_HUGE_REPLY,
    MAX_REPLY_CHARS,
    check_limits,
    extract_reply,
    location_problem,
    suspend,
)
from .commands import Command, Idle, Limits, Record, RunStep, limits_for
from .context import guard_names, template_context
from .events import (
    AttemptRejected,
    Event,
    HumanWaiting,
    StepCommitted,
    StepStarted,
    SuspendKind,
    ThreadCancelled,
    ThreadCompleted,
    ThreadFailed,
    ThreadResumed,
    ThreadStarted,
    ThreadStatus,
    ThreadSuspended,
)
from .guards import GuardError, evaluate
from .outcomes import (
    ActorFailed,
    Answered,
    CancelRequested,
    Interrupted,
    NeedsPerson,
    Outcome,
    PreconditionFailed,
    Refused,
    Replied,
    ResumeRequested,
)
from .state import InFlight, Step, ThreadState

# --------------------------------------------------------------------------- apply


def _add_usage(state: ThreadState, usage: dict[str, int], cost_usd: float) -> None:
    state.cost_usd += cost_usd
    state.input_tokens += (
        int(usage.get("input_tokens", 0))
        + int(usage.get("cache_read_input_tokens", 0))
        + int(usage.get("cache_creation_input_tokens", 0))
    )
    state.output_tokens += int(usage.get("output_tokens", 0))


def apply(state: ThreadState, event: Event) -> ThreadState:
    """Fold one event into the state (in place; returns it for convenience). Rules A1-A9."""
    state.events += 1
    match event:
        case ThreadStarted():
            state.thread_id = event.thread_id
            state.graph = event.graph
            state.graph_hash = event.graph_hash
            state.inputs = dict(event.inputs)
            state.workspace = event.workspace
            state.status = ThreadStatus.RUNNING
        case StepStarted():
            state.in_flight = InFlight(
                event.step, event.role, event.prompt, event.source, event.status, event.location
            )
            state.resume_from_end = False
        case AttemptRejected():
            if state.in_flight is not None:
                state.in_flight.attempts.append((event.reply, list(event.errors)))
            _add_usage(state, event.usage, event.cost_usd)
        case StepCommitted():
            step = Step(
                event.step,
                event.role,
                event.status,
                dict(event.frontmatter),
                event.body,
                event.reply,
                event.message,
                event.cost_usd,
            )
            state.steps.append(step)
            state.latest[event.role] = step
            state.visits.setdefault(event.role, []).append(len(state.steps) - 1)
            _add_usage(state, event.usage, event.cost_usd)
            state.in_flight = None
            state.resume_message = None  # it reached the step it was meant for
            if state.status == ThreadStatus.WAITING:
                state.status = ThreadStatus.RUNNING
                state.reason = None
        case HumanWaiting():
            state.status = ThreadStatus.WAITING
            state.reason = f"step {event.step} waits for a person to answer as '{event.role}'"
        case ThreadSuspended():
            _add_usage(state, event.usage, event.cost_usd)
            state.status = ThreadStatus.SUSPENDED
            state.reason = event.reason
            state.suspend_kind = event.kind
        case ThreadResumed():
            if state.ending is not None:  # from an ending, success or failure
                state.resume_from_end = True
                state.final = state.ending = state.recovery = None
                state.end_message = event.message  # $inputs.message on $START.resume
            else:
                state.end_message = None
                if event.message:
                    state.resume_message = event.message
            state.in_flight = None
            if state.suspend_kind == SuspendKind.LIMIT:
                state.budget_step = len(state.steps)
                state.budget_cost = state.cost_usd
                state.budget_visits = {r: len(v) for r, v in state.visits.items()}
            state.status = ThreadStatus.RUNNING
            state.reason = None
            state.suspend_kind = None
        case ThreadCompleted():
            state.resume_message = None
            failed = event.outcome == "failure"
            state.status = ThreadStatus.FAILED if failed else ThreadStatus.COMPLETED
            state.final = event.final
            state.ending = event.ending
            state.recovery = event.recovery
            state.reason = f"it reached the ending '{event.ending}' (a failure)" if failed else None
        case ThreadFailed():
            state.status = ThreadStatus.FAILED
            state.reason = event.error
        case ThreadCancelled():
            state.status = ThreadStatus.CANCELLED
            state.reason = event.reason
    return state


def fold(events: list[Event]) -> ThreadState:
    state = ThreadState()
    for event in events:
        apply(state, event)
    return state


# --------------------------------------------------------------------------- decide


def decide(graph: Graph, state: ThreadState, limits: Limits | None = None) -> Command:
    """The next command for a thread. Pure: same graph and state, same command. D1-D8."""
    if state.status != ThreadStatus.RUNNING:
        return Idle(state.status)
    if state.in_flight is not None:
        f = state.in_flight
        if f.role not in graph.roles:  # the graph changed under a resumed thread
            return suspend(
                f"step {f.step}: the graph no longer has role '{f.role}'", SuspendKind.GRAPH, f.step
            )
        attempts = tuple((reply, tuple(errors)) for reply, errors in f.attempts)
        return RunStep(f.step, f.role, f.prompt, f.location, attempts)
    limits = limits or limits_for(graph)

    source, status = _next_edge_key(state)
    chosen = _choose_edge(graph, state, source, status)
    if isinstance(chosen, Record):
        return chosen
    option, edge = chosen
    context = template_context(graph, state, source, status)
    label = f"edge {source} --{status}--> {edge.role}"
    try:
        prompt = render_prompt(edge.prompt, context)
        location = render_prompt(edge.location, context) if edge.location else None
        recovery = render_prompt(edge.recovery, context) if edge.recovery else None
    except TemplateVarError as exc:
        return suspend(
            f"{label}: template variable '{exc.name}' resolves to nothing "
            f"(run `orchestrator validate` to check the graph's templates)",
            SuspendKind.TEMPLATE,
        )
    except TemplateEmptyError:
        return suspend(f"{label}: the prompt rendered empty", SuspendKind.TEMPLATE)
    except TemplateSyntaxError as exc:
        return suspend(f"{label}: template syntax error: {exc}", SuspendKind.TEMPLATE)

    if location is not None and (problem := location_problem(location)):
        shown = location if len(location) <= 60 else location[:60] + "…"
        return suspend(f"{label}: location {shown!r} {problem}", SuspendKind.GRAPH)
    if edge.role == END:
        ending, outcome = edge.ending or "done", edge.outcome or "success"
        return Record(ThreadCompleted(prompt, ending, outcome, recovery, option))
    guard = check_limits(state, edge, limits)
    if guard is not None:
        return guard
    if state.resume_message:
        prompt = (
            f"{prompt}\n\nMessage from the person who resumed this thread:\n{state.resume_message}"
        )
    step = len(state.steps) + 1
    return Record(StepStarted(step, edge.role, prompt, source, status, location, option))


def _choose_edge(
    graph: Graph, state: ThreadState, source: str, status: str
) -> tuple[int, Edge] | Record:
    """The first edge whose guard holds, else the default (the last); D4 and D4b."""
    edges = graph.edges(source, status)
    if not edges:
        return _missing_edge(graph, source, status)
    if len(edges) == 1 and edges[0].when is None:
        return 0, edges[0]
    names = guard_names(graph, state, source)
    for option, edge in enumerate(edges):
        if edge.when is None:
            return option, edge
        try:
            if evaluate(edge.when, names):
                return option, edge
        except GuardError as exc:
            return suspend(
                f"edge {source} --{status}--> {edge.role} (edge {option + 1} of "
                f"{len(edges)}): its guard `{edge.when}` failed: {exc}",
                SuspendKind.GUARD,
            )
    return suspend(  # `validate` reports this as guard-no-default
        f"no edge for status '{status}' of '{source}' has a guard that holds, and the last one "
        "has a `when` too (the last edge of a list must be the default, without `when`)",
        SuspendKind.GRAPH,
    )


def _next_edge_key(state: ThreadState) -> tuple[str, str]:
    if not state.steps:
        return START, SINGLE_EXIT
    if state.resume_from_end:
        return START, RESUME
    last = state.steps[-1]
    return last.role, last.status


def _missing_edge(graph: Graph, source: str, status: str) -> Record:
    if source == START and status == RESUME:
        return suspend(
            "the graph has no `$START.resume` edge, so a completed thread cannot continue",
            SuspendKind.GRAPH,
        )
    known = ", ".join(sorted(graph.graph.get(source, {}))) or "none"
    return suspend(
        f"role '{source}' replied status '{status}' but the graph has no edge for it "
        f"(edges of '{source}': {known}); fix the graph and resume",
        SuspendKind.GRAPH,
    )


# --------------------------------------------------------------------------- judge


def judge(graph: Graph | None, state: ThreadState, outcome: Outcome) -> list[Event]:
    """The events that record `outcome`. Pure. Rules J1-J17 of the theory of operation.

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
        case Replied() | ActorFailed() | NeedsPerson() | PreconditionFailed():
            f = state.in_flight
            if state.status != ThreadStatus.RUNNING or f is None or f.step != outcome.step:
                return []  # J1
            if isinstance(outcome, ActorFailed):
                return [
                    ThreadSuspended(
                        f"step {f.step} ({f.role}): {outcome.message}",
                        outcome.kind,
                        step=f.step,
                        usage=dict(outcome.usage),
                        cost_usd=outcome.cost_usd,
                    )
                ]  # J6
            if isinstance(outcome, NeedsPerson):
                return [HumanWaiting(f.step, f.role)]  # J7
            if isinstance(outcome, PreconditionFailed):
                return [
                    ThreadSuspended(
                        f"step {f.step} ({f.role}) cannot start: " + "; ".join(outcome.failures),
                        SuspendKind.PRECONDITION,
                        step=f.step,
                    )
                ]  # J6b
            return _judge_reply(graph, f, outcome)
        case Answered():
            return _judge_answer(graph, state, outcome)
        case Interrupted():
            f = state.in_flight
            if state.status != ThreadStatus.RUNNING:
                return []  # J12
            role = graph.roles.get(f.role) if f is not None else None
            if f is not None and role is not None and role.actor == "human":
                return [HumanWaiting(f.step, f.role)]  # J10
            return [
                ThreadSuspended(
                    "interrupted by the user; resume to continue",
                    SuspendKind.INTERRUPTED,
                    step=f.step if f is not None else None,
                )
            ]  # J11
        case ResumeRequested():
            return [_judge_resume(graph, state, outcome)]
    raise TypeError(f"not an outcome: {outcome!r}")


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
        if rejected > role.max_repairs and role.actor != "human":  # a person is asked again
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
        who = "the person answering as" if role.actor == "human" else "role"
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
    f = state.in_flight
    if state.status != ThreadStatus.WAITING or f is None:
        raise Refused(f"thread {state.thread_id} is {state.status}, not waiting for an answer")
    role = graph.roles.get(f.role)
    if role is None:
        raise Refused(f"the graph no longer has role '{f.role}', which step {f.step} waits for")
    events = _judge_reply(graph, f, Replied(f.step, outcome.text, actor="human"))  # J9
    if isinstance(events[0], AttemptRejected):  # an invalid answer is refused, not recorded
        errors = tuple(events[0].errors)
        raise Refused(f"the answer was not accepted for role '{f.role}'", errors)  # J8
    return events


def _judge_resume(graph: Graph, state: ThreadState, outcome: ResumeRequested) -> Event:
    tid = state.thread_id
    ended_at_end = state.ending is not None  # an ending, success or failure: $START.resume
    if state.status == ThreadStatus.CANCELLED or (
        state.status == ThreadStatus.FAILED and not ended_at_end
    ):
        raise Refused(f"thread {tid} is {state.status} and cannot be resumed")  # J15
    waits = state.in_flight.role if state.in_flight is not None else None
    if state.status == ThreadStatus.WAITING and waits in graph.roles:
        raise Refused(
            f"thread {tid} waits for a person: answer it with `orchestrator threads answer {tid}`"
        )
    if ended_at_end and graph.edge(START, RESUME) is None:
        raise Refused(f"thread {tid} is {state.status} and its graph has no `$START.resume` edge")
    if state.status == ThreadStatus.NEW:
        raise Refused("the thread has not started")
    # J16: its last process died with a step in flight (a waiting step whose role is gone, too)
    interrupted = state.status == ThreadStatus.RUNNING and state.in_flight is not None
    return ThreadResumed(message=outcome.message, interrupted=interrupted)  # J17
