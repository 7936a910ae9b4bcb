"""Presentation once (`orchestrator/views/`): a step's facts, a graph's loops and a thread's
summary row are worded by one function each, and every face (the live and plain terminal lines,
the story, the web page, `threads list`, a batch's table) shows what that function says."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from orchestrator.cli.display import describe
from orchestrator.cli.threads import thread_table
from orchestrator.core.allowed import allowed
from orchestrator.core.engine import apply
from orchestrator.core.events import StepCommitted, StepStarted, ThreadStarted, ThreadStatus
from orchestrator.core.state import ThreadState
from orchestrator.core.steps import thread_view
from orchestrator.definition.loader import load_graph
from orchestrator.store.base import StoredEvent, ThreadRow
from orchestrator.views.facts import StepFigures, step_facts
from orchestrator.views.loops import back_edges, sends_back
from orchestrator.views.story import story_text
from orchestrator.views.summary import Totals, ago, spent, summary_row, totals, why
from orchestrator.web.list_page import threads_page
from orchestrator.web.thread_page import thread_page
from tests.test_branches import GRAPH as FAN_GRAPH

USAGE = {"input_tokens": 1000, "output_tokens": 100, "cache_read_input_tokens": 24}


def test_a_steps_facts_in_one_wording() -> None:
    figures = StepFigures(8.25, USAGE, 0.0231, 1, actor="anthropic", model="claude-x")
    assert step_facts(figures) == [
        "8.2s",
        "1,124 tok (24 cached)",
        "$0.0231",
        "1 tool call",
        "claude-x",
    ]
    # The model API's actor goes without saying; any other is said.
    human = StepFigures(2.0, actor="human")
    assert step_facts(human) == ["2.0s", "human"]
    # The web page's card says more: the runs, the rejected replies.
    many = StepFigures(1.0, actor="anthropic", model="claude-x", runs=2, rejected=3)
    assert step_facts(many, detail=True) == [
        "1.0s",
        "claude-x",
        "ran 2 times",
        "3 rejected replies",
    ]
    assert step_facts(StepFigures(1.0, runs=1, rejected=1), detail=True) == [
        "1.0s",
        "1 rejected reply",
    ]
    assert step_facts(StepFigures(None, tool_calls=2)) == ["2 tool calls"]  # not committed


def _one_step_thread() -> tuple[ThreadState, list[StoredEvent], StepCommitted]:
    """A thread of one committed step, with tokens, cache reads, cost and tool calls."""
    graph = load_graph("solve-issue")
    committed = StepCommitted(
        1,
        "planner",
        "ready",
        {"$status": "ready"},
        "",
        "reply",
        usage=USAGE,
        cost_usd=0.0231,
        tool_calls=3,
        duration_s=8.24,
        actor="anthropic",
        model="claude-x",
    )
    events = [
        ThreadStarted("t1", graph.name, graph.hash, {"task": "x"}, "/w"),
        StepStarted(1, "planner", "Plan x", "$START", "_"),
        committed,
    ]
    state = ThreadState()
    stored = []
    for seq, event in enumerate(events, 1):
        apply(state, event)
        stored.append(StoredEvent(seq, 0.0, event))
    return state, stored, committed


def test_every_face_shows_a_step_with_the_same_facts() -> None:
    state, stored, committed = _one_step_thread()
    facts = ["8.2s", "1,124 tok (24 cached)", "$0.0231", "3 tool calls", "claude-x"]
    assert step_facts(StepFigures.of_event(committed)) == facts
    # The plain terminal line (the live view's line joins the same facts with " · ").
    assert describe(committed, state).endswith("(" + ", ".join(facts) + ")")
    # The story's step line.
    row = ThreadRow(
        "t1",
        "solve-issue",
        "",
        "",
        ThreadStatus.RUNNING,
        1,
        0.0231,
        1000,
        100,
        0.0,
        0.0,
        "",
        "/w",
        3,
    )
    story = story_text(row, stored)
    assert re.search(r"#1\s+planner → ready\s+" + re.escape("  ".join(facts)) + "$", story, re.M)
    # The web page's card: the same.
    html = thread_page(
        row,
        thread_view([s.event for s in stored]),
        graph=None,
        allowed=allowed(None, state),
        where="",
    )
    spans = "".join(f"<span>{f}</span>" for f in facts)
    assert f'<div class="facts">{spans}</div>' in html


def test_the_loops_the_live_view_and_the_drawing_see_are_one() -> None:
    graph = load_graph("solve-issue")
    assert sends_back(graph) == {(source, status) for source, status, _ in back_edges(graph)}
    assert ("reviewer", "rejected", "developer") in back_edges(graph)


def test_a_loop_after_a_fan_out_is_a_loop_for_every_face(tmp_path: Path) -> None:
    """The live view's own walk stopped at a fan-out, so it never said "back to planner" for a
    loop behind the join; the shared walk follows the arrows the drawing draws."""
    looping = FAN_GRAPH.replace(
        'integrator:\n    _: { role: $END, prompt: "Verdict: {{{verdict}}}" }',
        'integrator:\n    _: { role: planner, prompt: "Again: {{{verdict}}}" }',
    )
    assert looping != FAN_GRAPH
    path = tmp_path / "fan.yaml"
    path.write_text(looping)
    graph = load_graph(path)
    assert ("integrator", "_", "planner") in back_edges(graph)
    assert ("integrator", "_") in sends_back(graph)
    # Control: without the loop there is none.
    (tmp_path / "plain.yaml").write_text(FAN_GRAPH)
    assert back_edges(load_graph(tmp_path / "plain.yaml")) == set()


def _row(**changes: Any) -> ThreadRow:
    base = ThreadRow(
        "t1", "g", "", "", ThreadStatus.SUSPENDED, 2, 0.0, 10, 5, 1000.0, 1000.0, "r" * 100, "", 9
    )
    return replace(base, **changes)


def test_a_summary_rows_cells() -> None:
    cells = summary_row(_row(), now=1000.0 + 3 * 3600, why_width=60)
    assert (cells.state, cells.steps, cells.tokens, cells.cost) == ("suspended", "2", "15", "—")
    assert cells.started == cells.updated == "3h ago"
    assert cells.why == "r" * 59 + "…" and len(cells.why) == 60
    assert why("completed", "done well", 60) == ""  # a completed thread needs no reason
    assert why("waiting", "short", 60) == "short"
    assert spent(0.5) == "$0.5000" and spent(0.0) == "—"
    assert ago(100.0, 100.0 + 59) == "59s ago" and ago(0.0, 2 * 86400) == "2d ago"


def test_threads_list_and_the_web_list_show_the_same_row() -> None:
    row = _row(cost_usd=0.0123)
    line = thread_table([row])[1]
    html = threads_page([row], state=None, graph=None, graphs=["g"], where="")
    reason = "r" * 59 + "…"
    assert line.split()[:5] == ["t1", "g", "suspended", "2", "$0.0123"]
    assert line.endswith("  " + "r" * 59 + "…")
    assert '<td class="num">$0.0123</td>' in html
    assert f"<td>{'r' * 89}…</td>" in html  # the web page has room for more of the reason
    assert reason in line


def test_the_story_and_the_web_page_head_a_thread_with_the_same_totals() -> None:
    state, stored, _ = _one_step_thread()
    row = ThreadRow(
        "t1",
        "solve-issue",
        "",
        "",
        ThreadStatus.RUNNING,
        1,
        0.0231,
        1000,
        100,
        0.0,
        0.0,
        "",
        "/w",
        3,
    )
    view = thread_view([s.event for s in stored])
    spent = totals(view)
    assert (spent.steps, spent.tokens, spent.cost) == ("1 step", "1,124 tokens", "$0.0231")
    assert story_text(row, stored).startswith(
        "thread t1 · solve-issue · running · 1 step · $0.0231 · 1,124 tokens\n"
    )
    html = thread_page(row, view, graph=None, allowed=allowed(None, view.state), where="")
    assert "<span>1 step</span><span>1,124 tokens</span><span>$0.0231</span>" in html
    # Nothing spent: a dash on both, as in the lists.
    free = thread_view([s.event for s in stored[:2]])
    assert totals(free) == Totals("0 steps", "0 tokens", "—")
