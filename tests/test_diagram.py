"""`orchestrator graph`: Mermaid and DOT diagrams, escaping, and a thread's highlighted path."""

from __future__ import annotations

import re
import subprocess
import textwrap
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from click.testing import CliRunner

import orchestrator.render
from orchestrator.cli import cli
from orchestrator.definition.loader import load_graph
from orchestrator.definition.models import Graph
from orchestrator.render.diagram import Taken, to_dot, to_mermaid
from tests.dot_helpers import named

DEBATE = """\
name: debate
description: two sides argue
roles:
  against:
    description: argues against
    goal: You argue against.
    frontmatter:
      type: object
      properties: { $status: { enum: [continue, conceded] }, argument: { type: string } }
      required: [$status, argument]
  for:
    description: argues for
    goal: You argue for.
    frontmatter:
      type: object
      properties: { $status: { enum: [continue, conceded] }, argument: { type: string } }
      required: [$status, argument]
graph:
  $START:
    _: { role: against, prompt: "Open." }
  against:
    conceded: { role: $END, prompt: "Against conceded." }
    continue: { role: for, prompt: "Counter: {{{argument}}}" }
  for:
    conceded: { role: $END, prompt: "For conceded." }
    continue: { role: against, prompt: "Counter: {{{argument}}}" }
"""

# Names that Mermaid and DOT would otherwise parse: quotes, pipes, brackets, backslashes.
ODD = """\
name: odd
description: odd names
roles:
  'say "hi" [now]':
    description: d
    goal: g
    frontmatter:
      type: object
      properties: { $status: { enum: ['a|b', 'c\\d', '#x<y>'] } }
graph:
  $START:
    _: { role: 'say "hi" [now]', prompt: "go" }
  'say "hi" [now]':
    'a|b': { role: $END, prompt: "1" }
    'c\\d': { role: $END, prompt: "2" }
    '#x<y>': { role: nowhere, prompt: "3" }
"""

TAKEN = [
    ("$START", "_", "against"),
    ("against", "continue", "for"),
    ("for", "continue", "against"),
    ("against", "continue", "for"),
    ("for", "conceded", "$END"),
]


def graph_from(tmp_path: Path, text: str, name: str) -> Graph:
    path = tmp_path / f"{name}.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return load_graph(str(path))


@pytest.fixture
def debate(tmp_path: Path) -> Graph:
    return graph_from(tmp_path, DEBATE, "debate")


def mermaid_edges(text: str) -> list[tuple[str, str, str]]:
    return re.findall(r'^    (n\d+) -->\|"([^"]*)"\| (n\d+)$', text, re.M)


def mermaid_nodes(text: str) -> dict[str, str]:
    found = re.findall(r'^ +(n\d+)\(?\["([^"]*)"\]\)?$', text, re.M)
    return {label: node for node, label in found}


def test_mermaid_draws_every_edge_with_its_status(debate: Graph) -> None:
    text = to_mermaid(debate)
    assert text.startswith("flowchart TD\n")
    nodes = mermaid_nodes(text)
    assert set(nodes) == {"$START", "$END", "against", "for"}
    assert f'    {nodes["$START"]}(["$START"])' in text  # terminals are rounded
    edges = {(a, label, b) for a, label, b in mermaid_edges(text)}
    n = nodes
    assert edges == {
        (n["$START"], "_", n["against"]),
        (n["against"], "conceded", n["$END"]),
        (n["against"], "continue", n["for"]),
        (n["for"], "conceded", n["$END"]),
        (n["for"], "continue", n["against"]),
    }
    assert "linkStyle" not in text and "classDef" not in text


def test_dot_draws_every_edge_with_its_status(debate: Graph) -> None:
    text = named(to_dot(debate))
    assert text.startswith('digraph "debate" {\n') and text.endswith("}\n")
    assert '"$START" [shape=oval];' in text
    assert '"against" -> "for" [label="continue"];' in text
    assert '"for" -> "$END" [label="conceded"];' in text
    assert text.count(" -> ") == 5


def test_mermaid_escapes_what_it_would_parse(tmp_path: Path) -> None:
    text = to_mermaid(graph_from(tmp_path, ODD, "odd"))
    assert '["say #quot;hi#quot; [now]"]' in text
    labels = [label for _, label, _ in mermaid_edges(text)]
    assert labels == ["_", "a#124;b", "c\\d", "#35;x#lt;y#gt;"]
    for line in text.splitlines()[1:]:
        assert line.count('"') % 2 == 0, line


def test_dot_escapes_quotes_and_backslashes(tmp_path: Path) -> None:
    text = named(to_dot(graph_from(tmp_path, ODD, "odd")))
    assert '"say \\"hi\\" [now]" -> "$END" [label="c\\\\d"];' in text
    assert '[label="a|b"]' in text


