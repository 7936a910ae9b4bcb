"""The pure moderator, table-driven: one row per rule of its theory of operation.

Each row gives a log (events in), then what the moderator is asked (decide, or judge an
outcome), and what must come out: a command, the events to append, or a refusal. No store, no
actor, no I/O: the rules alone. The rule names (A1, D4, J10...) are those listed at the top of
orchestrator/core/engine.py.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orchestrator.core.commands import Idle, Record, RunStep
from orchestrator.core.engine import apply, decide, fold, judge
from orchestrator.core.events import (
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
from orchestrator.core.outcomes import (
    ActorFailed,
    Answered,
    CancelRequested,
    Interrupted,
    NeedsPerson,
    PreconditionFailed,
    Refused,
    Replied,
    ResumeRequested,
)
from orchestrator.core.state import HISTORY_LIMIT, ThreadState
from orchestrator.definition.loader import load_graph
from orchestrator.definition.models import Graph
from orchestrator.testing import reply

GRAPH = """
name: table
description: The graph every row of the table runs on.
limits: { max_steps: 5, max_visits: 2, max_cost_usd: 1.0 }
roles:
  writer:
    description: Writes
    goal: You write.
    max_repairs: 1
    frontmatter:
      type: object
      properties:
        $status: { enum: [drafted, ask] }
        draft: { type: string }
      required: [$status, draft]
  person:
    description: A person decides
    goal: You decide.
    actor: human
    frontmatter:
      type: object
      properties:
        $status: { enum: [yes, no] }
      required: [$status]
graph:
  $START:
    _: { role: writer, prompt: "Write about {{{$inputs.task}}}" }
    resume: { role: writer, prompt: "Again: {{{$inputs.message}}}" }
  writer:
    drafted: { role: $END, prompt: "Done: {{{draft}}}" }
    ask: { role: person, prompt: "Decide on {{{draft}}}" }
  person:
    yes: { role: $END, prompt: "Yes to {{{$steps.writer.draft}}}" }
    no: { role: writer, prompt: "{{{$steps.writer.missing}}}" }
