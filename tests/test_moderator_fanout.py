"""The pure moderator's rules for fan-outs and subgraphs, table-driven (A10-A12, D9-D14, J8,
J9, J15, J18, J19 of the theory of operation in orchestrator/core/engine.py). No store, no
actor."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orchestrator.core.checks import check_limits
from orchestrator.core.commands import Idle, Limits, Record, RunBranches
from orchestrator.core.engine import decide, fold, judge
from orchestrator.core.events import (
    BranchesStarted,
    BranchFailed,
    Event,
    HumanWaiting,
    StepCommitted,
    StepStarted,
    SuspendKind,
    ThreadCompleted,
    ThreadResumed,
    ThreadStarted,
    ThreadStatus,
    ThreadSuspended,
)
from orchestrator.core.outcomes import (
    ActorFailed,
    Answered,
    ChildEnded,
    Refused,
    Replied,
    ResumeRequested,
)
from orchestrator.core.state import ThreadState
from orchestrator.definition.loader import load_graph
from orchestrator.definition.models import Graph
from orchestrator.testing import reply

CHILD = """
name: kid
description: A child graph
roles:
  solo:
    description: s
    goal: g
    frontmatter: { properties: { note: { type: string } }, required: [note] }
graph:
  $START: { _: { role: solo, prompt: "{{{$inputs.task}}}" } }
  solo: { _: { role: $END, ending: noted, prompt: "{{{note}}}" } }
"""

GRAPH = """
name: fans
description: The graph of the fan-out rows.
limits: { max_steps: 8, max_parallel: 2 }
roles:
  lead:
    description: l
    goal: g
    frontmatter:
      properties:
        $status: { enum: [many, each] }
        items: { type: array }
      required: [$status]
  worker:
    description: w
    goal: g
    frontmatter: { properties: { out: { type: string } }, required: [out] }
  person:
    description: p
    goal: g
    actor: human
    frontmatter: { properties: { out: { type: string } }, required: [out] }
  nested:
    description: runs kid
    graph: kid.yaml
graph:
  $START: { _: { role: lead, prompt: "Lead" } }
  lead:
    many:
      parallel:
        - { role: worker, prompt: "W1" }
        - { role: person, prompt: "P2" }
        - { role: worker, prompt: "W3" }
      join: { role: nested, prompt: "{{#$branches}}{{{out}}},{{/$branches}}" }
    each:
      for_each: items
      role: worker
      prompt: "Item {{{item}}}"
      join: { role: $END, prompt: "n={{{$thread.step}}}" }
  nested: { noted: { role: $END, prompt: "{{{$body}}}" } }
