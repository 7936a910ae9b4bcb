"""The moderator: a thread is a deterministic fold over its append-only event log.

Theory of operation
-------------------
Everything that can differ between two runs (a model's reply, a person's answer, a process's
output, the clock) happens outside this module and comes back as an event. This module only
reads events and decides what happens next; it does no I/O, reads no clock and draws no random
numbers, so replaying the same events always rebuilds the same state and the same decisions.

    apply(state, event) -> state     fold one event into the state (O(1) per event)
    decide(graph, state) -> Command  what the runner must do next

The transition rules, in one place:

    ThreadStarted            -> running; the next step comes from $START._
    StepStarted(n, role)     -> step n is in flight (its prompt is fixed now)
    AttemptRejected(n)       -> the in-flight step keeps running; one more repair used
    StepCommitted(n, status) -> step n is done; the next edge is graph[role][status]
    HumanWaiting(n)          -> waiting: a person must answer step n
    ThreadSuspended          -> suspended (a role said $SUSPEND, repairs ran out, a limit was
                                reached, a template failed, an actor failed)
    ThreadResumed(message)   -> running again. A step in flight (suspended, or interrupted by a
                                crash) is decided again from the edge that led to it: same step
                                number, the message appended to its prompt. From `completed` the
                                edge $START.resume is taken, with the message as $inputs.message.
                                Resuming after a limit grants the limits anew.
    ThreadCompleted(final)   -> completed (an edge reached $END; `final` is its rendered prompt)
    ThreadFailed / ThreadCancelled -> terminal

decide() on a running thread:
    a step in flight          -> RunStep (call the actor; the runner extracts and repairs)
    else the next edge        -> Finish when it reaches $END, Suspend when a guard trips or the
                                 prompt cannot be rendered, else StartStep
A committed step is never run again; a step in flight when the process died runs again.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .spec.models import END, RESUME, SINGLE_EXIT, START, Edge, Graph
from .templates import TemplateEmptyError, TemplateSyntaxError, TemplateVarError, render_prompt

# --------------------------------------------------------------------------- events


@dataclass(frozen=True)
class Event:
    """Base of all events. `kind` names the event in the log."""

    def to_dict(self) -> dict[str, Any]:
        # A shallow copy: events hold JSON values only, and asdict's deep copy was most of the
        # cost of serialising an event.
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["type"] = type(self).__name__
        return data


@dataclass(frozen=True)
class ThreadStarted(Event):
    thread_id: str
    graph: str
    graph_hash: str
    inputs: dict[str, Any]
    workspace: str


@dataclass(frozen=True)
class StepStarted(Event):
    step: int
    role: str
    prompt: str
    source: str  # the role (or $START) whose edge led here
    status: str  # the edge key taken
    location: str | None = None


@dataclass(frozen=True)
class AttemptRejected(Event):
    step: int
    reply: str
    errors: list[str]
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0


@dataclass(frozen=True)
class StepCommitted(Event):
    step: int
    role: str
    status: str
    frontmatter: dict[str, Any]
    body: str
    reply: str  # the accepted reply, verbatim
    message: str = ""  # the visit message the actor sent (for `memory: session`)
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    model: str | None = None
    tool_calls: int = 0
    duration_s: float = 0.0
    actor: str = ""  # who answered: anthropic, human, command, replay, scripted


@dataclass(frozen=True)
class HumanWaiting(Event):
    step: int
    role: str


@dataclass(frozen=True)
class ThreadSuspended(Event):
    reason: str
    kind: (
        str  # role | repairs | limit | template | graph | actor | provider | timeout | interrupted
    )
    step: int | None = None
    reply: str | None = None  # a $SUSPEND reply, verbatim
    usage: dict[str, int] = field(default_factory=dict)  # spent by a step that then failed
    cost_usd: float = 0.0


@dataclass(frozen=True)
class ThreadResumed(Event):
    message: str | None = None
    interrupted: bool = False  # the previous process died with a step in flight


@dataclass(frozen=True)
class ThreadCompleted(Event):
    final: str


@dataclass(frozen=True)
class ThreadFailed(Event):
    error: str


@dataclass(frozen=True)
class ThreadCancelled(Event):
    reason: str = "cancelled by the user"


EVENT_TYPES: dict[str, type[Event]] = {
    cls.__name__: cls
    for cls in (
        ThreadStarted,
        StepStarted,
        AttemptRejected,
        StepCommitted,
        HumanWaiting,
        ThreadSuspended,
        ThreadResumed,
        ThreadCompleted,
        ThreadFailed,
        ThreadCancelled,
    )
}


def event_from_dict(data: dict[str, Any]) -> Event:
    data = dict(data)
    cls = EVENT_TYPES[data.pop("type")]
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


# --------------------------------------------------------------------------- state


@dataclass
class Step:
    """A committed step as the state keeps it."""

    step: int
    role: str
    status: str
    frontmatter: dict[str, Any]
    body: str
    reply: str
    message: str
    cost_usd: float


@dataclass
class InFlight:
    step: int
    role: str
    prompt: str
    source: str
    status: str
    location: str | None
    attempts: list[tuple[str, list[str]]] = field(default_factory=list)


@dataclass
class ThreadState:
    """Everything decide() needs, folded from the events. Mutated in place by apply()."""

    thread_id: str = ""
    graph: str = ""
    graph_hash: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    workspace: str = ""
    status: str = "new"  # new | running | waiting | suspended | completed | failed | cancelled
    steps: list[Step] = field(default_factory=list)
    latest: dict[str, Step] = field(default_factory=dict)  # each role's latest committed step
    visits: dict[str, list[int]] = field(default_factory=dict)  # role -> indexes into steps
    in_flight: InFlight | None = None
    resume_message: str | None = None  # appended to the next step's prompt
    resume_from_end: bool = False  # take $START.resume next
    reason: str | None = None  # why it is suspended/failed/cancelled
    suspend_kind: str | None = None
    final: str | None = None
    cost_usd: float = 0.0
    events: int = 0
    # Limits count from here (a resume after a limit grants them anew).
    budget_step: int = 0
    budget_cost: float = 0.0
    budget_visits: dict[str, int] = field(default_factory=dict)

    @property
    def step_count(self) -> int:
        return len(self.steps)

    @property
    def path(self) -> list[str]:
        roles = [s.role for s in self.steps]
        return roles + [END] if self.status == "completed" else roles


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
            state.status = "running"
        case StepStarted():
            state.in_flight = InFlight(
                event.step, event.role, event.prompt, event.source, event.status, event.location
            )
            state.resume_message = None
            state.resume_from_end = False
        case AttemptRejected():
            if state.in_flight is not None:
                state.in_flight.attempts.append((event.reply, list(event.errors)))
            state.cost_usd += event.cost_usd
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
            state.cost_usd += event.cost_usd
            state.in_flight = None
            if state.status == "waiting":
                state.status = "running"
        case HumanWaiting():
            state.status = "waiting"
            state.reason = f"step {event.step} waits for a person to answer as '{event.role}'"
        case ThreadSuspended():
            state.cost_usd += event.cost_usd
            state.status = "suspended"
            state.reason = event.reason
            state.suspend_kind = event.kind
        case ThreadResumed():
            if state.status == "completed":
                state.resume_from_end = True
                state.final = None
                if event.message is not None:
                    state.inputs = {**state.inputs, "message": event.message}
            elif event.message:
                state.resume_message = event.message
            # A step in flight is decided again from its edge: same step number, its prompt
            # re-rendered (plus the message), its repairs granted anew.
            state.in_flight = None
            if state.suspend_kind == "limit":
                state.budget_step = len(state.steps)
                state.budget_cost = state.cost_usd
                state.budget_visits = {r: len(v) for r, v in state.visits.items()}
            state.status = "running"
            state.reason = None
            state.suspend_kind = None
        case ThreadCompleted():
            state.status = "completed"
            state.final = event.final
        case ThreadFailed():
            state.status = "failed"
            state.reason = event.error
        case ThreadCancelled():
            state.status = "cancelled"
            state.reason = event.reason
    return state


def fold(events: list[Event]) -> ThreadState:
    state = ThreadState()
    for event in events:
        apply(state, event)
    return state


def _with_message(prompt: str, message: str) -> str:
    return f"{prompt}\n\nMessage from the person who resumed this thread:\n{message}"


# --------------------------------------------------------------------------- commands


@dataclass(frozen=True)
class StartStep:
    step: int
    role: str
    prompt: str
    source: str
    status: str
    location: str | None


@dataclass(frozen=True)
class RunStep:
    step: int
    role: str
    prompt: str
    location: str | None
    attempts: tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class Finish:
    final: str


@dataclass(frozen=True)
class Suspend:
    reason: str
    kind: str


@dataclass(frozen=True)
class Idle:
    """Nothing to do: the thread is not running."""

    status: str


Command = StartStep | RunStep | Finish | Suspend | Idle


@dataclass(frozen=True)
class Limits:
    max_steps: int
    max_visits: int
    max_cost_usd: float | None


def limits_for(graph: Graph, max_steps: int | None = None) -> Limits:
    return Limits(
        max_steps if max_steps is not None else graph.limits.max_steps,
        graph.limits.max_visits,
        graph.limits.max_cost_usd,
    )


def decide(graph: Graph, state: ThreadState, limits: Limits | None = None) -> Command:
    """The next command for a thread. Pure: same graph and state, same command."""
    if state.status != "running":
        return Idle(state.status)
    if state.in_flight is not None:
        f = state.in_flight
        attempts = tuple((reply, tuple(errors)) for reply, errors in f.attempts)
        return RunStep(f.step, f.role, f.prompt, f.location, attempts)
    limits = limits or limits_for(graph)

    source, status = _next_edge_key(state)
    edge = graph.edge(source, status)
    if edge is None:
        return _missing_edge(graph, source, status)
    context = template_context(graph, state, source, status)
    label = f"edge {source} --{status}--> {edge.role}"
    try:
        prompt = render_prompt(edge.prompt, context)
        location = render_prompt(edge.location, context) if edge.location else None
    except TemplateVarError as exc:
        return Suspend(
            f"{label}: template variable '{exc.name}' resolves to nothing "
            f"(run `orchestrator validate` to check the graph's templates)",
            "template",
        )
    except TemplateEmptyError:
        return Suspend(f"{label}: the prompt rendered empty", "template")
    except TemplateSyntaxError as exc:
        return Suspend(f"{label}: template syntax error: {exc}", "template")

    if edge.role == END:
        return Finish(prompt)
    guard = _check_limits(state, edge, limits)
    if guard is not None:
        return guard
    if state.resume_message:
        prompt = _with_message(prompt, state.resume_message)
    return StartStep(len(state.steps) + 1, edge.role, prompt, source, status, location)


def _next_edge_key(state: ThreadState) -> tuple[str, str]:
    if not state.steps:
        return START, SINGLE_EXIT
    if state.resume_from_end:
        return START, RESUME
    last = state.steps[-1]
    return last.role, last.status


def _missing_edge(graph: Graph, source: str, status: str) -> Suspend:
    if source == START and status == RESUME:
        return Suspend(
            "the graph has no `$START.resume` edge, so a completed thread cannot continue",
            "graph",
        )
    known = ", ".join(sorted(graph.graph.get(source, {}))) or "none"
    return Suspend(
        f"role '{source}' replied status '{status}' but the graph has no edge for it "
        f"(edges of '{source}': {known}); fix the graph and resume",
        "graph",
    )


def _check_limits(state: ThreadState, edge: Edge, limits: Limits) -> Suspend | None:
    steps = len(state.steps) - state.budget_step
    if steps >= limits.max_steps:
        return Suspend(
            f"limit max_steps ({limits.max_steps}) reached after {steps} steps; raise "
            f"`limits.max_steps` in the graph or pass --max-steps, then resume",
            "limit",
        )
    visits = len(state.visits.get(edge.role, [])) - state.budget_visits.get(edge.role, 0)
    if visits >= limits.max_visits:
        return Suspend(
            f"limit max_visits ({limits.max_visits}) reached: role '{edge.role}' already ran "
            f"{visits} times; raise `limits.max_visits` in the graph, then resume",
            "limit",
        )
    spent = state.cost_usd - state.budget_cost
    if limits.max_cost_usd is not None and spent >= limits.max_cost_usd:
        return Suspend(
            f"limit max_cost_usd (${limits.max_cost_usd:.2f}) reached: ${spent:.4f} spent; "
            f"raise `limits.max_cost_usd` in the graph, then resume",
            "limit",
        )
    return None


# --------------------------------------------------------------------------- templates


def _with_nulls(
    graph: Graph, role: str, status: str, frontmatter: dict[str, Any]
) -> dict[str, Any]:
    """Declared-but-absent fields of the status are present as null (FORMAT 6)."""
    data = dict(frontmatter)
    spec = graph.roles.get(role)
    contract = spec.contract.for_status(status) if spec is not None else None
    if contract is not None:
        for name in contract.fields:
            data.setdefault(name, None)
    return data


def template_context(graph: Graph, state: ThreadState, source: str, status: str) -> dict[str, Any]:
    """The names an edge prompt sees (FORMAT 6). Cost depends on the number of roles only."""
    steps_ctx: dict[str, Any] = {}
    for role, step in state.latest.items():
        entry = _with_nulls(graph, role, step.status, step.frontmatter)
        entry["$body"] = step.body
        entry["$status"] = step.status
        steps_ctx[role] = entry
    context: dict[str, Any] = {}
    if source != START and state.steps:
        last = state.steps[-1]
        context.update(_with_nulls(graph, last.role, last.status, last.frontmatter))
        context["$body"] = last.body
    declared = graph.input_schema.get("properties")
    inputs = dict.fromkeys(declared, None) if isinstance(declared, dict) else {}
    inputs.update(state.inputs)  # declared-but-absent inputs are null, like optional fields
    context["$inputs"] = inputs
    context["$steps"] = steps_ctx
    context["$thread"] = {
        "id": state.thread_id,
        "step": len(state.steps) + 1,
        "workspace": state.workspace,
    }
    return context


# --------------------------------------------------------------------------- what actors see


HISTORY_LIMIT = 30  # steps shown to a role; prompting trims further to its size budget


def history_for(state: ThreadState, role: str) -> list[Step]:
    """The committed steps since `role` last spoke (the most recent HISTORY_LIMIT of them)."""
    visits = state.visits.get(role)
    start = visits[-1] + 1 if visits else 0
    start = max(start, len(state.steps) - HISTORY_LIMIT)
    return state.steps[start:]


def previous_visits(state: ThreadState, role: str) -> list[Step]:
    return [state.steps[i] for i in state.visits.get(role, [])]