"""


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Graph:
    folder: Path = tmp_path_factory.mktemp("graphs")
    path = folder / "table.yaml"
    path.write_text(textwrap.dedent(GRAPH), encoding="utf-8")
    return load_graph(path)


# --------------------------------------------------------------------------- logs


START = ThreadStarted("T", "table", "sha256:x", {"task": "owls"}, "/w")


def started(n: int = 1, role: str = "writer", prompt: str = "Write about owls") -> StepStarted:
    return StepStarted(n, role, prompt, "$START" if n == 1 else "writer", "_", None)


def committed(n: int, role: str, status: str, **fields: Any) -> StepCommitted:
    text = reply(status, **fields)
    return StepCommitted(n, role, status, {"$status": status, **fields}, "", text, cost_usd=0.1)


ASKED = [START, started(), committed(1, "writer", "ask", draft="d1")]
PERSON_IN_FLIGHT = [*ASKED, StepStarted(2, "person", "Decide on d1", "writer", "ask")]
WAITING = [*PERSON_IN_FLIGHT, HumanWaiting(2, "person")]
WRITING = [START, started()]
SUSPENDED = [*WRITING, ThreadSuspended("x", SuspendKind.PROVIDER, step=1)]
COMPLETED = [START, started(), committed(1, "writer", "drafted", draft="d"), ThreadCompleted("f")]


# --------------------------------------------------------------------------- apply


@dataclass(frozen=True)
class ApplyRow:
    rule: str
    events: list[Event]
    check: Callable[[ThreadState], bool]


APPLY = [
    ApplyRow("A1 started: running", [START], lambda s: s.status == ThreadStatus.RUNNING),
    ApplyRow(
        "A2 step in flight; the resume message is kept until the step commits",
        [*SUSPENDED, ThreadResumed("go on"), started()],
        lambda s: s.in_flight is not None and s.in_flight.step == 1 and s.resume_message == "go on",
    ),
    ApplyRow(
        "A4 the resume message is used up when its step commits",
        [*SUSPENDED, ThreadResumed("go on"), started(), committed(1, "writer", "ask", draft="d")],
        lambda s: s.resume_message is None,
    ),
    ApplyRow(
        "A3 rejected: still in flight, one repair used",
        [*WRITING, AttemptRejected(1, "bad", ["e"], cost_usd=0.2)],
        lambda s: s.in_flight is not None and len(s.in_flight.attempts) == 1 and s.cost_usd == 0.2,
    ),
    ApplyRow(
        "A4 committed: step done",
        ASKED,
        lambda s: s.in_flight is None and s.committed == 1 and s.latest["writer"].status == "ask",
    ),
    ApplyRow(
        "A4 the state keeps the last HISTORY_LIMIT steps, the latest per role and the counts",
        [
            START,
            *(
                e
                for n in range(1, HISTORY_LIMIT + 6)
                for e in (started(n), committed(n, "writer", "ask", draft=f"d{n}"))
            ),
        ],
        lambda s: (
            len(s.recent) == HISTORY_LIMIT
            and s.recent[0].step == 6
            and s.committed == HISTORY_LIMIT + 5
            and s.visits == {"writer": HISTORY_LIMIT + 5}
            and s.latest["writer"].frontmatter["draft"] == f"d{HISTORY_LIMIT + 5}"
            and s.last is not None
            and s.last.index == HISTORY_LIMIT + 4  # its place in commit order, from 0
        ),
    ),
    ApplyRow(
        "A4 a person answered: running again",
        [*WAITING, committed(2, "person", "yes")],
        lambda s: s.status == ThreadStatus.RUNNING and s.reason is None,
    ),
    ApplyRow("A5 waiting", WAITING, lambda s: s.status == ThreadStatus.WAITING),
    ApplyRow(
        "A6 suspended with its kind",
        SUSPENDED,
        lambda s: s.status == ThreadStatus.SUSPENDED and s.suspend_kind == SuspendKind.PROVIDER,
    ),
    ApplyRow(
        "A7 resumed: the step in flight is decided again",
        [*SUSPENDED, ThreadResumed("more")],
        lambda s: (
            s.status == ThreadStatus.RUNNING and s.in_flight is None and s.resume_message == "more"
        ),
    ),
    ApplyRow(
        "A7 resumed from an ending: $START.resume, the message seen as $inputs.message only",
        [*COMPLETED, ThreadResumed("again")],
        lambda s: (
            s.resume_from_end
            and s.end_message == "again"
            and "message" not in s.inputs
            and s.final is None
        ),
    ),
    ApplyRow(
        "A7 resumed from an ending without a message: $inputs.message is empty, not missing",
        [*COMPLETED, ThreadResumed()],
        lambda s: s.resume_from_end and s.end_message == "",
    ),
    ApplyRow(
        "A7 resumed after a limit: limits count anew",
        [*ASKED, ThreadSuspended("limit", SuspendKind.LIMIT), ThreadResumed()],
        lambda s: s.budget_step == 1 and s.budget_visits == {"writer": 1},
    ),
    ApplyRow("A8 completed", COMPLETED, lambda s: s.status == ThreadStatus.COMPLETED),
    ApplyRow("A9 failed (older logs)", [START, ThreadFailed("boom")], lambda s: s.status.ended),
    ApplyRow("A9 cancelled", [START, ThreadCancelled()], lambda s: s.status.ended),
    ApplyRow(
        "cost and tokens add up",
        [
            *WRITING,
            AttemptRejected(1, "x", ["e"], usage={"input_tokens": 5}, cost_usd=0.5),
            ThreadSuspended("y", SuspendKind.PROVIDER, usage={"output_tokens": 7}, cost_usd=0.25),
        ],
        lambda s: (
            s.cost_usd == 0.75
            and (s.input_tokens, s.output_tokens) == (5, 7)
            and s.summary().cost_usd == 0.75
        ),
    ),
]


@pytest.mark.parametrize("row", APPLY, ids=[r.rule for r in APPLY])
def test_apply(row: ApplyRow) -> None:
    state = ThreadState()
    for event in row.events:
        apply(state, event)
    assert row.check(state), state


# --------------------------------------------------------------------------- decide


@dataclass(frozen=True)
class DecideRow:
    rule: str
    events: list[Event]
    expect: Callable[[Any], bool]


def records(cls: type[Event], says: str = "", **attrs: Any) -> Callable[[Any], bool]:
    def check(command: Any) -> bool:
        if not isinstance(command, Record) or not isinstance(command.event, cls):
            return False
        if says and says not in getattr(command.event, "reason", ""):
            return False
        return all(getattr(command.event, k) == v for k, v in attrs.items())

    return check


DECIDE = [
    DecideRow("D1 not running: idle", COMPLETED, lambda c: c == Idle(ThreadStatus.COMPLETED)),
    DecideRow("D1 waiting: idle", WAITING, lambda c: c == Idle(ThreadStatus.WAITING)),
    DecideRow(
        "D2 the role in flight is gone",
        [START, StepStarted(1, "ghost", "p", "$START", "_")],
        records(ThreadSuspended, kind=SuspendKind.GRAPH),
    ),
    DecideRow(
        "D3 a step in flight runs, with its attempts",
        [*WRITING, AttemptRejected(1, "bad", ["e"])],
        lambda c: isinstance(c, RunStep) and c.step == 1 and c.attempts == (("bad", ("e",)),),
    ),
    DecideRow(
        "D4 no edge for the status",
        [START, started(), committed(1, "writer", "lost", draft="d")],
        records(ThreadSuspended, kind=SuspendKind.GRAPH),
    ),
    DecideRow(
        "D5 the prompt does not render",
        [*PERSON_IN_FLIGHT, committed(2, "person", "no")],
        records(ThreadSuspended, kind=SuspendKind.TEMPLATE),
    ),
    DecideRow(
        "D6 an edge into $END completes",
        [START, started(), committed(1, "writer", "drafted", draft="d")],
        records(ThreadCompleted, final="Done: d"),
    ),
    DecideRow(
        "D7 max_visits reached",
        [
            START,
            started(),
            committed(1, "writer", "ask", draft="a"),
            StepStarted(2, "person", "p", "writer", "ask"),
            committed(2, "person", "yes"),
            ThreadCompleted("f"),
            ThreadResumed("again"),
            StepStarted(3, "writer", "p", "$START", "resume"),
            committed(3, "writer", "ask", draft="b"),
            StepStarted(4, "person", "p", "writer", "ask"),
            committed(4, "person", "yes"),
            ThreadCompleted("f"),
            ThreadResumed("third"),
        ],
        records(ThreadSuspended, "max_visits", kind=SuspendKind.LIMIT),
    ),
    DecideRow(
        "D7 max_cost_usd reached",
        [START, started(), AttemptRejected(1, "x", ["e"], cost_usd=2.0)]
        + [committed(1, "writer", "ask", draft="d")],
        records(ThreadSuspended, "max_cost_usd", kind=SuspendKind.LIMIT),
    ),
    DecideRow(
        "D7 max_steps reached",
        [
            START,
            *[
                e
                for n in range(1, 6)
                for e in (started(n), committed(n, "writer", "ask", draft=str(n)))
            ],
        ],
        records(ThreadSuspended, "max_steps", kind=SuspendKind.LIMIT),
    ),
    DecideRow(
        "D8 the next step starts, the resume message appended",
        [*ASKED, ThreadSuspended("s", SuspendKind.ROLE), ThreadResumed("hurry")],
        records(StepStarted, step=2, role="person", source="writer", status="ask"),
    ),
    DecideRow("D8 the first step", [START], records(StepStarted, prompt="Write about owls")),
]


@pytest.mark.parametrize("row", DECIDE, ids=[r.rule for r in DECIDE])
def test_decide(graph: Graph, row: DecideRow) -> None:
    command = decide(graph, fold(row.events))
    assert row.expect(command), command
    assert decide(graph, fold(row.events)) == command  # pure: the same log, the same command


def test_decide_appends_the_resume_message(graph: Graph) -> None:
    command = decide(graph, fold([*SUSPENDED, ThreadResumed("hurry")]))
    assert isinstance(command, Record) and isinstance(command.event, StepStarted)
    assert command.event.prompt.endswith("hurry")


# --------------------------------------------------------------------------- judge


@dataclass(frozen=True)
class JudgeRow:
    rule: str
    events: list[Event]
    outcome: Any
    expect: list[tuple[type[Event], dict[str, Any]]] | str  # events, or words of the refusal


VALID = reply("drafted", draft="ok")
JUDGE = [
    JudgeRow(
        "J1 stale: the thread was cancelled", [*WRITING, ThreadCancelled()], Replied(1, VALID), []
    ),
    JudgeRow("J1 stale: another step", WRITING, Replied(7, VALID), []),
    JudgeRow(
        "J2 invalid, repairs left", WRITING, Replied(1, "no frontmatter"), [(AttemptRejected, {})]
    ),
    JudgeRow(
        "J3 invalid, repairs used up",
        [*WRITING, AttemptRejected(1, "bad", ["e"])],
        Replied(1, "still bad"),
        [(AttemptRejected, {}), (ThreadSuspended, {"kind": SuspendKind.REPAIRS})],
    ),
    JudgeRow(
        "J4 $SUSPEND",
        WRITING,
        Replied(1, "---\n$status: $SUSPEND\nreason: which owls?\n---\n"),
        [(ThreadSuspended, {"kind": SuspendKind.ROLE})],
    ),
    JudgeRow(
        "J5 valid: committed",
        WRITING,
        Replied(1, VALID, cost_usd=0.3, actor="scripted"),
        [(StepCommitted, {"status": "drafted", "cost_usd": 0.3, "actor": "scripted"})],
    ),
    JudgeRow(
        "J6 the actor failed",
        WRITING,
        ActorFailed(1, "529 overloaded", SuspendKind.PROVIDER, cost_usd=0.1),
        [(ThreadSuspended, {"kind": SuspendKind.PROVIDER, "step": 1, "cost_usd": 0.1})],
    ),
    JudgeRow(
        "J6b a precondition of the role does not hold",
        WRITING,
        PreconditionFailed(1, ("set TOKEN first",)),
        [(ThreadSuspended, {"kind": SuspendKind.PRECONDITION, "step": 1})],
    ),
    JudgeRow(
        "J7 a person must answer", PERSON_IN_FLIGHT, NeedsPerson(2), [(HumanWaiting, {"step": 2})]
    ),
    JudgeRow("J8 answer while not waiting", WRITING, Answered(VALID), "not waiting"),
    JudgeRow("J8 an invalid answer", WAITING, Answered(reply("maybe")), "not accepted"),
    JudgeRow(
        "J9 a valid answer",
        WAITING,
        Answered(reply("yes")),
        [(StepCommitted, {"status": "yes", "actor": "human"})],
    ),
    JudgeRow(
        "J10 Ctrl-C at a person's step", PERSON_IN_FLIGHT, Interrupted(), [(HumanWaiting, {})]
    ),
    JudgeRow(
        "J11 Ctrl-C elsewhere",
        WRITING,
        Interrupted(),
        [(ThreadSuspended, {"kind": SuspendKind.INTERRUPTED, "step": 1})],
    ),
    JudgeRow("J12 Ctrl-C on a thread not running", WAITING, Interrupted(), []),
    JudgeRow(
        "J3 a person is asked again however often",
        [*PERSON_IN_FLIGHT, AttemptRejected(2, "x", ["e"]), AttemptRejected(2, "y", ["e"])],
        Replied(2, "still no frontmatter"),
        [(AttemptRejected, {})],
    ),
    JudgeRow("J13 cancel an ended thread", COMPLETED, CancelRequested(), "already completed"),
    JudgeRow("J14 cancel", WAITING, CancelRequested("no longer needed"), [(ThreadCancelled, {})]),
    JudgeRow(
        "J15 resume a cancelled thread",
        [START, ThreadCancelled()],
        ResumeRequested(),
        "cannot be resumed",
    ),
    JudgeRow("J15 resume a waiting thread", WAITING, ResumeRequested(), "threads answer"),
    JudgeRow(
        "J16 resume a thread whose process died",
        WRITING,
        ResumeRequested(),
        [(ThreadResumed, {"interrupted": True})],
    ),
    JudgeRow(
        "J16 a running thread with no step in flight was not interrupted",
        ASKED,
        ResumeRequested(),
        [(ThreadResumed, {"interrupted": False})],
    ),
    JudgeRow(
        "J17 resume a suspended thread",
        SUSPENDED,
        ResumeRequested("go"),
        [(ThreadResumed, {"interrupted": False, "message": "go"})],
    ),
    JudgeRow(
        "J15 resume an ending without the message its resume edge reads",
        COMPLETED,
        ResumeRequested("  "),
        "needs a message",
    ),
    JudgeRow(
        "J17 resume a completed thread", COMPLETED, ResumeRequested("more"), [(ThreadResumed, {})]
    ),
]


@pytest.mark.parametrize("row", JUDGE, ids=[r.rule for r in JUDGE])
def test_judge(graph: Graph, row: JudgeRow) -> None:
    state = fold(row.events)
    if isinstance(row.expect, str):
        with pytest.raises(Refused) as refused:
            judge(graph, state, row.outcome)
        assert row.expect in refused.value.message
        return
    events = judge(graph, state, row.outcome)
    assert [type(e) for e in events] == [cls for cls, _ in row.expect]
    for event, (_, attrs) in zip(events, row.expect, strict=True):
        for name, value in attrs.items():
            assert getattr(event, name) == value, (name, event)
    for event in events:  # what judge returns always folds
        apply(state, event)


def test_an_invalid_answer_carries_its_errors(graph: Graph) -> None:
    with pytest.raises(Refused) as refused:
        judge(graph, fold(WAITING), Answered(reply("maybe")))
    assert refused.value.errors and any("yes" in e for e in refused.value.errors)


def test_resume_of_a_completed_thread_needs_the_resume_edge(make_graph: Any) -> None:
    graph = make_graph(
        """
        name: no-resume
        description: d
        roles:
          w: { description: w, goal: g, frontmatter: { type: object, properties: { a: { type: string } } } }
        graph:
          $START: { _: { role: w, prompt: "go" } }
          w: { _: { role: $END, prompt: "end" } }
        """
    )
    done = [START, StepStarted(1, "w", "go", "$START", "_"), ThreadCompleted("end")]
    with pytest.raises(Refused, match=r"\$START.resume"):
        judge(graph, fold(done), ResumeRequested())


def test_a_cancel_needs_no_graph() -> None:
    assert judge(None, fold(WAITING), CancelRequested()) == [ThreadCancelled()]
    with pytest.raises(ValueError):
        judge(None, fold(WAITING), Interrupted())


def test_a_waiting_step_whose_role_is_gone_is_decided_again_on_resume(
    graph: Graph, make_graph: Any
) -> None:
    renamed = make_graph(GRAPH.replace("person", "approver"), name="table")
    state = fold(WAITING)
    with pytest.raises(Refused, match="the graph no longer has role 'person'"):
        judge(renamed, state, Answered(reply("yes")))
    (resumed,) = judge(renamed, state, ResumeRequested())
    apply(state, resumed)
    command = decide(renamed, state)
    assert isinstance(command, Record) and isinstance(command.event, StepStarted)
    assert command.event.role == "approver" and command.event.step == 2
    with pytest.raises(Refused, match="threads answer"):  # the old graph: answer it instead
        judge(graph, fold(WAITING), ResumeRequested())


GUARDED = """
name: guards-table
description: Rules D4b, D4c and D5b.
roles:
  w:
    description: w
    goal: g
    frontmatter:
      type: object
      properties:
        $status: { enum: [a, b, c, d, e] }
        n: { type: integer }
        dir: { type: string }
        items: { type: array, items: { type: integer } }
      required: [$status]
