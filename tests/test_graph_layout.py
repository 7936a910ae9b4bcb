"""Laying a graph out with Graphviz's `dot` (render/layout.py) and `graph --format svg`.

`dot` is the real program throughout. Its absence is a real absence: a PATH without it, or
`ORCHESTRATOR_DOT` naming a program that fails or hangs. The cache is shown by a layout still
served after `dot` is gone, and its bound by the oldest one no longer served.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections import Counter
from pathlib import Path
from xml.etree import ElementTree

import pytest

from orchestrator.definition.loader import load_graph
from orchestrator.render import layout
from orchestrator.render.drawing import to_svg
from orchestrator.render.layout import LayoutUnavailable, dot_source, lay_out, plan_of
from tests.solve_issue_scenario import RECORDING, SAMPLE

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def fresh_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layout, "_cache", type(layout._cache)())


def no_dot(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A PATH with no `dot` on it (nor anything else)."""
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("ORCHESTRATOR_DOT", raising=False)


def test_a_layout_is_run_once_per_dot_text_and_the_cache_is_bounded(
    fresh_cache: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    plan = plan_of(load_graph("solve-issue"))
    first = lay_out(dot_source(plan))
    assert set(first.nodes) == {s.id for s in plan.shapes}
    assert len(first.routes) == len(plan.arrows)

    monkeypatch.setattr(layout, "CACHE_SIZE", 3)
    for digits in (3, 4):  # two more texts: the first is still among the last three
        lay_out(dot_source(plan, digits))
    real_path = os.environ["PATH"]
    no_dot(monkeypatch, tmp_path)
    assert lay_out(dot_source(plan)) == first  # from the cache: dot is gone
    with pytest.raises(LayoutUnavailable, match="`dot` was not found"):
        lay_out(dot_source(plan, 5))  # never laid out: dot is needed

    monkeypatch.setenv("PATH", real_path)
    lay_out(dot_source(plan, 6))  # a fourth text after the first: it pushes the first out
    lay_out(dot_source(plan, 7))
    lay_out(dot_source(plan, 8))
    no_dot(monkeypatch, tmp_path)
    with pytest.raises(LayoutUnavailable):
        lay_out(dot_source(plan))
    assert len(layout._cache) == 3


def test_one_layout_serves_every_thread_of_a_graph() -> None:
    """Counts are drawn in room kept for them: a thread's path does not change the DOT text,
    so a live page re-drawn at each step lays out once."""
    graph = load_graph("solve-issue")
    plan = plan_of(graph)
    assert dot_source(plan, layout.digits_for(None, {})) == dot_source(
        plan, layout.digits_for(None, {"developer": 12})
    )
    assert "developer ×99" in dot_source(plan)
    assert "developer ×999" in dot_source(plan, layout.digits_for(None, {"developer": 120}))


def test_a_failing_or_hanging_dot_is_a_one_line_reason(
    fresh_cache: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    graph = load_graph("solve-issue")
    failing = tmp_path / "dot-fails"
    failing.write_text("#!/bin/sh\necho 'Error: syntax error in line 1' >&2\nexit 3\n")
    hanging = tmp_path / "dot-hangs"
    hanging.write_text("#!/bin/sh\nexec sleep 30\n")
    for script in (failing, hanging):
        script.chmod(script.stat().st_mode | stat.S_IXUSR)

    monkeypatch.setenv("ORCHESTRATOR_DOT", str(failing))
    with pytest.raises(LayoutUnavailable) as failed:
        to_svg(graph)
    assert str(failed.value) == ("Graphviz's `dot` failed (exit 3): Error: syntax error in line 1")
    monkeypatch.setenv("ORCHESTRATOR_DOT", str(hanging))
    monkeypatch.setattr(layout, "TIMEOUT", 0.5)
    with pytest.raises(LayoutUnavailable, match="took more than"):
        to_svg(graph)
    monkeypatch.setenv("ORCHESTRATOR_DOT", str(tmp_path / "no-such-program"))
    with pytest.raises(LayoutUnavailable, match="was not found"):
        to_svg(graph)
    monkeypatch.delenv("ORCHESTRATOR_DOT")  # the control: the real `dot` on PATH draws it
    assert to_svg(graph).startswith("<svg ")


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


@pytest.mark.parametrize("name", ["solve-issue", "implement-tasks"])
def test_graph_format_svg_prints_the_drawing_with_every_role(name: str) -> None:
    out = run_cli("graph", name, "--format", "svg")
    assert out.returncode == 0, out.stderr
    svg = ElementTree.fromstring(out.stdout)  # well-formed XML
    assert svg.tag == f"{SVG}svg" and svg.get("class") == "graph"
    graph = load_graph(name)
    nodes = {g.get("data-node") for g in svg.iter(f"{SVG}g") if g.get("data-node")}
    assert nodes == {"$START", "$END", *graph.roles}
    edges = [g for g in svg.iter(f"{SVG}g") if "edge" in (g.get("class") or "").split()]
    assert len(edges) == len(plan_of(graph).arrows)
    assert all(g.get("data-taken") == "0" for g in edges)  # no thread: nothing highlighted


def test_graph_format_svg_with_a_thread_marks_its_path(tmp_path: Path) -> None:
    store = tmp_path / "store"
    ran = run_cli(
        "run",
        "solve-issue",
        "--workspace",
        str(SAMPLE),
        "-i",
        f"issue=@{SAMPLE / 'ISSUE.md'}",
        "--replay",
        str(RECORDING),
        "--store",
        str(store),
    )
    assert ran.returncode == 0, ran.stderr
    listed = run_cli("threads", "list", "--json", "--store", str(store))
    thread = listed.stdout.split('"id": "')[1].split('"')[0]
    out = run_cli(
        "graph", "solve-issue", "--format", "svg", "--thread", thread, "--store", str(store)
    )
    assert out.returncode == 0, out.stderr
    svg = ElementTree.fromstring(out.stdout)
    by_edge = {g.get("data-edge"): g for g in svg.iter(f"{SVG}g") if g.get("data-edge")}
    assert by_edge["developer|done|reviewer"].get("data-taken") == "2"
    visits = Counter(
        {g.get("data-node"): int(g.get("data-visits") or 0) for g in svg.iter(f"{SVG}g")}
    )
    assert visits["developer"] == 2 and visits["tester"] == 1
    texts = [t.text for t in svg.iter(f"{SVG}text")]
    assert "developer ×2" in texts and "done ×2" in texts


def test_graph_format_svg_without_dot_says_so_in_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "ORCHESTRATOR_DOT"}
    out = run_cli("graph", "solve-issue", "--format", "svg", env={**env, "PATH": str(empty)})
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert out.stderr.startswith("error: no drawing: Graphviz's `dot` was not found")
    assert "--format mermaid" in out.stderr
    mermaid = run_cli("graph", "solve-issue", env={**env, "PATH": str(empty)})
    assert mermaid.returncode == 0 and mermaid.stdout.startswith("flowchart TD")