def test_an_edge_into_an_unknown_role_is_drawn_dashed(tmp_path: Path) -> None:
    graph = graph_from(tmp_path, ODD, "odd")
    dot = named(to_dot(graph))
    assert '"nowhere" [style="rounded,dashed"];' in dot
    assert '-> "nowhere" [label="#x<y>", style=dashed];' in dot
    mermaid = to_mermaid(graph)
    node = mermaid_nodes(mermaid)["nowhere"]
    assert f"style {node} stroke-dasharray: 4 4" in mermaid
    assert "linkStyle 3 stroke-dasharray: 4 4" in mermaid


def test_a_taken_path_is_highlighted_with_counts(debate: Graph) -> None:
    mermaid = to_mermaid(debate, TAKEN)
    labels = [label for _, label, _ in mermaid_edges(mermaid)]
    assert labels == ["_", "conceded", "continue ×2", "conceded", "continue"]
    # every edge but against -> $END (index 1) was taken
    assert "    linkStyle 0,2,3,4 stroke:#d62728,stroke-width:3px" in mermaid
    assert re.search(r"^    class (n\d+,){3}n\d+ visited$", mermaid, re.M)

    dot = named(to_dot(debate, Taken.from_edges(TAKEN)))
    assert '"against" -> "for" [label="continue ×2", color="#d62728"' in dot
    assert '"against" -> "$END" [label="conceded"];' in dot
    assert '"for" [fillcolor="#fde2e1", style="rounded,filled"];' in dot


def test_taken_counts_may_be_given(debate: Graph) -> None:
    taken = Taken(edges=(("$START", "_", "against"),), counts={("$START", "_", "against"): 3})
    assert '"_ ×3"' in to_mermaid(debate, taken)


# --------------------------------------------------------------------------- the command


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, ["graph", *args])


def test_graph_command_prints_mermaid_by_default(tmp_path: Path, debate: Graph) -> None:
    result = run(str(tmp_path / "debate.yaml"))
    assert result.exit_code == 0
    assert result.output == to_mermaid(debate)


def test_graph_command_dot(tmp_path: Path, debate: Graph) -> None:
    result = run(str(tmp_path / "debate.yaml"), "--format", "dot")
    assert result.exit_code == 0
    assert result.output == to_dot(debate)


