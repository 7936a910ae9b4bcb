"""`allowed(graph, state)`, table-driven: what may happen to a thread now, row by row.

Each row gives a log (and, for a parent whose subgraph step waits, its child's log), and what
`allowed` must answer: the steps a person may answer (thread, step, role, reached via which
subgraph steps), whether resume (and with a message), cancel, fork and a batch's retry may
happen. Every row is also checked against the judge itself: each listed step takes a valid
answer for its contract, a thread with none refuses any answer, and resume and cancel are
offered exactly when the judge takes them. No store, no actor.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from orchestrator.core.allowed import Allowed, Answerable, allowed
from orchestrator.core.engine import fold, judge
from orchestrator.core.events import (
    BranchesStarted,
    Event,
    HumanWaiting,
    StepCommitted,
    StepStarted,
    SuspendKind,
    ThreadCancelled,
    ThreadCompleted,
    ThreadStarted,
    ThreadSuspended,
)
from orchestrator.core.outcomes import Answered, CancelRequested, Refused, ResumeRequested
from orchestrator.core.state import ThreadState
from orchestrator.definition.loader import load_graph
from orchestrator.definition.models import SINGLE_EXIT, Graph
from orchestrator.testing import reply

KID = """
name: kid
description: A child graph whose person approves.
roles:
  boss:
    description: approves
    goal: g
    actor: human
    frontmatter: { properties: { ok: { type: boolean } }, required: [ok] }
graph:
  $START: { _: { role: boss, prompt: "Approve {{{$inputs.task}}}?" } }
  boss: { _: { role: $END, ending: noted, prompt: "approved" } }
"""

GRAPH = """
name: asks
description: People answer here, in a branch and inside a child.
roles:
  writer:
    description: w
    goal: g
    frontmatter:
      properties:
        $status: { enum: [drafted, ask, many, deep] }
        draft: { type: string }
      required: [$status]
  person:
    description: p
    goal: g
    actor: human
    frontmatter:
      properties: { $status: { enum: [yes, no] }, why: { type: string } }
      required: [$status]
  other:
    description: o
    goal: g
    actor: human
    frontmatter: { properties: { budget: { type: integer } }, required: [budget] }
  nested:
    description: runs kid
    graph: kid.yaml
graph:
  $START:
    _: { role: writer, prompt: "Write about {{{$inputs.task}}}" }
    resume: { role: writer, prompt: "Again: {{{$inputs.message}}}" }
  writer:
    drafted: { role: $END, prompt: "Done" }
    ask: { role: person, prompt: "Decide" }
    many:
      parallel: [{ role: person, prompt: "P1" }, { role: other, prompt: "P2" }]
      join: { role: $END, prompt: "joined" }
    deep: { role: nested, prompt: "deep" }
  person: { yes: { role: $END, prompt: "yes" }, no: { role: $END, prompt: "no" } }
  nested: { noted: { role: $END, prompt: "{{{$body}}}" } }
