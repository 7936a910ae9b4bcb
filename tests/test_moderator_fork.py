"""The pure fork rules (F1-F3, A13 of orchestrator/core/engine.py), table-driven like
tests/test_moderator.py: a log in, `fork_events` asked, the new thread's events (or a refusal)
out. No store, no actor."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orchestrator.core.allowed import allowed
from orchestrator.core.commands import Record
from orchestrator.core.engine import decide, fold
from orchestrator.core.events import (
    BranchesStarted,
    Event,
    HumanWaiting,
    StepCommitted,
    StepStarted,
    SuspendKind,
    ThreadCompleted,
    ThreadForked,
    ThreadResumed,
    ThreadStarted,
    ThreadStatus,
    ThreadSuspended,
)
from orchestrator.core.fork import Fork, fork_events
from orchestrator.core.outcomes import Refused
from orchestrator.definition.loader import load_graph
from orchestrator.definition.models import Graph
from orchestrator.extract import format_reply
from orchestrator.testing import reply

GRAPH = """
name: review
description: A writer and a reviewer.
roles:
  writer:
    description: Writes
    goal: You write.
    frontmatter:
      type: object
      properties:
        $status: { enum: [drafted] }
        draft: { type: string }
      required: [$status, draft]
  reviewer:
    description: Reviews
    goal: You review.
    frontmatter:
      type: object
      properties:
        $status: { enum: [approved, changes] }
        notes: { type: string }
      required: [$status]
      allOf:
        - if: { properties: { $status: { const: changes } } }
          then: { required: [notes] }
graph:
  $START:
    _: { role: writer, prompt: "Write about {{{$inputs.task}}}" }
  writer:
    drafted: { role: reviewer, prompt: "Review {{{draft}}}" }
  reviewer:
    approved: { role: $END, prompt: "Approved" }
    changes: { role: writer, prompt: "Change it: {{{notes}}}" }
