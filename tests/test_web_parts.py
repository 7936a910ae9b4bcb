"""The web page's parts without a browser: the SVG drawing, the answer form, `serve`'s errors."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from orchestrator.definition.loader import load_graph
from orchestrator.render.diagram import Taken
from orchestrator.run.waiting import Question
from orchestrator.web.answer_form import answer_forms, reply_from_form
from orchestrator.web.html import pre
from orchestrator.web.svg import to_svg
from tests.test_answer_cli import GRAPH as HUMAN_GRAPH


def test_the_drawing_marks_the_path_its_counts_and_the_step_in_flight() -> None:
    graph = load_graph("solve-issue")
    taken = Taken.from_edges(
        [
            ("$START", "_", "planner"),
            ("planner", "ready", "developer"),
            ("developer", "done", "reviewer"),
            ("reviewer", "rejected", "developer"),
            ("developer", "done", "reviewer"),
        ]
    )
    svg = to_svg(graph, taken, visits={"developer": 2, "reviewer": 2}, current="reviewer")
    assert '<g class="edge taken" data-edge="developer|done|reviewer" data-taken="2"' in svg
    assert ">done ×2</text>" in svg
    assert 'data-edge="reviewer|approved|tester" data-taken="0"' in svg
    assert (
        '<g class="node visited current" data-node="reviewer" data-id="n3" data-visits="2">' in svg
    )
    assert '<g class="node" data-node="tester" data-id="n4" data-visits="0">' in svg


def test_names_are_escaped_in_the_drawing(make_graph: Any) -> None:
    graph = make_graph(
        """
        name: odd
        description: odd names
        roles:
          a<b>:
            description: d
            goal: g
            frontmatter: { type: object, properties: { $status: { const: "x&y" } } }
        graph:
          $START: { _: { role: "a<b>", prompt: p } }
          "a<b>": { "x&y": { role: $END, prompt: p } }
        """
    )
    svg = to_svg(graph)
    assert "a&lt;b&gt;" in svg and "x&amp;y" in svg and "<b>" not in svg


def waiting_question(tmp_path: Path) -> Question:
    path = tmp_path / "approve.yaml"
    path.write_text(HUMAN_GRAPH.replace("PYTHON", '"python3"').replace("AGENT", '"agent.py"'))
    graph = load_graph(path)
    return Question("T1", 2, "boss", graph.roles["boss"], "Approve? buy owls", {"task": "owls"})


def test_the_form_has_one_input_per_field_typed_by_the_contract(tmp_path: Path) -> None:
    question = waiting_question(tmp_path)
    html = answer_forms(question)
    assert 'data-status="yes"' in html and 'data-status="no"' in html
    assert 'type="number" step="1" name="field.budget"' in html
    assert 'name="field.why"' in html and "in dollars" in html

    status, text, typed = reply_from_form(
        question, {"status": "yes", "field.budget": "300", "field.note": "", "body": "ok\r\n"}
    )
    assert status == "yes"
    assert text == "---\n$status: 'yes'\nbudget: 300\n---\nok\n"
    assert typed == {"$body": "ok\r\n", "budget": "300", "note": ""}

    refused = answer_forms(question, errors=("budget: too small",), status="yes", typed=typed)
    assert "budget: too small" in refused and 'value="300"' in refused


def test_serve_says_why_it_cannot_listen(tmp_path: Path) -> None:
    taken = socket.create_server(("127.0.0.1", 0))
    port = taken.getsockname()[1]
    try:
        out = subprocess.run(
            [sys.executable, "-m", "orchestrator", "serve", "--store", str(tmp_path / "s")]
            + ["--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    finally:
        taken.close()
    assert out.returncode == 1
    assert f"error: cannot listen on 127.0.0.1:{port}" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_very_long_text_is_cut_on_the_page_with_a_note() -> None:
    html = pre("<" * 250_000, "body")
    assert html.count("&lt;") == 100_000
    assert "cut: 250,000 characters in all" in html and "--full" in html
    assert pre("short") == "<pre>short</pre>"
