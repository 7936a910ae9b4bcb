"""The forward analysis's cost counted, not timed: how many times the work-list applies an edge's
transfer function (`Flow.visits`, orchestrator/linter/dataflow.py) on review chains. The
work-list stays within a constant times the edges; the same transfer functions taken in a
deliberately naive order (a stack: re-push a node whenever its facts grow, as the analysis
before the work-list did) grow quadratically on the same chains, which shows the count can see
the difference the order makes."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.definition.loader import build_graph, parse_yaml_file
from orchestrator.definition.models import START
from orchestrator.linter import dataflow
from orchestrator.linter.view import GraphView
from tests.test_lint_speed import chain, live_edges


def view_of(tmp_path: Path, roles: int) -> GraphView:
    path = tmp_path / f"chain{roles}" / "g.yaml"
    path.parent.mkdir()
    path.write_text(chain(roles), encoding="utf-8")
    return GraphView(build_graph(*parse_yaml_file(path), path))


def naive_solve(view: GraphView) -> tuple[int, dict[str, tuple[int, int]]]:
    """The work-list's own transfer functions, taken from a stack in whatever order facts grow:
    the visits, and the facts (as bit sets) on entry to each node."""
    space = dataflow.FactSpace(view.roles)
    successors = dataflow._steps(view, space)
    unsure, pairs = {START: space.all_roles}, {START: 0}
    todo, visits = [START], 0
    while todo:
        node = todo.pop()
        for target, keep_unsure, keep_pairs, gen_pairs in successors.get(node, ()):
            visits += 1
            out_unsure = unsure[node] & keep_unsure
            out_pairs = (pairs[node] & keep_pairs) | gen_pairs
            if target in unsure:
                out_unsure |= unsure[target]
                out_pairs |= pairs[target]
                if (out_unsure, out_pairs) == (unsure[target], pairs[target]):
                    continue
            unsure[target], pairs[target] = out_unsure, out_pairs
            todo.append(target)
    return visits, {n: (unsure[n], pairs[n]) for n in unsure if n != START}


def test_the_work_list_applies_each_edge_a_bounded_number_of_times_on_400_roles(
    tmp_path: Path,
) -> None:
    view = view_of(tmp_path, 400)
    edges = live_edges(view)
    assert edges == 2 * 400 + 1  # pass and back of each role, and $START's
    assert dataflow.flow(view).visits <= 3 * edges


@pytest.mark.parametrize("roles", [25, 50, 100, 200])
def test_the_visits_per_edge_do_not_grow_with_the_chain(tmp_path: Path, roles: int) -> None:
    view = view_of(tmp_path, roles)
    assert dataflow.flow(view).visits / live_edges(view) <= 3


def test_the_naive_order_grows_quadratically_on_the_same_chains(tmp_path: Path) -> None:
    # the control: same transfer functions, same facts, only the order differs
    counts = {}
    for roles in (25, 50, 100):
        view = view_of(tmp_path, roles)
        counts[roles], facts = naive_solve(view)
        found = dataflow.flow(view)
        assert facts == {n: (f.unsure, f.pairs) for n, f in found.items()}  # the same fixpoint
        assert found.visits <= 3 * live_edges(view)
        assert counts[roles] > 10 * 3 * live_edges(view) or roles < 100
    assert counts[50] >= 3.5 * counts[25]  # doubling the chain: about four times the visits
    assert counts[100] >= 3.5 * counts[50]
