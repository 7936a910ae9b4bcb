"""The moderator's subgraph rules (S1-S6 of orchestrator/core/engine.py), table-driven and pure.

Each row gives a parent's log (and, where the rule looks at one, a child's), the question the
driver asks (decide, a rule of core/subgraph.py, or judge) and what must come out. The rules
through the real runner and session are in tests/test_subgraphs.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orchestrator.core.commands import RunBranches, RunChild
from orchestrator.core.engine import decide, fold, judge
from orchestrator.core.events import (
    BranchesStarted,
    Event,
    HumanWaiting,
    StepCommitted,
    StepStarted,
    SuspendKind,
    ThreadCancelled,
    ThreadCompleted,
    ThreadResumed,
    ThreadStarted,
    ThreadSuspended,
)
from orchestrator.core.outcomes import (
    ActorFailed,
    Answered,
    ChildEnded,
    NeedsPerson,
    Refused,
    ResumeRequested,
)
from orchestrator.core.state import ThreadState
from orchestrator.core.subgraph import (
    child_outcome,
    child_request,
    child_started,
    children_in_flight,
    waiting_child,
)
from orchestrator.definition.loader import load_graph
from orchestrator.definition.models import Graph
from orchestrator.testing import reply

CHILD = """\
name: child
description: Fixes one thing
inputs:
  type: object
  properties: { issue: { type: string } }
  required: [issue]
roles:
  worker:
    description: works
    goal: You work.
    frontmatter:
      properties: { $status: { enum: [fixed, ask] } }
      required: [$status]
  person:
    description: answers
    goal: You answer.
    actor: human
    frontmatter:
      properties: { answer: { type: string } }
      required: [answer]
graph:
  $START:
    _: { role: worker, prompt: "Fix: {{{$inputs.issue}}}" }
  worker:
    fixed: { role: $END, prompt: "Fixed" }
    ask: { role: person, prompt: "Help the worker" }
  person:
    _: { role: worker, prompt: "The person says: {{{answer}}}" }
"""

PARENT = """\
name: parent
description: Runs the child
limits: { max_steps: 6, max_cost_usd: 2.0 }
roles:
  plan:
    description: lists issues
    goal: You list.
    frontmatter:
      properties: { $status: { const: listed }, issues: { type: array, items: { type: string } } }
      required: [$status, issues]
  fix:
    description: Runs the child graph
    graph: child
graph:
  $START:
    _: { role: fix, inputs: { issue: "{{{$inputs.task}}}" } }
    resume: { role: plan, prompt: "List them" }
  fix:
    done: { role: $END, prompt: "Done" }
  plan:
    listed:
      for_each: issues
      as: issue
      role: fix
      inputs: { issue: "{{{issue}}}" }
      join: { role: $END, prompt: "All fixed" }
