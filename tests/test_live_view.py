"""The live terminal view (rich) and the choice between it, plain lines and JSON."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rich.console import Console

from orchestrator.cli import cli
from orchestrator.cli.display import PlainPrinter
from orchestrator.cli.drive import choose_view
from orchestrator.cli.live import LiveView, clock_text, live_possible
from orchestrator.core.engine import apply
from orchestrator.core.state import ThreadState
from orchestrator.definition.loader import load_graph
from orchestrator.run.options import RunOptions
from orchestrator.store.base import StoredEvent
from orchestrator.testing import reply, simulate
from orchestrator.views.loops import sends_back
from tests.solve_issue_scenario import RECORDING, REPO


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def recorded_console() -> Console:
    return Console(
        file=io.StringIO(), force_terminal=True, color_system=None, width=120, record=True
    )


def solve_issue_events() -> tuple[Any, list[StoredEvent]]:
    graph = load_graph("solve-issue")
    trace = simulate(
        graph,
        [
            reply("ready", plan="p", files=["a.py"]),
            reply("done", summary="s", files_changed=["a.py"]),
            reply("rejected", comments="c"),
            reply("done", summary="s2", files_changed=["a.py"]),
            reply("approved", summary="ok"),
            reply("passed", test_command="make test", test_output_summary="3 passed"),
        ],
        {"issue": "x"},
    )
    return graph, trace.store.events(trace.thread_id)


def feed(view: LiveView, events: list[StoredEvent], clock: Clock | None = None) -> ThreadState:
    state = ThreadState()
    for stored in events:
        apply(state, stored.event)
        if clock is not None:
            clock.now += 2.5
        view(stored, state)
    return state


def test_each_finished_step_is_one_line_and_loops_are_marked() -> None:
    graph, events = solve_issue_events()
    console = recorded_console()
    clock = Clock()
    view = LiveView(graph, "T1", console=console, clock=clock)
    feed(view, events, clock)
    lines = [line.rstrip() for line in console.export_text().splitlines() if line.strip()]
    assert lines[0].startswith("✓ step 1  planner     → ready")
    assert lines[2].startswith("↺ step 3  reviewer    → rejected, back to developer")
    assert lines[3].startswith("✓ step 4  developer   → done   ")  # forward again
    assert lines[5].startswith("✓ step 6  tester      → passed")
    assert lines[-1] == "• completed in 6 steps, $0.0000"
    assert len(lines) == 7


def test_the_status_line_shows_role_step_time_tokens_and_cost() -> None:
    from orchestrator.core.events import StepCommitted, StepStarted

    graph = load_graph("solve-issue")
    clock = Clock()
    view = LiveView(graph, "T1", console=recorded_console(), clock=clock, tokens_before=1000)
    state = ThreadState()
    started = StepStarted(1, "planner", "plan it", "$START", "_")
    apply(state, started)
    view(StoredEvent(2, 0.0, started), state)
    clock.now += 75
    text = view.status_line().plain
    assert text.startswith("step 1 planner 1:15")
    assert text.endswith("thread 1:15 · 1,000 tok")  # no cost before any is known
    committed = StepCommitted(
        1,
        "planner",
        "ready",
        {"plan": "p", "files": []},
        "",
        "reply",
        usage={"input_tokens": 1500, "output_tokens": 500},
        cost_usd=0.0123,
    )
    apply(state, committed)
    view(StoredEvent(3, 0.0, committed), state)
    text = view.status_line().plain
    assert text.startswith("between steps")
    assert "3,000 tok · $0.0123" in text
    # Rendered through a real Live display, the status line is drawn by its spinner.
    console = recorded_console()
    console.print(view)
    assert "between steps" in console.export_text()


def test_the_display_steps_aside_while_a_person_answers() -> None:
    from orchestrator.core.events import StepStarted

    graph = load_graph("solve-issue")
    view = LiveView(graph, "T1", console=recorded_console(), interactive=True)
    state = ThreadState()
    with view:
        asking = StepStarted(2, "requester", "question?", "planner", "insufficient_info")
        apply(state, asking)
        view(StoredEvent(3, 0.0, asking), state)
        assert view.paused
        from orchestrator.core.events import AttemptRejected

        typo = AttemptRejected(2, "---\n$status: answerd\n---\n", ["no such status"])
        apply(state, typo)
        view(StoredEvent(4, 0.0, typo), state)
        assert view.paused  # the person is asked again: the display stays aside
        planning = StepStarted(3, "planner", "plan", "requester", "answered")
        view(StoredEvent(4, 0.0, planning), state)
        assert view.paused  # a StepStarted does not bring it back; the answer's commit does
        from orchestrator.core.events import StepCommitted

        answered = StepCommitted(2, "requester", "answered", {"answer": "a"}, "", "r")
        apply(state, answered)
        view(StoredEvent(5, 0.0, answered), state)
        assert not view.paused


def test_back_edges_are_the_routes_that_send_work_back() -> None:
    assert sends_back(load_graph("solve-issue")) == {
        ("developer", "blocked"),
        ("reviewer", "rejected"),
        ("tester", "failed"),
        ("requester", "answered"),
    }


def test_clock_text() -> None:
    assert clock_text(0) == "0:00"
    assert clock_text(75.9) == "1:15"
    assert clock_text(3725) == "1:02:05"


def test_live_is_chosen_only_for_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    class Stream:
        def __init__(self, tty: bool):
            self.tty = tty

        def isatty(self) -> bool:
            return self.tty

    monkeypatch.setenv("TERM", "xterm")
    assert live_possible(Stream(True))
    assert not live_possible(Stream(False))
    assert not live_possible(object())
    monkeypatch.setenv("TERM", "dumb")
    assert not live_possible(Stream(True))

    graph = load_graph("solve-issue")
    options = RunOptions()
    choose_view(graph, None, "T1", options, as_json=False, live=False)
    assert isinstance(options.on_event, PlainPrinter)
    view = choose_view(graph, None, "T1", options, as_json=False, live=True)
    assert isinstance(view, LiveView) and options.on_event is view
    choose_view(graph, None, "T1", options, as_json=True, live=True)
    assert not isinstance(options.on_event, LiveView | PlainPrinter)


def test_plain_lines_when_the_output_is_not_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["run", "solve-issue", "--replay", str(RECORDING)])
    assert result.exit_code == 0, result.stderr
    assert "\x1b[" not in result.stderr  # no terminal control sequences
    assert "step 1 planner → ready" in result.stderr
    assert "step 3 reviewer → rejected" in result.stderr
    assert "completed in 6 steps" in result.stderr


def test_json_streams_events_then_the_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["run", "solve-issue", "--replay", str(RECORDING), "--json"])
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[0]["event"] == "ThreadStarted"
    assert [x["status"] for x in lines if x.get("event") == "StepCommitted"][2] == "rejected"
    assert lines[-1]["state"] == "completed" and "Tests: passed" in lines[-1]["final"]


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_a_terminal_gets_the_live_view(tmp_path: Path) -> None:
    """`orchestrator run` with stderr on a pseudo-terminal draws the rich view."""
    leader, follower = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "ORCHESTRATOR_HOME": str(tmp_path / "s")}
    env.pop("ANTHROPIC_API_KEY", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "run", "solve-issue", "--replay", str(RECORDING)],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=follower,
    )
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 30)
        if not ready:
            break
        try:
            data = os.read(leader, 65536)
        except OSError:  # the other side closed
            break
        if not data:
            break
        chunks.append(data)
    stdout, _ = proc.communicate(timeout=30)
    os.close(leader)
    screen = b"".join(chunks).decode(errors="replace")
    assert proc.returncode == 0, screen
    assert "↺" in screen and "back to developer" in screen
    assert "✓" in screen and "step 6" in screen
    assert "Tests: passed." in stdout.decode()


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_ctrl_c_under_the_live_view_suspends_and_says_how_to_resume(tmp_path: Path) -> None:
    import re
    import signal
    import time

    from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse
    from tests.solve_issue_scenario import sample_repo

    calls: list[int] = []

    def slow(body: dict[str, Any]) -> FakeResponse:
        calls.append(1)
        return FakeResponse.text("never sent", delay=60)

    repo = sample_repo(tmp_path / "statskit")
    with FakeAnthropic(slow) as fake:
        leader, follower = pty.openpty()
        env = {
            **os.environ,
            "TERM": "xterm-256color",
            "ANTHROPIC_BASE_URL": fake.url,
            "ANTHROPIC_API_KEY": "sk-test-not-a-real-key",
            "ORCHESTRATOR_HOME": str(tmp_path / "store"),
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "orchestrator", "run", "solve-issue", "-i", "issue=@ISSUE.md"],
            cwd=repo,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=follower,
        )
        os.close(follower)
        screen = b""
        deadline = time.monotonic() + 60
        interrupted = False
        while time.monotonic() < deadline:
            if calls and not interrupted and b"step 1" in screen:
                proc.send_signal(signal.SIGINT)
                interrupted = True
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                try:
                    data = os.read(leader, 65536)
                except OSError:
                    break
                if not data:
                    break
                screen += data
            elif proc.poll() is not None:
                break
        proc.wait(timeout=30)
        os.close(leader)
    text = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", screen.decode(errors="replace"))
    assert interrupted and proc.returncode == 3, text
    assert "suspended: interrupted by the user" in text
    found = re.search(r"continue it with\s+orchestrator threads resume (\S+)", text)
    assert found, text
    assert "Traceback" not in text