"""


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Graph:
    folder: Path = tmp_path_factory.mktemp("graphs")
    path = folder / "review.yaml"
    path.write_text(textwrap.dedent(GRAPH), encoding="utf-8")
    return load_graph(path)


START = ThreadStarted("T", "review", "sha256:x", {"task": "owls"}, "/w")


def step(n: int, role: str, source: str, status: str, prompt: str) -> StepStarted:
    return StepStarted(n, role, prompt, source, status)


def done(n: int, role: str, status: str, **fields: Any) -> StepCommitted:
    return StepCommitted(n, role, status, {**fields}, "", reply(status, **fields), cost_usd=0.1)


APPROVED = [
    START,
    step(1, "writer", "$START", "_", "Write about owls"),
    done(1, "writer", "drafted", draft="d1"),
    step(2, "reviewer", "writer", "drafted", "Review d1"),
    done(2, "reviewer", "approved"),
    ThreadCompleted("Approved"),
]
SUSPENDED_AT_2 = [
    *APPROVED[:4],
    ThreadSuspended("provider down", SuspendKind.PROVIDER, step=2),
]
RESUMED_FROM_END = [*APPROVED, ThreadResumed("more"), ThreadCompleted("Approved")]


@dataclass(frozen=True)
class ForkRow:
    rule: str
    events: list[Event]
    kwargs: dict[str, Any]
    check: Callable[[Fork, Graph], bool]


def _next(plan: Fork, graph: Graph) -> Any:
    command = decide(graph, fold(list(plan.events)))
    return command.event if isinstance(command, Record) else command


FORKS = [
    ForkRow(
        "F1 a fork at step 2 keeps step 1 and decides step 2 again from its edge",
        APPROVED,
        {"at": 2},
        lambda p, g: (
            [type(e).__name__ for e in p.events]
            == ["ThreadStarted", "StepStarted", "StepCommitted", "ThreadForked"]
            and p.events[0] == ThreadStarted("T2", "review", "sha256:x", {"task": "owls"}, "/w")
            and p.base_step == 1
            and _next(p, g) == StepStarted(2, "reviewer", "Review d1", "writer", "drafted")
        ),
    ),
    ForkRow(
        "F1 by default at the last committed step + 1; a suspension there is not the fork's",
        SUSPENDED_AT_2,
        {},
        lambda p, g: p.at == 2 and fold(list(p.events)).status == ThreadStatus.RUNNING,
    ),
    ForkRow(
        "F1 a completed thread forked at its end: the ending is decided again",
        APPROVED,
        {},
        lambda p, g: p.at == 3 and isinstance(_next(p, g), ThreadCompleted),
    ),
    ForkRow(
        "F1 a resume from an ending before step n is kept: $START.resume is taken again",
        [*APPROVED, ThreadResumed("again"), step(3, "writer", "$START", "resume", "x")],
        {"at": 3},
        lambda p, g: (
            isinstance(p.events[-2], ThreadResumed) and fold(list(p.events)).resume_from_end
        ),
    ),
    ForkRow(
        "A13 forked: running, forked_from set, the message appended to step n's prompt",
        APPROVED,
        {"at": 2, "message": "be strict"},
        lambda p, g: (
            fold(list(p.events)).forked_from == {"thread": "T", "step": 2}
            and _next(p, g).prompt
            == "Review d1\n\nMessage from the person who forked this thread:\nbe strict"
        ),
    ),
    ForkRow(
        "F3 a reply stands as step n's output: the fork takes the other edge",
        APPROVED,
        {"at": 2, "reply": format_reply("changes", {"notes": "shorter"})},
        lambda p, g: (
            isinstance(p.events[-1], StepCommitted)
            and p.events[-1].status == "changes"
            and p.events[-1].actor == "fork"
            and _next(p, g) == StepStarted(3, "writer", "Change it: shorter", "reviewer", "changes")
        ),
    ),
]


@pytest.mark.parametrize("row", FORKS, ids=[r.rule for r in FORKS])
def test_fork(graph: Graph, row: ForkRow) -> None:
    plan = fork_events(row.events, graph, new_id="T2", **row.kwargs)
    assert row.check(plan, graph), plan.events


@dataclass(frozen=True)
class RefusedRow:
    rule: str
    events: list[Event]
    kwargs: dict[str, Any]
    says: tuple[str, ...]


FAN = [
    START,
    step(1, "writer", "$START", "_", "w"),
    done(1, "writer", "drafted", draft="d"),
    BranchesStarted("writer", "drafted", 2, [{"role": "reviewer", "prompt": "r"}] * 2),
    StepStarted(2, "reviewer", "r", "writer", "drafted", branch=0),
    StepStarted(3, "reviewer", "r", "writer", "drafted", branch=1),
    done(2, "reviewer", "approved"),
    done(3, "reviewer", "approved"),
]
CHILD = [ThreadStarted("P.2", "review", "h", {}, "/w", parent="P", parent_step=2), *APPROVED[1:]]

REFUSALS = [
    RefusedRow("F2 no committed step", APPROVED[:2], {}, ("no committed step",)),
    RefusedRow("F2 no such step", APPROVED, {"at": 9}, ("no step 9", "steps 1 to 3")),
    RefusedRow("F2 no step 0", APPROVED, {"at": 0}, ("no step 0",)),
    RefusedRow("F2 a branch of a fan-out", FAN, {"at": 3}, ("step 3", "fan-out", "step 2")),
    RefusedRow("F2 a subgraph's child", CHILD, {"at": 1}, ("child of step 2", "P")),
    RefusedRow(
        "F3 a reply missing a required field",
        APPROVED,
        {"at": 2, "reply": format_reply("changes", {})},
        ("step 2 (reviewer)", "notes"),
    ),
    RefusedRow(
        "F3 a reply with a status the role does not have",
        APPROVED,
        {"at": 2, "reply": format_reply("rejected", {})},
        ("step 2 (reviewer)", "rejected"),
    ),
    RefusedRow(
        "F3 a reply that would suspend",
        APPROVED,
        {"at": 2, "reply": format_reply("$SUSPEND", {"reason": "no"})},
        ("would suspend", "approved, changes"),
    ),
    RefusedRow(
        "F3 a reply where the fork ends", APPROVED, {"at": 3, "reply": "x"}, ("not one step",)
    ),
]


@pytest.mark.parametrize("row", REFUSALS, ids=[r.rule for r in REFUSALS])
def test_fork_refused(graph: Graph, row: RefusedRow) -> None:
    with pytest.raises(Refused) as caught:
        fork_events(row.events, graph, new_id="T2", **row.kwargs)
    said = " ".join([caught.value.message, *caught.value.errors])
    for words in row.says:
        assert words in said, said


def test_allowed_lists_the_steps_a_fork_may_be_made_at(graph: Graph) -> None:
    state = fold(APPROVED)
    verdict = allowed(graph, state)
    assert verdict.fork.ok and verdict.fork_steps == range(1, 4)
    assert verdict.to_dict()["fork"] == {"ok": True, "steps": [1, 3]}
    control = allowed(graph, fold(APPROVED[:2]))  # nothing committed: nothing to fork
    assert not control.fork.ok and control.fork_steps == range(0)


def test_a_waiting_tail_is_dropped(graph: Graph) -> None:
    waiting = [*APPROVED[:4], HumanWaiting(2, "reviewer")]
    plan = fork_events(waiting, graph, new_id="T2")
    assert not any(isinstance(e, HumanWaiting) for e in plan.events)
    assert isinstance(plan.events[-1], ThreadForked) and plan.at == 2


def test_the_original_log_is_not_changed(graph: Graph) -> None:
    before = [e.to_dict() for e in APPROVED]
    fork_events(APPROVED, graph, new_id="T2", at=2, reply=format_reply("changes", {"notes": "x"}))
    assert [e.to_dict() for e in APPROVED] == before