"""


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Graph:
    folder: Path = tmp_path_factory.mktemp("subgraphs")
    (folder / "child.yaml").write_text(CHILD)
    (folder / "parent.yaml").write_text(PARENT)
    return load_graph(folder / "parent.yaml")


START = ThreadStarted("P", "parent", "sha256:x", {"task": "owls"}, "/w")
FIXING = [START, StepStarted(1, "fix", "", "$START", "_", inputs={"issue": "owls"})]
WAITING = [*FIXING, HumanWaiting(1, "fix")]
CHILD_START = ThreadStarted("P.1", "child", "sha256:c", {"issue": "owls"}, "/w", "P", 1)
CHILD_WORKING = [CHILD_START, StepStarted(1, "worker", "Fix: owls", "$START", "_")]
CHILD_ASKS = [
    *CHILD_WORKING,
    StepCommitted(1, "worker", "ask", {"$status": "ask"}, "", reply("ask"), cost_usd=0.5),
    StepStarted(2, "person", "Help the worker", "worker", "ask"),
    HumanWaiting(2, "person"),
]
CHILD_DONE = [
    *CHILD_WORKING,
    StepCommitted(1, "worker", "fixed", {"$status": "fixed"}, "", reply("fixed"), cost_usd=0.5),
    ThreadCompleted("Fixed", "done"),
]
RUN_CHILD = RunChild(1, "fix", "P.1", {"issue": "owls"}, None, 6, 2.0)


@dataclass(frozen=True)
class Row:
    rule: str
    events: list[Event]  # the parent's log
    ask: Callable[[Graph, ThreadState], Any]
    expect: Callable[[Any], bool] | str  # a check, or words of the refusal


def of_child(events: list[Event]) -> ThreadState:
    return fold(events)


ROWS = [
    Row(
        "S1 a subgraph role's step in flight runs its child, within the parent's limits",
        [*FIXING[:1], *FIXING[1:]],
        lambda g, s: decide(g, s),
        lambda c: c == RunChild(1, "fix", "P.1", {"issue": "owls"}, None, 6, 2.0),
    ),
    Row(
        "S1 the steps and cost spent, and the resume message, go to the child",
        [
            START,
            StepStarted(1, "fix", "", "$START", "_", inputs={"issue": "owls"}),
            ThreadSuspended("x", SuspendKind.PROVIDER, step=1, cost_usd=0.5),
            ThreadResumed("try again"),
            StepStarted(1, "fix", "", "$START", "_", inputs={"issue": "owls"}),
        ],
        lambda g, s: decide(g, s),
        lambda c: isinstance(c, RunChild) and c.max_cost_usd == 1.5 and c.message == "try again",
    ),
    Row(
        "S1 a for_each over a subgraph role runs a child per branch",
        [
            START,
            StepStarted(1, "plan", "List them", "$START", "_"),
            StepCommitted(
                1, "plan", "listed", {"$status": "listed", "issues": ["a", "b"]}, "", "r"
            ),
            BranchesStarted(
                "plan",
                "listed",
                2,
                [
                    {"role": "fix", "prompt": "", "location": None, "inputs": {"issue": "a"}},
                    {"role": "fix", "prompt": "", "location": None, "inputs": {"issue": "b"}},
                ],
            ),
            StepStarted(2, "fix", "", "plan", "listed", branch=0, inputs={"issue": "a"}),
            StepStarted(3, "fix", "", "plan", "listed", branch=1, inputs={"issue": "b"}),
        ],
        lambda g, s: decide(g, s),
        lambda c: (
            isinstance(c, RunBranches)
            and [(r.child, r.inputs) for r in c.steps if isinstance(r, RunChild)]
            == [("P.2", {"issue": "a"}), ("P.3", {"issue": "b"})]
        ),
    ),
    Row(
        "S2 a child not started yet starts linked to its parent's step",
        FIXING,
        lambda g, s: child_started(s, RUN_CHILD, g.subgraph("fix"), "/w/sub"),  # type: ignore[arg-type]
        lambda e: (
            e.thread_id == "P.1"
            and (e.parent, e.parent_step) == ("P", 1)
            and e.inputs == {"issue": "owls"}
            and e.workspace == "/w/sub"
            and e.graph == "child"
        ),
    ),
    Row(
        "S3 a suspended child is resumed with the parent's message",
        FIXING,
        lambda g, s: child_request(
            g.subgraph("fix"),  # type: ignore[arg-type]
            of_child([*CHILD_WORKING, ThreadSuspended("x", SuspendKind.ROLE, step=1)]),
            "the key is in the vault",
        ),
        lambda o: o == ResumeRequested("the key is in the vault"),
    ),
    Row(
        "S3 a child whose process died (running) is resumed",
        FIXING,
        lambda g, s: child_request(g.subgraph("fix"), of_child(CHILD_WORKING), None),  # type: ignore[arg-type]
        lambda o: o == ResumeRequested(None),
    ),
    Row(
        "S3 a child waiting for a person is left as it is",
        FIXING,
        lambda g, s: child_request(g.subgraph("fix"), of_child(CHILD_ASKS), "m"),  # type: ignore[arg-type]
        lambda o: o is None,
    ),
    Row(
        "S4 the child's ending is the step's outcome",
        FIXING,
        lambda g, s: child_outcome(RUN_CHILD, of_child(CHILD_DONE), 1.25),
        lambda o: (
            isinstance(o, ChildEnded)
            and (o.child, o.ending, o.final, o.steps, o.cost_usd)
            == ("P.1", "done", "Fixed", 1, 0.5)
        ),
    ),
    Row(
        "S4 a child waiting for a person makes the parent wait",
        FIXING,
        lambda g, s: child_outcome(RUN_CHILD, of_child(CHILD_ASKS), 0.0),
        lambda o: o == NeedsPerson(1),
    ),
    Row(
        "S4 a suspended child suspends the parent with its kind",
        FIXING,
        lambda g, s: child_outcome(
            RUN_CHILD,
            of_child([*CHILD_WORKING, ThreadSuspended("no key", SuspendKind.CONFIG, step=1)]),
            0.0,
        ),
        lambda o: isinstance(o, ActorFailed) and o.kind == SuspendKind.CONFIG,
    ),
    Row(
        "S4 a cancelled child suspends the parent, saying so",
        FIXING,
        lambda g, s: child_outcome(RUN_CHILD, of_child([*CHILD_WORKING, ThreadCancelled()]), 0.0),
        lambda o: isinstance(o, ActorFailed) and "was cancelled" in o.message,
    ),
    Row(
        "S5 an answer to a parent waiting at a subgraph step goes to its child",
        WAITING,
        lambda g, s: waiting_child(g, s),
        lambda found: found is not None and found[0] == "P.1" and found[1].name == "child",
    ),
    Row(
        "S5 judged against the parent's subgraph role, the answer is refused",
        WAITING,
        lambda g, s: judge(g, s, Answered(reply(answer="use the cache"))),
        "waits inside child thread P.1",
    ),
    Row(
        "S5 a resume of the parent is taken (it continues the child, S3)",
        WAITING,
        lambda g, s: judge(g, s, ResumeRequested()),
        lambda events: [type(e) for e in events] == [ThreadResumed],
    ),
    Row(
        "S6 a cancel goes on to the children of the steps in flight",
        WAITING,
        lambda g, s: children_in_flight(s),
        lambda ids: ids == ["P.1"],
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.rule for r in ROWS])
def test_subgraph_rule(graph: Graph, row: Row) -> None:
    state = fold(row.events)
    if isinstance(row.expect, str):
        with pytest.raises(Refused) as refused:
            row.ask(graph, state)
        assert row.expect in refused.value.message
        return
    found = row.ask(graph, state)
    assert row.expect(found), found
    assert row.ask(graph, fold(row.events)) == found  # pure: the same log, the same answer