"""


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Graph:
    folder: Path = tmp_path_factory.mktemp("asks")
    (folder / "kid.yaml").write_text(textwrap.dedent(KID))
    (folder / "asks.yaml").write_text(textwrap.dedent(GRAPH))
    return load_graph(folder / "asks.yaml")


START = ThreadStarted("T", "asks", "sha256:x", {"task": "owls"}, "/w")
WRITING = [START, StepStarted(1, "writer", "Write about owls", "$START", "_")]


def wrote(status: str) -> StepCommitted:
    return StepCommitted(1, "writer", status, {"$status": status}, "", reply(status))


WAITING = [
    *WRITING,
    wrote("ask"),
    StepStarted(2, "person", "Decide", "writer", "ask"),
    HumanWaiting(2, "person"),
]
BRANCHES = [
    {"role": "person", "prompt": "P1", "location": None, "inputs": None},
    {"role": "other", "prompt": "P2", "location": None, "inputs": None},
]
FANNED = [
    *WRITING,
    wrote("many"),
    BranchesStarted("writer", "many", 2, BRANCHES),
    StepStarted(2, "person", "P1", "writer", "many", branch=0),
    StepStarted(3, "other", "P2", "writer", "many", branch=1),
]
DEEP = [
    *WRITING,
    wrote("deep"),
    StepStarted(2, "nested", "deep", "writer", "deep"),
    HumanWaiting(2, "nested"),
]
CHILD = [
    ThreadStarted("T.2", "kid", "sha256:k", {"task": "owls"}, "/w"),
    StepStarted(1, "boss", "Approve owls?", "$START", "_"),
    HumanWaiting(1, "boss"),
]
COMPLETED = [*WRITING, wrote("drafted"), ThreadCompleted("Done")]


@dataclass(frozen=True)
class Row:
    name: str
    events: list[Event]
    answers: list[tuple[str, int, str, tuple[int, ...]]]  # thread, step, role, via
    resume: bool | str  # "message": allowed, with a message required
    cancel: bool
    fork: bool
    retry: bool = False
    child: list[Event] | None = None  # the log of step 2's child
    no_graph: bool = False
    why: str = ""  # words of `why_no_answer`
    statuses: dict[int, tuple[str, ...]] = field(default_factory=dict)


ROWS = [
    Row("a step in flight: resume (its process died), cancel", WRITING, [], True, True, False),
    Row(
        "a person waits: its step, with the role's statuses; resume refused (answer it)",
        WAITING,
        [("T", 2, "person", ())],
        False,
        True,
        True,
        statuses={2: ("yes", "no")},
    ),
    Row(
        "two branches wait: each may be answered, each with its contract",
        [*FANNED, HumanWaiting(2, "person"), HumanWaiting(3, "other")],
        [("T", 2, "person", ()), ("T", 3, "other", ())],
        False,
        True,
        True,
        statuses={2: ("yes", "no"), 3: (SINGLE_EXIT,)},
    ),
    Row(
        "a branch waits while another runs: the thread runs, nothing to answer yet",
        [*FANNED, HumanWaiting(2, "person")],
        [],
        True,
        True,
        True,
        why="is running, not waiting",
    ),
    Row(
        "a person waits inside a subgraph's child: answered through the parent",
        DEEP,
        [("T.2", 1, "boss", (2,))],
        True,
        True,
        True,
        child=CHILD,
        statuses={1: (SINGLE_EXIT,)},
    ),
    Row(
        "the same without the child's state: not answerable here",
        DEEP,
        [],
        True,
        True,
        True,
        why="step 2 (nested) waits inside its child thread",
    ),
    Row(
        "the waiting role is gone from the graph: no answer; resume decides the step again",
        [
            *WRITING,
            wrote("ask"),
            StepStarted(2, "ghost", "Boo", "writer", "ask"),
            HumanWaiting(2, "ghost"),
        ],
        [],
        True,
        True,
        True,
        why="no longer has role 'ghost', which step 2 waits for: resume",
    ),
    Row(
        "suspended: resume without a message, cancel",
        [*WRITING, ThreadSuspended("down", SuspendKind.PROVIDER, step=1)],
        [],
        True,
        True,
        False,
    ),
    Row(
        "suspended by a rate limit: a batch may retry it",
        [*WRITING, ThreadSuspended("429", SuspendKind.RATE_LIMIT, step=1)],
        [],
        True,
        True,
        False,
        retry=True,
    ),
    Row(
        "completed: resume needs the message its edge reads; fork; no cancel",
        COMPLETED,
        [],
        "message",
        False,
        True,
    ),
    Row(
        "cancelled: fork only",
        [*WAITING, ThreadCancelled()],
        [],
        False,
        False,
        True,
        why="is cancelled",
    ),
    Row(
        "the graph cannot be read: cancel only",
        WAITING,
        [],
        False,
        True,
        True,
        no_graph=True,
        why="cannot be read",
    ),
]


def ask(graph: Graph, row: Row) -> tuple[ThreadState, Allowed]:
    state = fold(row.events)
    children: dict[int, Allowed] = {}
    if row.child is not None:
        kid = graph.subgraph("nested")
        assert kid is not None
        children[2] = allowed(kid, fold(row.child))
    return state, allowed(None if row.no_graph else graph, state, children)


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_allowed(graph: Graph, row: Row) -> None:
    _, answer = ask(graph, row)
    assert [(a.thread_id, a.step, a.role_name, a.via) for a in answer.answers] == row.answers
    for a in answer.answers:
        if a.step in row.statuses:
            assert a.statuses == row.statuses[a.step]
            assert a.schema == dict(a.role.frontmatter) if a.role else {}
    assert (answer.resume.ok, answer.resume.needs_message) == (
        bool(row.resume),
        row.resume == "message",
    )
    assert answer.cancel.ok == row.cancel and answer.fork.ok == row.fork
    assert answer.retry.ok == row.retry
    assert row.why in answer.why_no_answer
    for verdict in (answer.resume, answer.cancel, answer.fork, answer.retry):
        assert verdict.ok or verdict.why  # a refusal always says why


def valid_answer(a: Answerable) -> str:
    """A reply its contract takes: the first status, each required field filled."""
    assert a.role is not None
    status = a.statuses[0]
    spec = a.role.contract.statuses[status]
    fillers = {"string": "x", "integer": 1, "boolean": True}
    fields = {f: fillers[spec.field_schemas[f].get("type", "string")] for f in spec.required}
    return reply(None if status == SINGLE_EXIT else status, **fields)


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_allowed_agrees_with_the_judge(graph: Graph, row: Row) -> None:
    """Control and attack in one: what `allowed` offers the judge takes, what it withholds
    the judge refuses (so a face that asks `allowed` can never offer a refused request)."""
    state, answer = ask(graph, row)
    kid = graph.subgraph("nested")
    for a in answer.answers:
        owner, target = (kid, fold(row.child or [])) if a.via else (graph, state)
        assert owner is not None
        events = judge(owner, target, Answered(valid_answer(a), a.step))
        assert isinstance(events[0], StepCommitted) and events[0].step == a.step
    if not answer.answers and not row.no_graph and "inside its child" not in row.why:
        with pytest.raises(Refused):  # J8: no answer is taken
            judge(graph, state, Answered(reply("yes"), None))

    def takes(outcome: Any) -> bool:
        asked = None if row.no_graph and isinstance(outcome, CancelRequested) else graph
        try:
            judge(asked, state, outcome)
        except Refused:
            return False
        return True

    if not row.no_graph:
        assert answer.resume.ok == takes(ResumeRequested("go on"))
        assert (answer.resume.ok and not answer.resume.needs_message) == takes(ResumeRequested())
    assert answer.cancel.ok == takes(CancelRequested())


def test_an_answer_is_addressed_by_the_top_threads_step(graph: Graph) -> None:
    row = ROWS[4]
    _, answer = ask(graph, row)
    assert answer.answering(None) == answer.answer
    found = answer.answering(2)  # the parent's subgraph step reaches the child's person
    assert found is not None and (found.thread_id, found.step) == ("T.2", 1)
    assert answer.answering(1) is None
