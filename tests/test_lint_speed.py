"""The linter's forward analysis as a work-list (orchestrator/linter/dataflow.py): the same facts as
the algorithm it replaced, on random graphs and on review chains, and a bounded number of edge
visits however long the chain. Speed itself is measured by bench/lint.py; no test here times
anything."""

from __future__ import annotations

import gc
import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli import cli
from orchestrator.cli import validate as validate_cli
from orchestrator.definition.loader import build_graph, parse_yaml_file
from orchestrator.definition.models import END, RESUME, START, Graph
from orchestrator.definition.problems import Problem
from orchestrator.linter import dataflow, fanout, lint, scope, templates
from orchestrator.linter.view import EdgeKind, GraphView, ResolvedEdge

# --------------------------------------------------------------------------- the old algorithm


@dataclass(frozen=True)
class OldFacts:
    """The facts of the algorithm before the work-list (commit 50796ce), kept as the reference:
    sets and dicts rebuilt at every meet, a node re-queued whenever its facts changed."""

    ran: frozenset[str]
    latest: Mapping[str, frozenset[str]]

    def after(self, role: str, status: str) -> OldFacts:
        return OldFacts(self.ran | {role}, {**self.latest, role: frozenset({status})})

    def meet(self, other: OldFacts) -> OldFacts:
        latest = dict(self.latest)
        for role, statuses in other.latest.items():
            latest[role] = latest.get(role, frozenset()) | statuses
        return OldFacts(self.ran & other.ran, latest)

    # what Scope asks of the new Facts, so that lint can run on the old algorithm
    def has_run(self, role: str) -> bool:
        return role in self.ran

    def statuses(self, role: str) -> frozenset[str]:
        return self.latest.get(role, frozenset())


class OldFlow(dict[str, OldFacts]):
    start = OldFacts(frozenset(), {})
    visits = 0  # edges whose facts were computed


def old_flow(view: GraphView) -> OldFlow:
    successors: dict[str, list[ResolvedEdge]] = {}
    for edge in view.edges:
        if view.live(edge) and edge.role_target is not None:
            node = END if edge.status == RESUME and edge.source == START else edge.role_source
            successors.setdefault(node or START, []).append(edge)
    state = OldFlow()
    todo = [START]
    while todo:
        for edge in successors.get(todo.pop(), ()):
            state.visits += 1
            out = old_edge_facts(edge, state, view)
            target = edge.role_target
            if out is None or target is None:
                continue
            new = state[target].meet(out) if target in state else out
            if new != state.get(target):
                state[target] = new
                todo.append(target)
    return state


def old_edge_facts(edge: ResolvedEdge, state: OldFlow, view: GraphView) -> OldFacts | None:
    if edge.source == START:
        facts = state.get(END) if edge.status == RESUME else OldFlow.start
    elif edge.role_source is None or edge.role_source not in state:
        return None
    else:
        facts = state[edge.role_source].after(edge.role_source, edge.status)
    if facts is None or edge.kind is not EdgeKind.JOIN:
        return facts
    latest = dict(facts.latest)
    for role in edge.joined:
        latest[role] = latest.get(role, frozenset()) | frozenset(view.statuses(role) or [])
    ran = facts.ran | set(edge.joined) if edge.joined_surely else facts.ran
    return OldFacts(frozenset(ran), latest)


def plain(facts: dataflow.Facts | OldFacts | None) -> object:
    """Facts as comparable values (a role with no possible status is as good as absent)."""
    if facts is None:
        return None
    return facts.ran, {r: s for r, s in facts.latest.items() if s}


def assert_same_facts(view: GraphView) -> None:
    new, old = dataflow.flow(view), old_flow(view)
    assert set(new) == set(old)
    for node in old:
        assert plain(new[node]) == plain(old[node]), node
    for edge in view.edges:
        assert plain(dataflow.edge_facts(edge, new, view)) == plain(
            old_edge_facts(edge, old, view)
        ), edge.label


# --------------------------------------------------------------------------- graphs


def load(tmp_path: Path, text: str, folder: str = ".") -> Graph:
    path = tmp_path / folder / "g.yaml"  # the graph is named g
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return build_graph(*parse_yaml_file(path), path)


