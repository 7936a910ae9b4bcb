"""Hostile names in a graph's drawing: they reach `dot` and the page as text, never as code.

Role names and statuses come from graph files (tests/drawing_graphs.py: a name that closes a DOT
string and adds a node `n9`, one that closes an SVG `<text>` and opens a `<script>`, Graphviz
escapes `\\N` `\\G`, `&amp;`, a status with a newline, a quote, a backslash, `]`).

Attacks: the DOT text `dot` lays out has exactly our nodes (none injected) and the SVG is
well-formed with only drawing elements, no script and no event attribute, every name shown as
written. Controls: the same graph with the escaping switched off, once for DOT (`dot_label`
replaced by bare quoting: `dot` then lays out the injected node `n9`), once for SVG (`escape`
replaced by the identity: a `<script>` element appears), so the tests see an attack succeed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from orchestrator.definition.loader import load_graph
from orchestrator.definition.models import Graph
from orchestrator.render import drawing, layout
from orchestrator.render.layout import LayoutUnavailable, Plan, dot_source, lay_out, plan_of
from tests.cli_helpers import Project
from tests.drawing_graphs import BREAK_DOT, BREAK_SVG, ESCAPES, HOSTILE

SVG = "{http://www.w3.org/2000/svg}"
DRAWING_TAGS = {"svg", "g", "title", "rect", "text", "path", "polygon"}


@pytest.fixture
def hostile(tmp_path: Path) -> Graph:
    return load_graph(Project(tmp_path).graph(HOSTILE, "hostile"))


def first_edge(graph: Graph) -> Plan:
    """`$START` and the role named to add a node `n9`, and the edge between them."""
    plan = plan_of(graph)
    return Plan(plan.shapes[:2], plan.arrows[:1])


def test_names_cannot_add_nodes_to_the_dot_text(hostile: Graph) -> None:
    for plan in (plan_of(hostile), first_edge(hostile)):
        laid = lay_out(dot_source(plan))
        assert set(laid.nodes) == {s.id for s in plan.shapes}  # none injected
        assert len(laid.routes) == len(plan.arrows)


def test_control_bare_quoting_lets_a_name_add_a_node(
    hostile: Graph, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(layout, "dot_label", lambda text: f'"{text}"')
    laid = lay_out(dot_source(first_edge(hostile)))
    assert "n9" in laid.nodes  # the name's `n9 [label="pwned"]` became a node
    with pytest.raises(LayoutUnavailable, match="syntax error"):
        lay_out(dot_source(plan_of(hostile)))  # and a status's quote broke the text


def elements(svg: str) -> list[Any]:
    return list(ElementTree.fromstring(svg).iter())


def test_names_are_text_in_the_svg(hostile: Graph) -> None:
    svg = drawing.to_svg(hostile)
    found = elements(svg)
    assert {e.tag.removeprefix(SVG) for e in found} <= DRAWING_TAGS
    assert not any(k.lower().startswith("on") for e in found for k in e.attrib)
    nodes = {e.get("data-node"): e for e in found if e.get("data-node")}
    assert set(nodes) == {"$START", "$END", BREAK_DOT, BREAK_SVG, ESCAPES}
    for name in (BREAK_DOT, BREAK_SVG, ESCAPES):
        assert nodes[name].find(f"{SVG}text").text == name  # shown as written
    labels = {e.text for e in found if e.get("class") == "edge-label"}
    assert labels == {"_", 'x"<y>]\\', "line1 line2", "<img src=x onerror=alert(1)>", "]"}


def test_control_without_escaping_a_name_becomes_a_script(
    hostile: Graph, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(drawing, "escape", lambda text, quote=True: text)
    svg = drawing.to_svg(hostile)
    assert "<script>alert(1)</script>" in svg
    try:
        found = {e.tag.removeprefix(SVG) for e in elements(svg)}
    except ElementTree.ParseError:
        return  # the markup broke the drawing: the attack changed the page's structure
    assert "script" in found