graph:
  $START: { _: { role: w, prompt: "go" } }
  w:
    a:
      - { when: "output.dir > 3", role: $END, prompt: "big" }
      - { role: $END, prompt: "small" }
    b:
      - { when: "output.n > 2", role: $END, prompt: "big" }
    c: { role: w, prompt: "there", location: "{{{dir}}}" }
    d:
      - { when: "output.items.all(x, output.items.all(y, x + y > 0))", role: $END, prompt: "all" }
      - { role: $END, prompt: "some" }
    e:
      - { when: "steps.w.missing.deeper == 1", role: $END, prompt: "deep" }
      - { role: $END, prompt: "shallow" }
"""


@pytest.mark.parametrize(
    ("rule", "reply_fields", "expect"),
    [
        ("D4 a guard that holds picks its edge", {"status": "b", "n": 3}, "Completed big"),
        ("D4b a guard that fails to evaluate suspends", {"status": "a", "n": 3}, "guard"),
        ("D4b a guard reading a key the value lacks suspends", {"status": "e"}, "guard"),
        (
            "D4b a guard over its cost budget suspends without running",
            {"status": "d", "items": list(range(1, 5001))},
            "guard",
        ),
        ("D4c no guard holds and no default", {"status": "b", "n": 1}, "graph"),
        ("D5b a location outside the workspace", {"status": "c", "dir": "../x"}, "graph"),
    ],
)
def test_decide_guards_and_locations(
    make_graph: Any, rule: str, reply_fields: dict[str, Any], expect: str
) -> None:
    graph = make_graph(GUARDED)
    fields = {k: v for k, v in reply_fields.items() if k != "status"}
    status = reply_fields["status"]
    log = [
        START,
        StepStarted(1, "w", "go", "$START", "_"),
        StepCommitted(1, "w", status, {"$status": status, **fields}, "", reply(status, **fields)),
    ]
    command = decide(graph, fold(log))
    assert isinstance(command, Record), rule
    if expect.startswith("Completed"):
        assert isinstance(command.event, ThreadCompleted) and command.event.final == "big"
    else:
        assert isinstance(command.event, ThreadSuspended) and command.event.kind == expect, rule


def test_judge_a_failed_precondition(graph: Graph) -> None:
    """J6b: the step's role needs what the machine lacks."""
    from orchestrator.core.outcomes import PreconditionFailed

    (event,) = judge(graph, fold(WRITING), PreconditionFailed(1, ("set TOKEN first",)))
    assert isinstance(event, ThreadSuspended) and event.kind == SuspendKind.PRECONDITION
    assert "set TOKEN first" in event.reason and event.step == 1
