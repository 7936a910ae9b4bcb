"""Untrusted files cannot hang, bloat, mislead or widen what a role may do (FORMAT 22).

Each attack sits beside a control: the same action where it must work, or the attack shown to
work when the defence is off.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.core.guard_cost import GUARD_BUDGET, estimate, shape
from orchestrator.core.guards import GuardError, evaluate
from orchestrator.spec.models import Graph
from orchestrator.testing import reply, simulate
from tests.cli_helpers import Project

MakeGraph = Callable[..., Graph]

# --------------------------------------------------------------------------- guards' cost

GUARDED = """
name: costly
description: A counter whose list a guard ranges over.
roles:
  counter:
    description: Counts
    goal: You count.
    frontmatter:
      type: object
      properties:
        $status: { const: done }
        items: { type: array, items: { type: integer } }
      required: [$status, items]
graph:
  $START:
    _: { role: counter, prompt: "Count {{{$inputs.task}}}" }
  counter:
    done:
      - { when: "GUARD", role: $END, ending: matched, prompt: "matched" }
      - { role: $END, prompt: "no match" }
"""

THREE_DEEP = "output.items.exists(a, output.items.exists(b, output.items.exists(c, a + b == c)))"
TWO_DEEP = "output.items.exists(a, output.items.exists(b, a + b == 3))"
ONE_DEEP = "output.items.all(x, x >= 0)"
# Two levels of `map`: the package copies a map's accumulator on every iteration, so over 2,000
# items this takes minutes in the package (measured: 100 s for 1,000 items).
QUADRATIC = "output.items.map(a, output.items.map(b, a + b)).size() > 0"


def _validate(tmp_path: Path, guard: str) -> list[str]:
    project = Project(tmp_path)
    project.graph(GUARDED.replace("GUARD", guard), "costly")
    out = project.run("validate", "graphs/costly.yaml", "--format", "json")
    return [p["code"] for p in json.loads(out.stdout)["problems"]]


def test_attack_three_nested_comprehensions_are_a_guard_cost_problem(tmp_path: Path) -> None:
    assert _validate(tmp_path, THREE_DEEP) == ["guard-cost"]


@pytest.mark.parametrize("guard", [ONE_DEEP, TWO_DEEP])
def test_control_one_or_two_levels_validate_clean(tmp_path: Path, guard: str) -> None:
    assert _validate(tmp_path, guard) == []


def test_attack_a_guard_over_its_budget_suspends_naming_the_edge(make_graph: MakeGraph) -> None:
    graph = make_graph(GUARDED.replace("GUARD", QUADRATIC))
    started = time.monotonic()
    trace = simulate(graph, [reply("done", items=list(range(2000)))])
    assert trace.state == "suspended"
    assert "counter --done--> $END" in (trace.reason or "")
    assert "more than the budget" in (trace.reason or "")
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("guard", [ONE_DEEP, TWO_DEEP, QUADRATIC])
def test_control_the_same_guards_over_small_lists_evaluate(
    make_graph: MakeGraph, guard: str
) -> None:
    graph = make_graph(GUARDED.replace("GUARD", guard))
    trace = simulate(graph, [reply("done", items=[1, 2, 5])])
    assert trace.state == "completed", trace.reason
    assert trace.ending == "matched"


def test_the_estimate_bounds_what_the_package_really_does() -> None:
    """The control for the budget's figure: a guard the estimate lets through runs fast, and the
    refused one is genuinely slow in the package (a small instance, timed)."""
    names = {"output": {"items": list(range(200))}}
    assert estimate(shape(QUADRATIC), names) > GUARD_BUDGET
    with pytest.raises(GuardError, match="budget"):
        evaluate(QUADRATIC, names)
    allowed = {"output": {"items": list(range(100))}}
    assert estimate(shape(TWO_DEEP), allowed) <= GUARD_BUDGET
    started = time.monotonic()
    assert evaluate(TWO_DEEP, allowed) is True
    assert time.monotonic() - started < 5
