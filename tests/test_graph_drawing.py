"""The graph drawn on thread pages, measured in the system's Chromium.

One store holds a thread of each graph the project ships (solve-issue and implement-tasks,
replayed from their recordings with real paths and visit counts; the review-loop and blank
starters, replayed from theirs) and of graphs made to be hard to draw (guards, a 5-way fan-out
with a join, a subgraph role reached by a `for_each`, and hostile names). `orchestrator serve`
shows them; each thread page's SVG is read from the DOM (tests/graph_geometry.py) and must have
no label over a label or a node, no node text spilling out of its box, and no edge through a
node other than its ends. The control runs the same check on the old hand layout and finds its
crossings, so a clean result means something. Without `dot` the page says so in one line and
shows the Mermaid text: shown with a server whose PATH has no `dot`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator import run_thread
from orchestrator.definition.loader import load_graph
from tests import old_svg_layout
from tests.cli_helpers import Project
from tests.drawing_graphs import BREAK_DOT, BREAK_SVG, CHILD, ESCAPES, FAN5, GUARDS, HOSTILE
from tests.graph_geometry import faults, geometry
from tests.solve_issue_scenario import RECORDING, SAMPLE
from tests.web_helpers import Served, chromium, in_thread, served

REPO = Path(__file__).resolve().parents[1]
STARTERS = REPO / "orchestrator" / "bundled" / "starters"
ROLES = {
    "solve-issue": ["planner", "developer", "reviewer", "tester", "requester"],
    "implement-tasks": ["task-planner", "picker", "solve", "record"],
    "review": ["writer", "reviewer"],
    "main": ["worker"],
    "guards": ["developer", "reviewer", "requester"],
    "fan5": ["planner", "a", "bb", "ccc", "dddd", "eeeee", "merger", "review"],
    "hostile": [BREAK_DOT, BREAK_SVG, ESCAPES],
}


def _replay(project: Project, graph: str, recording: Path, *inputs: str) -> None:
    out = project.run("run", graph, *inputs, "--replay", str(recording), "--json")
    assert out.returncode == 0, out.stderr


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, dict[str, str]]]:
    project = Project(tmp_path_factory.mktemp("drawing"))
    for starter in ("review-loop", "blank"):
        for part in ("graphs", "roles"):
            if (STARTERS / starter / part).is_dir():
                shutil.copytree(STARTERS / starter / part, project.root / part, dirs_exist_ok=True)
    _replay(project, "review", STARTERS / "review-loop/tests/recordings/rejected-once.yaml")
    _replay(project, "main", STARTERS / "blank/tests/recordings/done.yaml")
    _replay(
        project,
        "implement-tasks",
        REPO / "examples/implement-tasks.recording.yaml",
        "--workspace",
        str(REPO / "examples/sample-repo"),
        "-i",
        f"spec=@{REPO / 'examples/tasks-spec.md'}",
    )
    project.graph(CHILD, "child")
    failing = {}
    for name, text in (("guards", GUARDS), ("fan5", FAN5), ("hostile", HOSTILE)):
        project.graph(text, name)
        first = next(iter(load_graph(project.root / "graphs" / f"{name}.yaml").roles))
        failing[f"{first}:1"] = "the agent crashed, on purpose"
    project.set("fail", failing)
    for name in ("guards", "fan5", "hostile"):  # the first step fails: suspended, never a model
        subprocess.run(
            project.cmd("run", name, "owls"),
            cwd=project.root,
            env={**project.env(), "ANTHROPIC_API_KEY": "sk-test-not-a-real-key"},
            capture_output=True,
            timeout=120,
            check=False,
        )
    in_thread(
        run_thread,
        "solve-issue",
        workspace=SAMPLE,
        store=project.store,
        replay=RECORDING,
        inputs={"issue": (SAMPLE / "ISSUE.md").read_text()},
    )
    threads = {t["graph"]: t["id"] for t in project.threads()}
    assert set(threads) >= set(ROLES), threads
    with served(project.store, env=project.env()) as server:
        yield server, threads


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as found:
        yield found


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.mark.parametrize("graph", list(ROLES))
def test_no_label_overlaps_and_no_edge_crosses_a_node(
    site: tuple[Served, dict[str, str]], page: Any, graph: str
) -> None:
    server, threads = site
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(server.at(f"threads/{threads[graph]}"))
    svg = page.locator("svg.graph")
    svg.wait_for()
    found = geometry(page)
    assert found["faults"] == [], f"{graph}:\n" + "\n".join(found["faults"])
    assert found["edges"] > 0 and found["labels"] > 0
    drawn = svg.locator("g.node").evaluate_all("gs => gs.map(g => g.dataset.node)")
    assert sorted(drawn) == sorted(["$START", "$END", *ROLES[graph]])
    for name in ROLES[graph]:  # every name shown as it is written, never as markup
        texts = svg.locator("g.node > text").all_text_contents()
        assert any(t == name or t.startswith(f"{name} ×") for t in texts), (name, texts)
    assert dialogs == [] and svg.locator("script").count() == 0


def test_the_path_and_visit_counts_are_drawn(
    site: tuple[Served, dict[str, str]], page: Any
) -> None:
    server, threads = site
    page.goto(server.at(f"threads/{threads['implement-tasks']}"))
    svg = page.locator("svg.graph")
    picker = svg.locator('g.node[data-node="picker"]')
    assert picker.get_attribute("data-visits") == "4"  # three tasks, then all_done
    assert picker.locator("text").text_content() == "picker ×4"
    assert "visited" in (picker.get_attribute("class") or "")
    done = svg.locator('g.edge[data-edge="picker|all_done|$END"]')
    assert done.get_attribute("data-taken") == "1" and "taken" in (
        done.get_attribute("class") or ""
    )
    blocked = svg.locator('g.edge[data-edge="picker|blocked|$END"]')
    assert blocked.get_attribute("data-taken") == "0"
    solve = svg.locator('g.node[data-node="solve"]')
    assert "subgraph" in (solve.get_attribute("class") or "")  # boxed: two borders
    assert solve.locator("rect").count() == 2
    assert solve.locator("text.subgraph-label").text_content() == "graph: solve-issue"


def test_fan_outs_and_joins_are_drawn_as_such(
    site: tuple[Served, dict[str, str]], page: Any
) -> None:
    server, threads = site
    page.goto(server.at(f"threads/{threads['fan5']}"))
    svg = page.locator("svg.graph")
    assert svg.locator("g.bar.fork").count() == 1 and svg.locator("g.bar.join").count() == 2
    assert svg.locator("g.edge.fork").count() == 1  # one arrow from planner into the bar
    assert svg.locator("g.edge.branch").count() == 5  # and one from the bar to each branch
    assert svg.locator("g.edge.branch text").count() == 0  # the status is said once
    assert svg.locator("g.edge.join text").all_text_contents() == ["join", "join (written)"]
    each = svg.locator("g.edge.for-each")
    assert each.locator("path.crow").count() == 1
    assert each.locator("text").text_content() == "done for each part"


def test_control_the_check_sees_the_old_layouts_crossings(browser: Any) -> None:
    """The hand layout of old drew implement-tasks' `all_done` edge through `solve` and
    `record`: the same check, on that drawing, must say so."""
    page = browser.new_page()
    try:
        graph = load_graph("implement-tasks")
        page.set_content(f"<!doctype html><body>{old_svg_layout.to_svg(graph)}</body>")
        found = faults(page)
        assert "edge picker|all_done|$END passes through node solve" in found, found
        assert "edge picker|all_done|$END passes through node record" in found, found
        assert any(" overlaps label " in line for line in found), found
    finally:
        page.close()


def test_without_dot_the_page_says_so_and_shows_the_mermaid_text(
    site: tuple[Served, dict[str, str]], page: Any, tmp_path: Path
) -> None:
    server, threads = site
    bare = tmp_path / "bin"  # a PATH with Python and git, but no Graphviz
    bare.mkdir()
    for program in ("git", "python3"):
        found = shutil.which(program)
        if found:
            (bare / program).symlink_to(found)
    (bare / "python").symlink_to(sys.executable)
    env = {**os.environ, "PATH": str(bare), "ORCHESTRATOR_HOME": str(server_store(server))}
    env.pop("ORCHESTRATOR_DOT", None)
    assert shutil.which("dot", path=str(bare)) is None
    with served(server_store(server), env=env) as bare_server:
        page.goto(bare_server.at(f"threads/{threads['solve-issue']}"))
        note = page.locator("p[data-no-drawing]")
        assert note.count() == 1
        assert "Graphviz's `dot` was not found" in (note.text_content() or "")
        mermaid = page.locator("pre.mermaid-text").text_content() or ""
        assert mermaid.startswith("flowchart TD") and '"developer"' in mermaid
        assert page.locator("svg.graph").count() == 0
    # the control: the same page from the server with `dot` draws the graph
    page.goto(server.at(f"threads/{threads['solve-issue']}"))
    assert page.locator("svg.graph").count() == 1
    assert page.locator("p[data-no-drawing]").count() == 0


def server_store(server: Served) -> Path:
    """The store the server was started on (its command line)."""
    args = server.process.args
    assert isinstance(args, list)
    return Path(args[args.index("--store") + 1])
