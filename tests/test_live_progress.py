"""The terminal's live view shows what happens inside a step: the tool call running now with its
argument in short, and the step's tokens, while the model is still working (against the fake
Messages API, the real `anthropic` client, `orchestrator run` on a pseudo-terminal)."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from orchestrator.actors.progress import Progress, ProgressKind, StepProgress, short_argument
from orchestrator.cli.live import LiveView
from orchestrator.testing.fake_anthropic import FakeResponse
from tests.anthropic_fixtures import fake_server, fast_actor, make_request, play

GRAPH = """
name: reader
description: Claude reads a file, then answers.
roles:
  reader:
    description: Reads
    goal: You read files.
    tools: [read]
    frontmatter:
      type: object
      properties: { $status: { const: done }, summary: { type: string } }
      required: [$status, summary]
graph:
  $START: { _: { role: reader, prompt: "Read NOTES.md" } }
  reader: { done: { role: $END, prompt: "{{{summary}}}" } }
"""


def _read_until(fd: int, seen: bytearray, wanted: list[bytes], seconds: float) -> bool:
    """Read the terminal into `seen` until every wanted text is there (True) or it went quiet."""
    while not all(w in seen for w in wanted):
        ready, _, _ = select.select([fd], [], [], seconds)
        if not ready:
            return False
        try:
            data = os.read(fd, 65536)
        except OSError:
            return False
        if not data:
            return False
        seen += data
    return True


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_the_live_view_shows_the_tool_call_and_tokens_during_a_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "graphs").mkdir()
    (tmp_path / "graphs" / "reader.yaml").write_text(GRAPH)
    (tmp_path / "NOTES.md").write_text("owls are birds\n")
    answer = threading.Event()
    calls: list[dict[str, Any]] = []

    def handler(body: dict[str, Any]) -> FakeResponse:
        calls.append(body)
        if len(calls) == 1:
            return FakeResponse.tool_use(
                "str_replace_based_edit_tool", {"command": "view", "path": "NOTES.md"}
            )
        answer.wait(60)  # the step stays in flight until the test has seen the screen
        return FakeResponse.text("---\n$status: done\nsummary: owls are birds\n---\n")

    with fake_server(monkeypatch, handler=handler) as server:
        leader, follower = pty.openpty()
        env = {
            **os.environ,
            "TERM": "xterm-256color",
            "COLUMNS": "160",
            "ORCHESTRATOR_HOME": str(tmp_path / "store"),
            "ANTHROPIC_BASE_URL": server.url,
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "orchestrator", "run", "reader", "notes", "--in-place"],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=follower,
        )
        os.close(follower)
        seen = bytearray()
        try:
            during = _read_until(
                leader, seen, [b"str_replace_based_edit_tool view NOTES.md", b" tok"], 60
            )
            screen = seen.decode(errors="replace")
            assert during, screen
            assert proc.poll() is None  # still inside the step: the model has not answered
            status = [line for line in screen.split("\r") if "view NOTES.md" in line][-1]
            assert "step 1" in status and "reader" in status
            tokens = int(status.split(" tok")[0].rsplit("·", 1)[1].strip(" ~").replace(",", ""))
            assert tokens > 0  # the first call's usage, counted before the step ends
        finally:
            answer.set()
            stdout, _ = proc.communicate(timeout=60)
            _read_until(leader, seen, [b"completed"], 5)
            os.close(leader)
    assert proc.returncode == 0, seen.decode(errors="replace")
    assert "owls are birds" in stdout.decode()


def test_progress_counts_streamed_text_then_the_exact_usage() -> None:
    told: list[Progress] = []
    progress = StepProgress(told.append, 3)

    class Delta:
        text = "x" * 40

    class Event:
        type = "content_block_delta"
        delta = Delta()

    progress.stream_event(Event())
    assert told[-1] == Progress(3, ProgressKind.TOKENS, 0, 10, estimated=True)
    progress.call_done({"input_tokens": 20, "cache_read_input_tokens": 100, "output_tokens": 14})
    assert told[-2].kind == ProgressKind.MODEL_DONE and told[-2].call is not None
    assert told[-1] == Progress(3, ProgressKind.TOKENS, 120, 14, estimated=False)
    progress.tool_call("bash", {"command": "pytest -q\n  tests/"})
    assert told[-1].kind == ProgressKind.TOOL and told[-1].argument == "pytest -q tests/"
    assert short_argument({"command": "view", "path": "a.py"}) == "view a.py"
    assert short_argument({"x": "y" * 100}).endswith("…")
    StepProgress(None, 1).stream_event(Event())  # no callback: nothing to do, no error


def test_the_status_line_counts_a_step_in_flight_and_forgets_it_when_committed() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, color_system=None, width=160)
    view = LiveView(None, "T1", console=console, clock=lambda: 0.0)
    view.step, view.role = 2, "developer"
    view.progress(Progress(2, ProgressKind.TOOL, 1000, 50, tool="bash", argument="make test"))
    view.progress(Progress(2, ProgressKind.TOKENS, 1000, 80, estimated=True))
    view.progress(Progress(1, ProgressKind.TOKENS, 9, 9))  # another step's word: ignored
    line = view.status_line().plain
    assert "⚙ bash make test" in line and "~1,080 tok" in line


def _count_stream_events(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every event `StepProgress.stream_event` is handed, by type, while still doing its work."""
    seen: list[str] = []
    original = StepProgress.stream_event

    def counting(self: StepProgress, event: Any) -> None:
        seen.append(event.type)
        original(self, event)

    monkeypatch.setattr(StepProgress, "stream_event", counting)
    return seen


def test_a_listener_gets_a_token_count_for_every_streamed_delta(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    told: list[Progress] = []
    with fake_server(monkeypatch, chunk_size=5) as server:
        reply = "---\n$status: ready\nplan: add a guard to parse()\n---\nDone."
        server.reply(FakeResponse.text(reply))
        seen = _count_stream_events(monkeypatch)
        play(fast_actor(), make_request(progress=told.append))
    deltas = seen.count("content_block_delta")
    assert deltas >= len(reply) // 5  # the fake cut the reply into small deltas
    estimated = [p for p in told if p.kind == ProgressKind.TOKENS and p.estimated]
    assert len(estimated) == deltas  # one count per delta, none skipped
    assert "message_stop" in seen  # every event reached the listener's side


def test_with_nobody_listening_no_stream_event_is_handled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with fake_server(monkeypatch, chunk_size=5) as server:
        server.reply(FakeResponse.text("---\n$status: ready\nplan: add a guard\n---\nDone."))
        seen = _count_stream_events(monkeypatch)
        reply = play(fast_actor(), make_request())
    assert "add a guard" in reply.text  # the step streamed and finished as before
    assert seen == []  # the skip path: not one event went through progress