def chain(roles: int, planted: int = 0) -> str:
    """A review chain: role i replies `pass` (on to role i+1) or `back` (to role i-1), and its
    prompts read `$steps` of earlier roles. Every `planted`-th role (when not 0) also reads a
    later role's field (which has not surely run) and `why` of the role before it (whose
    latest reply there is `pass`, which has no `why`)."""
    out = ["name: g", "description: a review chain", "roles:"]
    for i in range(roles):
        out += [
            f"  r{i}:",
            f"    description: reviewer {i}",
            "    goal: review",
            "    frontmatter:",
            "      oneOf:",
            f"        - {{ properties: {{ $status: {{ const: pass }}, out{i}: {{ type: string }} }},"
            f" required: [$status, out{i}] }}",
            f"        - {{ properties: {{ $status: {{ const: back }}, why{i}: {{ type: string }} }},"
            f" required: [$status, why{i}] }}",
        ]
    out += ["graph:", '  $START: { _: { role: r0, prompt: "{{{$inputs.task}}}" } }']
    for i in range(roles):
        reads = [f"{{{{{{$steps.r{j}.out{j}}}}}}}" for j in sorted({0, i // 2, i - 1}) if i]
        if planted and i % planted == planted - 1 and 0 < i < roles - 1:
            reads += [
                f"{{{{{{$steps.r{i + 1}.out{i + 1}}}}}}}",
                f"{{{{{{$steps.r{i - 1}.why{i - 1}}}}}}}",
            ]
        ahead = f"r{i + 1}" if i + 1 < roles else "$END"
        behind = f"r{i - 1}" if i else "$END"
        out += [
            f"  r{i}:",
            f'    pass: {{ role: {ahead}, prompt: "{{{{{{out{i}}}}}}} {" ".join(reads)}" }}',
            f'    back: {{ role: {behind}, prompt: "{{{{{{why{i}}}}}}}" }}',
        ]
    return "\n".join(out) + "\n"


def random_graph(rng: random.Random) -> str:
    """A graph of random edges between roles of one to three statuses: loops, `$END`, resume,
    `parallel` and `for_each` fan-outs, a status key the role cannot reply and a misspelt
    target among them. It need not be a good graph: only the facts are compared."""
    count = rng.randint(2, 9)
    names = [f"role{i}" for i in range(count)]
    statuses = {n: rng.sample(["ok", "no", "redo"], rng.randint(1, 3)) for n in names}
    out = ["name: g", "description: random", "roles:"]
    for n in names:
        enum = ", ".join(statuses[n])
        out += [
            f"  {n}:",
            "    description: d",
            "    goal: g",
            f"    frontmatter: {{ type: object, properties: {{ $status: {{ enum: [{enum}] }},"
            " items: { type: array } } }",
        ]
    anywhere = [*names, "$END"]
    out += ["graph:", "  $START:", f'    _: {{ role: {rng.choice(names)}, prompt: "go" }}']
    if rng.random() < 0.3:
        out.append(f'    resume: {{ role: {rng.choice(names)}, prompt: "again" }}')
    for n in names:
        if rng.random() < 0.15:
            continue  # a role without edges
        out.append(f"  {n}:")
        keys = statuses[n] + (["bogus"] if rng.random() < 0.1 else [])
        for status in keys:
            target = rng.choice(anywhere)
            if target != "$END" and rng.random() < 0.1:
                target = target.replace("role", "rloe")  # a typo, read as the role it resembles
            shape = rng.random()
            if shape < 0.12:
                a, b = rng.sample(names, 2) if count > 1 else (names[0], names[0])
                out += [
                    f"    {status}:",
                    "      parallel:",
                    f'        - {{ role: {a}, prompt: "a" }}',
                    f'        - {{ role: {b}, prompt: "b" }}',
                    f'      join: {{ role: {target}, prompt: "j" }}',
                ]
            elif shape < 0.2:
                out += [
                    f"    {status}:",
                    "      for_each: items",
                    "      as: item",
                    f"      role: {rng.choice(names)}",
                    '      prompt: "{{{item}}}"',
                    f'      join: {{ role: {target}, prompt: "j" }}',
                ]
            else:
                out.append(f'    {status}: {{ role: {target}, prompt: "p" }}')
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("seed", range(300))
def test_random_graphs_get_the_facts_of_the_old_algorithm(tmp_path: Path, seed: int) -> None:
    graph = load(tmp_path, random_graph(random.Random(seed)))
    assert_same_facts(GraphView(graph))


def test_a_chain_gets_the_facts_of_the_old_algorithm(tmp_path: Path) -> None:
    assert_same_facts(GraphView(load(tmp_path, chain(40, planted=7))))


def with_old_algorithm(monkeypatch: pytest.MonkeyPatch, graph: Graph) -> list[Problem]:
    with monkeypatch.context() as patch:
        patch.setattr(templates, "flow", old_flow)
        patch.setattr(fanout, "flow", old_flow)
        patch.setattr(scope, "edge_facts", old_edge_facts)
        return lint(graph)


def planted_problems(found: list[Problem]) -> list[tuple[str, str]]:
    return [(p.code, p.message) for p in found]


def expected(roles: int, planted: int) -> list[tuple[str, str]]:
    """The two problems each planted role's `pass` prompt has, in the order of the file."""
    found = []
    for i in range(planted - 1, roles - 1, planted):
        label = f"r{i}.pass.prompt"
        found += [
            (
                "template-var",
                f"{label}: '$steps.r{i + 1}.out{i + 1}': role 'r{i + 1}' has not run on every "
                "path that reaches this edge",
            ),
            (
                "template-var",
                f"{label}: '$steps.r{i - 1}.why{i - 1}': role 'r{i - 1}' may last have replied "
                f"'pass' here, which has no field 'why{i - 1}'",
            ),
        ]
    return found


def test_a_chain_of_400_roles_has_the_problems_the_old_algorithm_finds_in_a_short_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    short = load(tmp_path, chain(30, planted=10), "short")
    assert planted_problems(with_old_algorithm(monkeypatch, short)) == expected(30, 10)
    assert planted_problems(lint(short)) == expected(30, 10)
    long = load(tmp_path, chain(400, planted=10), "long")
    assert planted_problems(lint(long)) == expected(400, 10)


def live_edges(view: GraphView) -> int:
    return sum(1 for e in view.edges if view.live(e) and e.role_target is not None)


@pytest.mark.parametrize("roles", [10, 50, 400])
def test_the_work_list_visits_each_edge_of_a_chain_a_bounded_number_of_times(
    tmp_path: Path, roles: int
) -> None:
    view = GraphView(load(tmp_path, chain(roles)))
    # three sweeps settle a chain: forward, backward (what `back` edges carry), forward
    assert dataflow.flow(view).visits <= 3 * live_edges(view)


def test_the_old_algorithm_did_not_visit_a_bounded_number_of_times(tmp_path: Path) -> None:
    # the control: counted the same way, the visits per edge of the algorithm replaced grew
    # with the chain
    per_edge = []
    for roles in (10, 40):
        view = GraphView(load(tmp_path, chain(roles), f"chain{roles}"))
        per_edge.append(old_flow(view).visits / live_edges(view))
    assert per_edge[1] > 3 * per_edge[0]


def test_the_analysis_runs_once_per_graph(tmp_path: Path) -> None:
    view = GraphView(load(tmp_path, chain(5)))
    assert dataflow.flow(view) is dataflow.flow(view)


def test_validate_tunes_the_collector_while_it_checks_and_leaves_it_as_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "g.yaml").write_text(chain(3), encoding="utf-8")
    seen: list[tuple[int, ...]] = []
    real = validate_cli.check_file

    def check_file(path: Path, kind: str) -> list[Problem]:
        seen.append(gc.get_threshold())
        return real(path, kind)

    monkeypatch.setattr(validate_cli, "check_file", check_file)
    before = gc.get_threshold(), gc.get_freeze_count()
    result = CliRunner().invoke(cli, ["validate", str(tmp_path / "g.yaml")])
    assert result.exit_code == 0, result.output
    assert seen == [(validate_cli.GC_THRESHOLD, *before[0][1:])]  # tuned while checking
    assert (gc.get_threshold(), gc.get_freeze_count()) == before  # and put back