def test_graph_command_finds_a_graph_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "graphs").mkdir()
    (tmp_path / "graphs" / "debate.yaml").write_text(DEBATE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = run("debate")
    assert result.exit_code == 0 and "flowchart TD" in result.output


def test_graph_command_on_a_missing_graph_exits_2(tmp_path: Path) -> None:
    result = run(str(tmp_path / "nope.yaml"))
    assert result.exit_code == 2
    assert "error[unreadable]" in result.output


def test_graph_command_on_a_broken_graph_exits_1(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: broken\ngraph: [\n", encoding="utf-8")
    result = run(str(path))
    assert result.exit_code == 1
    assert "error[yaml-syntax]" in result.output


def test_graph_command_highlights_a_thread(
    tmp_path: Path, debate: Graph, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[Any, str]] = []

    def thread_path(store_dir: Any, thread_id: str, graph: str | None = None) -> Taken:
        calls.append((store_dir, thread_id))
        return Taken.from_edges(TAKEN)

    monkeypatch.setattr(orchestrator.render, "thread_path", thread_path, raising=False)
    store = tmp_path / "store"
    args = (str(tmp_path / "debate.yaml"), "--thread", "t-1", "--store", str(store))
    result = run(*args)
    assert result.exit_code == 0, result.output
    assert result.output == to_mermaid(debate, TAKEN)
    assert calls == [(store, "t-1")]


def test_graph_command_reports_an_unknown_thread(
    tmp_path: Path, debate: Graph, monkeypatch: pytest.MonkeyPatch
) -> None:
    def thread_path(store_dir: Any, thread_id: str, graph: str | None = None) -> Taken:
        raise LookupError(f"no thread '{thread_id}'")

    monkeypatch.setattr(orchestrator.render, "thread_path", thread_path, raising=False)
    result = run(str(tmp_path / "debate.yaml"), "--thread", "nope")
    assert result.exit_code == 2
    assert "cannot read thread 'nope'" in result.output


# --------------------------------------------------------------------------- fan-outs, subgraphs

FANOUT = """\
name: fan
description: fans out
roles:
  planner:
    description: plans
    goal: You plan.
    frontmatter:
      type: object
      properties: { parts: { type: array }, plan: { type: string } }
      required: [parts, plan]
  writer:
    description: writes
    goal: You write.
    frontmatter: { type: object }
  checker:
    description: checks
    goal: You check.
    frontmatter: { type: object }
  review:
    description: the review loop
    graph: child
graph:
  $START:
    _: { role: planner, prompt: "Plan {{{$inputs.task}}}" }
  planner:
    _:
      parallel:
        - { role: writer, prompt: "Write {{{plan}}}" }
        - { role: checker, prompt: "Check {{{plan}}}" }
      join: { role: review, prompt: "{{#$branches}}{{{$body}}}{{/$branches}}" }
  review:
    done:
      for_each: $steps.planner.parts
      as: part
      role: writer
      prompt: "Write {{{part}}}"
      join: { role: $END, ending: written, prompt: "{{#$branches}}{{{$body}}}{{/$branches}}" }
"""

CHILD = """\
name: child
description: the review loop
roles:
  w:
    description: w
    goal: g
    frontmatter: { type: object }
graph:
  $START:
    _: { role: w, prompt: "{{{$inputs.task}}}" }
  w:
    _: { role: $END, prompt: "ok" }
"""


@pytest.fixture
def fan(tmp_path: Path) -> Graph:
    (tmp_path / "child.yaml").write_text(CHILD, encoding="utf-8")
    return graph_from(tmp_path, FANOUT, "fan")


def test_mermaid_draws_a_fan_out_to_each_branch_and_on_to_the_join(fan: Graph) -> None:
    text = to_mermaid(fan)
    n = mermaid_nodes(text)
    edges = set(mermaid_edges(text))
    assert {
        (n["planner"], "_", n["writer"]),
        (n["planner"], "_", n["checker"]),
        (n["writer"], "join", n["review"]),
        (n["checker"], "join", n["review"]),
        # a for_each is one branch, marked with its item; its join leads to $END
        (n["review"], "done for each part", n["writer"]),
        (n["writer"], "join (written)", n["$END"]),
    } <= edges
    assert len(edges) == 7  # and $START -> planner


def test_mermaid_draws_a_subgraph_role_in_a_box_named_after_its_graph(fan: Graph) -> None:
    text = to_mermaid(fan)
    node = mermaid_nodes(text)["review"]
    assert f'    subgraph s{node}["graph: child"]\n        {node}["review"]\n    end\n' in text


def test_dot_draws_fan_outs_and_a_subgraph_cluster(fan: Graph) -> None:
    text = named(to_dot(fan))
    assert '"planner" -> "writer" [label="_"];' in text
    assert '"checker" -> "review" [label="join"];' in text
    assert '"review" -> "writer" [label="done for each part"];' in text
    assert '"writer" -> "$END" [label="join (written)"];' in text
    assert '    subgraph "cluster_review" {\n        label="graph: child";\n' in text
    assert text.count("subgraph") == 1


def test_a_taken_fan_out_highlights_its_branches_and_join(fan: Graph) -> None:
    taken = [
        ("$START", "_", "planner"),
        ("planner", "_", "writer"),
        ("planner", "_", "checker"),
        ("planner", "_", "review"),
    ]
    dot = named(to_dot(fan, Taken.from_edges(taken)))
    assert '"planner" -> "checker" [label="_", color="#d62728"' in dot
    assert '"checker" -> "review" [label="join", color="#d62728"' in dot
    assert '"review" -> "writer" [label="done for each part"];' in dot


ODD_NAMES = """\
name: odd-names
description: role names Graphviz and Mermaid would read as something else
roles:
  "%1":
    description: d
    goal: g
    frontmatter: {type: object, properties: {$status: {const: next}}, required: [$status]}
  "a&amp;b":
    description: d
    goal: g
    frontmatter: {type: object, properties: {$status: {const: "x&lt;y"}}, required: [$status]}
graph:
  $START: {_: {role: "%1", prompt: go}}
  "%1": {next: {role: "a&amp;b", prompt: on}}
  "a&amp;b": {"x&lt;y": {role: $END, prompt: end}}
"""


def test_graphviz_draws_every_name_as_written(tmp_path: Path) -> None:
    """Laid out by the real `dot`: one node per name, labels exactly the names (a `%N` name
    is not one of Graphviz's anonymous ids, an entity is not decoded)."""
    graph = graph_from(tmp_path, ODD_NAMES, "odd-names")
    laid = subprocess.run(
        ["dot", "-Tsvg"], input=to_dot(graph), capture_output=True, text=True, check=True
    )
    svg = ElementTree.fromstring(laid.stdout)
    ns = {"s": "http://www.w3.org/2000/svg"}

    def texts(kind: str) -> list[str]:
        found = svg.findall(f".//s:g[@class='{kind}']", ns)
        return sorted("".join(t.text or "" for t in g.findall("s:text", ns)) for g in found)

    assert texts("node") == sorted(["$START", "$END", "%1", "a&amp;b"])
    assert texts("edge") == sorted(["_", "next", "x&lt;y"])


def test_mermaid_keeps_entities_as_written(tmp_path: Path) -> None:
    text = to_mermaid(graph_from(tmp_path, ODD_NAMES, "odd-names"))
    assert '["a#38;amp;b"]' in text
    assert [label for _, label, _ in mermaid_edges(text)][-1] == "x#38;lt;y"
