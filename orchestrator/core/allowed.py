"""What may happen to a thread now, asked of the moderator rather than re-derived. Pure.

Theory of operation. The moderator's `judge` is the one place that decides whether an outcome
may be taken: it raises `Refused` (recording nothing, being pure) when it may not.
`allowed(graph, state)` asks it the very questions the faces would send, and answers them all
at once, as an `Allowed`:

- `answers`: the steps a person may answer now, each with its contract (the role's statuses and
  its output schema): the step in flight of a waiting thread, or each waiting branch of a
  fan-out (J8, J9: an answer names its step, else the first); not a step whose role the graph
  no longer has (J8 refuses any answer; a resume decides it again). A subgraph role's step waits
  for a person inside its child thread: pass the child's own `allowed()` in `children` (by the
  parent's step) and its answers are listed here, reached `via` that step; without it the step
  is not answerable here (its contract is the child's role, not the subgraph role's).
- `resume`: the judge on `ResumeRequested` with a message; when that is allowed, once more
  without one, to learn whether the message is required (a thread at an ending whose
  `$START.resume` edge reads `{{{$inputs.message}}}`: `edges.needs_message`; J15-J17).
- `cancel`: the judge on `CancelRequested`, which looks at the state only (J13, J14).
- `fork`: a thread with at least one committed step may be forked (F1-F3 of engine.py's theory
  of operation); `fork_steps` are the steps it may be forked at: 1 to the last committed + 1
  (`fork_verdict(state, at)` answers for one step). core/fork.py refuses the rest with the whole
  log in hand: a branch of a fan-out that is not its first, a subgraph's child thread.
- `retry`: whether a thread suspended by a passing failure (a rate limit) may simply be resumed
  again, unasked: the suspension's kind is transient and the judge would take the resume.

Every face (the CLI, the web page's buttons and forms, the MCP server, Temporal's update
validators, a batch's retries) asks this and nothing else. Whether *this process* may act (a
thread another process runs, say) is the face's own business, as is what a person typed (the
judge checks an answer's text against the contract when it is sent).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..definition.models import Graph, Role
from .engine import judge
from .events import SuspendKind, ThreadStatus
from .outcomes import CancelRequested, Refused, ResumeRequested
from .state import InFlight, ThreadState
from .subgraph import child_id

# What a message-less resume is asked with: any non-blank text, never recorded (judge is pure).
_A_MESSAGE = "a message"

# Suspensions that a later try may simply not meet again: a batch resumes them by itself.
TRANSIENT = frozenset({SuspendKind.RATE_LIMIT})


@dataclass(frozen=True)
class Verdict:
    """Whether a request would be taken, and why not (in the words the judge refuses with).
    For a resume, `needs_message` says the request must carry a message (`why` says why)."""

    ok: bool
    why: str = ""
    needs_message: bool = False


@dataclass(frozen=True)
class Answerable:
    """A step a person may answer now, and the contract the answer is checked against."""

    thread_id: str  # the thread that holds the step: this one, or a subgraph's child
    step: int  # its step number in that thread
    role_name: str
    role: Role
    prompt: str  # the question
    inputs: dict[str, Any] = field(default_factory=dict)  # that thread's inputs
    branch: int | None = None  # a waiting branch of a fan-out: its index
    via: tuple[int, ...] = ()  # the subgraph steps it is reached through, from the top thread

    @property
    def statuses(self) -> tuple[str, ...]:
        """The statuses an answer may carry ("_" for a role without statuses)."""
        return tuple(self.role.contract.statuses)

    @property
    def schema(self) -> dict[str, Any]:
        """The role's output schema (its frontmatter's JSON Schema)."""
        return dict(self.role.frontmatter)

    @property
    def top_step(self) -> int:
        """The step of the top thread an answer is addressed to (a subgraph step, or itself)."""
        return self.via[0] if self.via else self.step


@dataclass(frozen=True)
class Allowed:
    """What may happen to a thread now (see the module's docstring)."""

    thread_id: str
    status: ThreadStatus
    answers: tuple[Answerable, ...]
    resume: Verdict
    cancel: Verdict
    fork: Verdict
    retry: Verdict
    why_no_answer: str = ""  # when `answers` is empty: why nothing can be answered
    fork_steps: range = range(0)  # the steps a fork may be made at (F1)

    @property
    def answer(self) -> Answerable | None:
        """The step an answer that names none goes to: the first."""
        return self.answers[0] if self.answers else None

    def to_dict(self) -> dict[str, Any]:
        """As JSON values (the MCP server's `thread_state` shows it as `allowed`)."""

        def verdict(v: Verdict) -> dict[str, Any]:
            return {"ok": v.ok, **({"why": v.why} if v.why else {})}

        return {
            "answer": [
                {"step": a.top_step, "role": a.role_name, "statuses": list(a.statuses)}
                | ({"thread": a.thread_id, "its_step": a.step} if a.via else {})
                for a in self.answers
            ],
            "resume": verdict(self.resume) | {"needs_message": self.resume.needs_message},
            "cancel": verdict(self.cancel),
            "fork": verdict(self.fork)
            | ({"steps": [self.fork_steps[0], self.fork_steps[-1]]} if self.fork_steps else {}),
        }

    def answering(self, step: int | None) -> Answerable | None:
        """The answerable step numbered `step` of the top thread (None: the first)."""
        if step is None:
            return self.answer
        return next((a for a in self.answers if a.top_step == step), None)


def allowed(
    graph: Graph | None, state: ThreadState, children: Mapping[int, Allowed] | None = None
) -> Allowed:
    """What may happen to the thread now. `graph` None: the thread's graph cannot be read, so
    only a cancel (which looks at the state alone) may be taken. `children`: the `allowed()` of
    the child thread of each waiting subgraph step, by the parent's step number."""
    answers, why_no_answer = _answers(graph, state, children or {})
    resume = _resume(graph, state)
    return Allowed(
        thread_id=state.thread_id,
        status=state.status,
        answers=answers,
        resume=resume,
        cancel=_cancel(state),
        fork=fork_verdict(state),
        retry=_retry(state, resume),
        why_no_answer=why_no_answer,
        fork_steps=range(1, state.committed + 2) if state.committed >= 1 else range(0),
    )


def allowed_within(
    graph: Graph | None,
    state: ThreadState,
    child_state: Callable[[str], ThreadState | None],
) -> Allowed:
    """`allowed()` with the `allowed()` of the child of each waiting subgraph step, followed
    down (S5). `child_state(id)` reads a child thread's state where the caller keeps it (a
    store, a workflow, a workflow's kept logs); None: no such child (yet)."""
    children: dict[int, Allowed] = {}
    for flight in _waiting(state) if graph is not None else []:
        kid = graph.subgraph(flight.role) if graph is not None else None
        if kid is None:
            continue
        kid_state = child_state(child_id(state.thread_id, flight.step))
        if kid_state is not None:
            children[flight.step] = allowed_within(kid, kid_state, child_state)
    return allowed(graph, state, children)


def _waiting(state: ThreadState) -> list[InFlight]:
    """The steps a waiting thread waits on: its step in flight, or its waiting branches."""
    if state.status != ThreadStatus.WAITING:
        return []
    if state.in_flight is not None:
        return [state.in_flight]
    return state.fanout.waiting() if state.fanout is not None else []


def _answers(
    graph: Graph | None, state: ThreadState, children: Mapping[int, Allowed]
) -> tuple[tuple[Answerable, ...], str]:
    tid = state.thread_id
    waiting = _waiting(state)
    if not waiting:
        return (), f"thread {tid} is {state.status}, not waiting for an answer"
    if graph is None:
        return (), f"the graph of thread {tid} cannot be read, so no answer can be checked"
    answers: list[Answerable] = []
    withheld: list[str] = []
    for f in waiting:
        role = graph.roles.get(f.role)
        if role is None:  # J8 refuses any answer; a resume decides the step again (J17)
            withheld.append(
                f"the graph no longer has role '{f.role}', which step {f.step} waits for: "
                "resume the thread to decide the step again"
            )
            continue
        if role.graph is not None:  # a person waits inside its child
            child = children.get(f.step)
            if child is None or not child.answers:
                withheld.append(f"step {f.step} ({f.role}) waits inside its child thread")
                continue
            answers += [replace(a, via=(f.step, *a.via)) for a in child.answers]
            continue
        answers.append(
            Answerable(tid, f.step, f.role, role, f.prompt, dict(state.inputs), f.branch)
        )
    return tuple(answers), "; ".join(withheld)


def _resume(graph: Graph | None, state: ThreadState) -> Verdict:
    if graph is None:
        return Verdict(False, "the thread's graph cannot be read, so it cannot be resumed")
    try:
        judge(graph, state, ResumeRequested(_A_MESSAGE))
    except Refused as exc:
        return Verdict(False, exc.message)
    try:
        judge(graph, state, ResumeRequested(None))
    except Refused as exc:  # J15: only a message is missing
        return Verdict(True, exc.message, needs_message=True)
    return Verdict(True)


def _cancel(state: ThreadState) -> Verdict:
    try:
        judge(None, state, CancelRequested())
    except Refused as exc:
        return Verdict(False, exc.message)
    return Verdict(True)


def fork_verdict(state: ThreadState, at: int | None = None) -> Verdict:
    """F1, F2: whether the thread may be forked at step `at` (None: at all). A fork needs a
    committed step to start from, and a step between 1 and the last committed + 1 (that one
    is the default: the step after the last committed, decided again)."""
    tid, last = state.thread_id, state.committed
    if last < 1:
        return Verdict(False, f"thread {tid} has no committed step to fork from")
    if at is not None and not 1 <= at <= last + 1:
        return Verdict(
            False,
            f"thread {tid} has no step {at} to fork at: it may be forked at steps 1 to "
            f"{last + 1} (its last committed step is {last})",
        )
    return Verdict(True)


def _retry(state: ThreadState, resume: Verdict) -> Verdict:
    if state.status != ThreadStatus.SUSPENDED or state.suspend_kind not in TRANSIENT:
        return Verdict(False, f"thread {state.thread_id} is not suspended by a passing failure")
    return resume
