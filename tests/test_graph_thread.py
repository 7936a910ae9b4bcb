"""`orchestrator graph GRAPH --thread ID`: the graph with the path a thread took."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli import cli
from orchestrator.core.events import (
    StepCommitted,
    StepStarted,
    ThreadCompleted,
    ThreadResumed,
    ThreadStarted,
    ThreadSuspended,
)
from orchestrator.render import edges_from_events, thread_path
from orchestrator.render.diagram import Taken
from orchestrator.testing import reply, simulate
from tests.dot_helpers import named
from tests.solve_issue_scenario import RECORDING


def replayed_thread(store: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """Run the demo recording into `store`; the thread's id."""
    monkeypatch.chdir(tmp_path)
    args = ["run", "solve-issue", "--replay", str(RECORDING), "--json", "--store", str(store)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.stderr
    return str(json.loads(result.stdout.splitlines()[-1])["thread"])


def test_the_path_of_the_demo_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "store"
    thread_id = replayed_thread(store, monkeypatch, tmp_path)
    taken = thread_path(store, thread_id)
    assert isinstance(taken, Taken)
    assert list(taken.edges) == [
        ("$START", "_", "planner"),
        ("planner", "ready", "developer"),
        ("developer", "done", "reviewer"),
        ("reviewer", "rejected", "developer"),
        ("developer", "done", "reviewer"),
        ("reviewer", "approved", "tester"),
        ("tester", "passed", "$END"),
    ]
    assert taken.count(("developer", "done", "reviewer")) == 2
    assert taken.count(("tester", "failed", "developer")) == 0
    # A unique prefix of the id works, as it does for `threads show`.
    assert thread_path(store, thread_id[:20]).edges == taken.edges


def test_graph_command_draws_the_taken_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    thread_id = replayed_thread(store, monkeypatch, tmp_path)
    runner = CliRunner()
    mermaid = runner.invoke(
        cli, ["graph", "solve-issue", "--thread", thread_id, "--store", str(store)]
    )
    assert mermaid.exit_code == 0, mermaid.stderr
    assert '-->|"done ×2"|' in mermaid.stdout
    assert "linkStyle" in mermaid.stdout  # the taken edges are highlighted
    dot = runner.invoke(
        cli,
        ["graph", "solve-issue", "--thread", thread_id, "--store", str(store), "--format", "dot"],
    )
    assert dot.exit_code == 0, dot.stderr
    taken_lines = [line for line in named(dot.stdout).splitlines() if "penwidth=3" in line]
    assert len(taken_lines) == 6  # six distinct edges taken; done was taken twice
    assert any('"reviewer" -> "developer" [label="rejected"' in line for line in taken_lines)


def test_unknown_thread_or_store_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    replayed_thread(store, monkeypatch, tmp_path)
    result = CliRunner().invoke(
        cli, ["graph", "solve-issue", "--thread", "NOPE", "--store", str(store)]
    )
    assert result.exit_code == 2
    assert "no thread 'NOPE'" in result.stderr
    with pytest.raises(LookupError, match="no thread store"):
        thread_path(tmp_path / "elsewhere", "X")
    assert not (tmp_path / "elsewhere").exists()  # reading never creates a store


def test_a_step_run_again_after_a_crash_counts_once() -> None:
    events = [
        ThreadStarted("T", "g", "h", {}, "/w"),
        StepStarted(1, "a", "p", "$START", "_"),
        ThreadSuspended("interrupted", "interrupted"),
        ThreadResumed(),
        StepStarted(1, "a", "p", "$START", "_"),
        StepCommitted(1, "a", "ok", {}, "", "r"),
        ThreadCompleted("done"),
        ThreadResumed(message="more"),
        StepStarted(2, "a", "p2", "$START", "resume"),
        StepCommitted(2, "a", "ok", {}, "", "r"),
        ThreadCompleted("done again"),
    ]
    assert edges_from_events(events) == [
        ("$START", "_", "a"),
        ("a", "ok", "$END"),
        ("$START", "resume", "a"),
        ("a", "ok", "$END"),
    ]


def test_a_thread_that_ends_at_once_and_one_that_stopped_midway() -> None:
    assert edges_from_events([ThreadStarted("T", "g", "h", {}, "/w"), ThreadCompleted("x")]) == [
        ("$START", "_", "$END")
    ]
    trace = simulate(
        "solve-issue",
        [reply("ready", plan="p", files=[]), reply("blocked", reason="r")],
        {"issue": "x"},
    )
    edges = edges_from_events([s.event for s in trace.store.events(trace.thread_id)])
    assert edges == [
        ("$START", "_", "planner"),
        ("planner", "ready", "developer"),
        ("developer", "blocked", "planner"),  # in flight when the script ran out
    ]