"""


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Graph:
    folder: Path = tmp_path_factory.mktemp("fans")
    (folder / "kid.yaml").write_text(textwrap.dedent(CHILD))
    (folder / "fans.yaml").write_text(textwrap.dedent(GRAPH))
    return load_graph(folder / "fans.yaml")


START = ThreadStarted("T", "fans", "sha256:x", {"task": "t"}, "/w")
BRANCHES = [
    {"role": "worker", "prompt": "W1", "location": None, "inputs": None},
    {"role": "person", "prompt": "P2", "location": None, "inputs": None},
    {"role": "worker", "prompt": "W3", "location": None, "inputs": None},
]


def lead(status: str, **fields: Any) -> list[Event]:
    text = reply(status, **fields)
    return [
        StepStarted(1, "lead", "Lead", "$START", "_"),
        StepCommitted(1, "lead", status, {"$status": status, **fields}, "", text),
    ]


def branch(n: int, role: str = "worker") -> StepStarted:
    return StepStarted(n, role, f"X{n}", "lead", "many", branch=n - 2)


def done(n: int, role: str = "worker") -> StepCommitted:
    return StepCommitted(n, role, "_", {"out": f"o{n}"}, "", reply(out=f"o{n}"))


FANNED = [START, *lead("many"), BranchesStarted("lead", "many", 2, BRANCHES)]
TWO_RUNNING = [*FANNED, branch(2), branch(3, "person")]
ALL_DONE = [*TWO_RUNNING, done(2), branch(4), done(3, "person"), done(4)]


@dataclass(frozen=True)
class Row:
    rule: str
    events: list[Event]
    check: Callable[[Graph, ThreadState], bool]


def decides(check: Callable[[Any], bool]) -> Callable[[Graph, ThreadState], bool]:
    return lambda g, s: check(decide(g, s))


def records(cls: type[Event], **attrs: Any) -> Callable[[Graph, ThreadState], bool]:
    def check(g: Graph, s: ThreadState) -> bool:
        c = decide(g, s)
        return (
            isinstance(c, Record)
            and isinstance(c.event, cls)
            and all(getattr(c.event, k) == v for k, v in attrs.items())
        )

    return check


def judges(outcome: Any, cls: type[Event], **attrs: Any) -> Callable[[Graph, ThreadState], bool]:
    def check(g: Graph, s: ThreadState) -> bool:
        events = judge(g, s, outcome)
        return (
            len(events) == 1
            and isinstance(events[0], cls)
            and all(getattr(events[0], k) == v for k, v in attrs.items())
        )

    return check


def refuses(outcome: Any, words: str) -> Callable[[Graph, ThreadState], bool]:
    def check(g: Graph, s: ThreadState) -> bool:
        try:
            judge(g, s, outcome)
        except Refused as exc:
            return words in exc.message
        return False

    return check


PERSON_WAITS = [*TWO_RUNNING, HumanWaiting(3, "person"), done(2), branch(4), done(4)]

ROWS = [
    Row(
        "A10 a fan-out: branch i is step first+i",
        FANNED,
        lambda g, s: (
            s.fanout is not None and s.fanout.first_step == 2 and s.fanout.unstarted() == [0, 1, 2]
        ),
    ),
    Row(
        "A11 branches in flight beside each other",
        TWO_RUNNING,
        lambda g, s: (
            s.fanout is not None and sorted(s.fanout.flights) == [2, 3] and s.in_flight is None
        ),
    ),
    Row(
        "A11 a failed branch; the thread still runs",
        [*TWO_RUNNING, BranchFailed(2, "bad", SuspendKind.REPAIRS)],
        lambda g, s: (
            s.status == ThreadStatus.RUNNING and s.fanout is not None and 0 in s.fanout.failed
        ),
    ),
    Row(
        "A11 a resume forgets branches in flight and failed",
        [
            *TWO_RUNNING,
            BranchFailed(2, "bad", SuspendKind.REPAIRS),
            ThreadSuspended("x", SuspendKind.REPAIRS),
            ThreadResumed(),
        ],
        lambda g, s: s.fanout is not None and s.fanout.unstarted() == [0, 1, 2],
    ),
    Row(
        "A12 only a waiting branch left: the thread waits",
        [*TWO_RUNNING, HumanWaiting(3, "person"), done(2), branch(4), done(4)],
        lambda g, s: (
            s.status == ThreadStatus.WAITING
            and s.waiting_for is not None
            and s.waiting_for.step == 3
        ),
    ),
    Row(
        "A12 a waiting branch while another runs: still running",
        [*TWO_RUNNING, HumanWaiting(3, "person")],
        lambda g, s: s.status == ThreadStatus.RUNNING,
    ),
    Row(
        "D10 a parallel edge fans out",
        [START, *lead("many")],
        records(BranchesStarted, first_step=2),
    ),
    Row(
        "D10 for_each: one branch per item, the item under `as`",
        [START, *lead("each", items=["a", "b"])],
        records(
            BranchesStarted,
            branches=[
                {"role": "worker", "prompt": "Item a", "location": None, "inputs": None},
                {"role": "worker", "prompt": "Item b", "location": None, "inputs": None},
            ],
        ),
    ),
    Row(
        "D10b for_each over no list",
        [START, *lead("each", items=None)],
        records(ThreadSuspended, kind=SuspendKind.TEMPLATE),
    ),
    Row(
        "D11 a fan-out over max_steps",
        [START, *lead("each", items=list(range(8)))],
        records(ThreadSuspended, kind=SuspendKind.LIMIT),
    ),
    Row("D9 the first branch starts", FANNED, records(StepStarted, step=2, branch=0, prompt="W1")),
    Row(
        "D9b max_parallel reached: the running branches",
        TWO_RUNNING,
        decides(lambda c: isinstance(c, RunBranches) and [r.step for r in c.steps] == [2, 3]),
    ),
    Row(
        "D12 a branch failed, another runs: it runs on",
        [*TWO_RUNNING, BranchFailed(2, "bad", SuspendKind.REPAIRS)],
        decides(lambda c: isinstance(c, RunBranches) and [r.step for r in c.steps] == [3]),
    ),
    Row(
        "D12b a branch failed, none runs: suspended with its kind",
        [*TWO_RUNNING, BranchFailed(2, "bad", SuspendKind.REPAIRS), done(3, "person")],
        records(ThreadSuspended, kind=SuspendKind.REPAIRS, step=2),
    ),
    Row(
        "D13 only a waiting branch: idle",
        [*TWO_RUNNING, HumanWaiting(3, "person"), done(2), branch(4), done(4)],
        decides(lambda c: c == Idle(ThreadStatus.WAITING)),
    ),
    Row(
        "D14 every branch committed: the join, seeing $branches in branch order",
        ALL_DONE,
        records(StepStarted, step=5, role="nested", join=True, prompt="o2,o3,o4,"),
    ),
    Row(
        "D14 a join into $END",
        [START, *lead("each", items=[]), BranchesStarted("lead", "each", 2, [])],
        records(ThreadCompleted, final="n=2"),
    ),
    Row(
        "J18 a branch whose actor failed fails alone",
        TWO_RUNNING,
        judges(ActorFailed(2, "down", SuspendKind.PROVIDER), BranchFailed, step=2),
    ),
    Row(
        "J19 a child's ending commits the subgraph step with that status",
        [*ALL_DONE, StepStarted(5, "nested", "x", "lead", "many", join=True)],
        judges(
            ChildEnded(5, "T.5", "noted", "fine", {"note": "n"}, steps=1),
            StepCommitted,
            status="noted",
            body="fine",
            child="T.5",
            child_steps=1,
        ),
    ),
    Row(
        "J15 a thread waiting on a subgraph's child may be resumed",
        [
            *ALL_DONE,
            StepStarted(5, "nested", "x", "lead", "many", join=True),
            HumanWaiting(5, "nested"),
        ],
        judges(ResumeRequested(), ThreadResumed),
    ),
    Row(
        "J9 an answer naming a waiting branch's step commits that branch",
        PERSON_WAITS,
        judges(Answered(reply(out="yes"), step=3), StepCommitted, step=3, role="person"),
    ),
    Row(
        "J8 an answer naming a step that does not wait is refused",
        PERSON_WAITS,
        refuses(Answered(reply(out="yes"), step=2), "step 2 of thread T does not wait"),
    ),
    Row(
        "J1 a branch's late reply after it failed: nothing",
        [*TWO_RUNNING, BranchFailed(2, "bad", SuspendKind.REPAIRS)],
        lambda g, s: judge(g, s, Replied(2, reply(out="x"))) == [],
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.rule)
def test_rule(graph: Graph, row: Row) -> None:
    assert row.check(graph, fold(row.events))


def test_a_childs_steps_count_against_max_steps(graph: Graph) -> None:
    events: list[Event] = [*ALL_DONE, StepStarted(5, "nested", "x", "lead", "many", join=True)]
    (commit,) = judge(graph, fold(events), ChildEnded(5, "T.5", "noted", "f", {}, steps=3))
    state = fold([*events, commit])
    assert state.committed + state.child_steps == 8
    limited = check_limits(state, "worker", Limits(8, 10, None))
    assert limited is not None and "max_steps (8) reached after 8 steps" in str(limited.event)
    assert check_limits(state, "worker", Limits(9, 10, None)) is None
