"""The linter's findings with the work-list analysis (orchestrator/linter/dataflow.py) against the
findings with the algorithm it replaced (kept in tests/test_lint_speed.py as the oracle): the
same problems, message for message and position for position, on every graph of the shared
corpus, the bundled graphs, the linter's reference case, random graphs whose templates read
`$steps` of random roles, and review chains. Only the analysis differs between the two runs."""

from __future__ import annotations

import random
import weakref
from pathlib import Path

import pytest

from orchestrator.definition.loader import build_graph, parse_yaml_file
from orchestrator.definition.models import Graph
from orchestrator.definition.problems import Problem
from orchestrator.linter import lint
from orchestrator.linter.view import GraphView
from tests.test_lint_speed import chain, with_old_algorithm

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
OWN_GRAPHS = [
    *sorted((ROOT / "graphs").glob("*.yaml")),
    *sorted((ROOT / "tests" / "lint_cases").glob("*.yaml")),
]


def corpus_graphs() -> list[Path]:
    """Every YAML file of the shared corpus (none: the corpus is not beside this checkout)."""
    return sorted(CORPUS.rglob("*.yaml")) if CORPUS.is_dir() else []


def load_file(path: Path) -> Graph:
    return build_graph(*parse_yaml_file(path), path)


def load_text(tmp_path: Path, text: str) -> Graph:
    path = tmp_path / "g.yaml"  # the graphs below are named g
    path.write_text(text, encoding="utf-8")
    return load_file(path)


def assert_same_findings(monkeypatch: pytest.MonkeyPatch, graph: Graph) -> list[Problem]:
    old = with_old_algorithm(monkeypatch, graph)
    new = lint(graph)
    assert new == old
    return new


def random_graph(rng: random.Random) -> str:
    """Roles of one to three statuses, each status with its own field; random edges (loops,
    `$END`, a `parallel` fan-out, `$START.resume`), and prompts that read `$steps.ROLE.FIELD` of
    random roles and statuses: many are wrong (the role may not have run, its latest reply may
    lack the field), which is what the analysis decides."""
    count = rng.randint(2, 10)
    names = [f"role{i}" for i in range(count)]
    statuses = {n: rng.sample(["ok", "no", "redo"], rng.randint(1, 3)) for n in names}
    out = ["name: g", "description: random", "roles:"]
    for n in names:
        out += [f"  {n}:", "    description: d", "    goal: g", "    frontmatter:", "      oneOf:"]
        for s in statuses[n]:
            out.append(
                f"        - {{ properties: {{ $status: {{ const: {s} }}, {s}_{n}:"
                f" {{ type: string }} }}, required: [$status, {s}_{n}] }}"
            )

    def prompt() -> str:
        reads = []
        for _ in range(rng.randint(0, 3)):
            role = rng.choice(names)
            reads.append(f"{{{{{{$steps.{role}.{rng.choice(statuses[role])}_{role}}}}}}}")
        return " ".join(reads) or "go"

    anywhere = [*names, "$END"]
    out += ["graph:", "  $START:", f'    _: {{ role: {rng.choice(names)}, prompt: "go" }}']
    if rng.random() < 0.3:
        out.append(f'    resume: {{ role: {rng.choice(names)}, prompt: "{prompt()}" }}')
    for n in names:
        if rng.random() < 0.1:
            continue  # a role without edges
        out.append(f"  {n}:")
        for status in statuses[n]:
            target = rng.choice(anywhere)
            if rng.random() < 0.1 and count > 1:
                a, b = rng.sample(names, 2)
                out += [
                    f"    {status}:",
                    "      parallel:",
                    f'        - {{ role: {a}, prompt: "a" }}',
                    f'        - {{ role: {b}, prompt: "b" }}',
                    f'      join: {{ role: {target}, prompt: "{prompt()}" }}',
                ]
            else:
                out.append(f'    {status}: {{ role: {target}, prompt: "{prompt()}" }}')
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("path", corpus_graphs(), ids=lambda p: str(p.relative_to(CORPUS)))
def test_each_corpus_graph_has_the_findings_of_the_old_analysis(
    monkeypatch: pytest.MonkeyPatch, path: Path
) -> None:
    assert_same_findings(monkeypatch, load_file(path))


def test_the_corpus_is_there_to_compare() -> None:
    # the corpus test above is parametrized by what it finds: none found would compare nothing
    assert len(corpus_graphs()) >= 6


@pytest.mark.parametrize("path", OWN_GRAPHS, ids=lambda p: p.name)
def test_each_bundled_and_reference_graph_has_the_findings_of_the_old_analysis(
    monkeypatch: pytest.MonkeyPatch, path: Path
) -> None:
    assert_same_findings(monkeypatch, load_file(path))


@pytest.mark.parametrize("seed", range(200))
def test_random_graphs_have_the_findings_of_the_old_analysis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    assert_same_findings(monkeypatch, load_text(tmp_path, random_graph(random.Random(seed))))


def test_random_graphs_find_what_the_comparison_is_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the control: the random graphs do give the dataflow's findings, both kinds, so the
    # comparison above compares something
    messages = []
    for seed in range(40):
        graph = load_text(tmp_path, random_graph(random.Random(seed)))
        messages += [p.message for p in lint(graph) if p.code == "template-var"]
    assert any("has not run on every path" in m for m in messages)
    assert any("may last have replied" in m for m in messages)


@pytest.mark.parametrize("roles", [2, 9, 60])
def test_review_chains_have_the_findings_of_the_old_analysis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, roles: int
) -> None:
    found = assert_same_findings(monkeypatch, load_text(tmp_path, chain(roles, planted=4)))
    assert found or roles < 4


def test_the_comparison_sees_a_different_analysis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the control: an analysis that takes every role for run on every path (the facts of a
    # solver that lost the paths around a role) gives other findings, and the comparison sees it
    from orchestrator.linter import dataflow  # here: the patch below wraps its solver

    graph = load_text(tmp_path, chain(12, planted=4))
    real = dataflow._solve

    def all_ran(view: GraphView) -> dataflow.Flow:
        full = real(view)
        facts = {n: dataflow.Facts(full.space, 0, f.pairs) for n, f in full.facts.items()}
        return dataflow.Flow(full.space, facts, full.visits)

    with monkeypatch.context() as patch:
        patch.setattr(dataflow, "_FLOWS", weakref.WeakKeyDictionary())
        patch.setattr(dataflow, "_solve", all_ran)
        wrong = lint(graph)
    right = with_old_algorithm(monkeypatch, graph)
    assert wrong != right
    unrun = [p for p in right if "has not run on every path" in p.message]
    assert unrun and not set(unrun) & set(wrong)
