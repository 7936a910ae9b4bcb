"""`run --replay REC --pace`: each step comes at its recorded pace, and Ctrl-C stops it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import yaml

from orchestrator import get_thread, run_thread
from orchestrator.actors.recording import (
    RecordedStep,
    ReplayActor,
    load_recording,
    paced_seconds,
    recording_from_events,
)
from orchestrator.run.session import Session, open_store
from tests.solve_issue_scenario import RECORDING, SAMPLE

REPO = Path(__file__).resolve().parents[1]


def test_a_paced_replay_waits_each_steps_recorded_duration(tmp_path: Path) -> None:
    recording = load_recording(RECORDING)
    timed = replace(
        recording,
        steps=tuple(replace(s, duration_s=float(i)) for i, s in enumerate(recording.steps, 1)),
    )
    waited: list[float] = []

    async def sleep(seconds: float) -> None:
        waited.append(seconds)

    actor = ReplayActor(timed, pace=2.0, sleep=sleep)
    result = run_thread(
        "solve-issue",
        workspace=SAMPLE,
        store=tmp_path / "store",
        in_place=True,  # no worktree of this repository for a test's thread
        actor_for=lambda name, role: actor,
        inputs=dict(recording.inputs),
    )
    assert result.state == "completed"
    assert waited == [0.5, 1.0, 1.5, 2.0, 2.5, 3.0]  # twice as fast as recorded

    waited.clear()  # without a pace, no step waits
    plain = ReplayActor(timed, sleep=sleep)
    again = run_thread(
        "solve-issue",
        workspace=SAMPLE,
        store=tmp_path / "store",
        in_place=True,
        actor_for=lambda name, role: plain,
        inputs=dict(recording.inputs),
    )
    assert again.state == "completed" and waited == []


def test_a_recording_without_durations_is_paced_by_its_output_tokens() -> None:
    assert paced_seconds(RecordedStep("a", "x", duration_s=3.5)) == 3.5
    assert paced_seconds(RecordedStep("a", "x", usage={"output_tokens": 300})) == 5.0
    assert paced_seconds(RecordedStep("a", "x", usage={"output_tokens": 1})) == 0.5
    assert paced_seconds(RecordedStep("a", "x", usage={"output_tokens": 99_999})) == 10.0


def test_exported_recordings_keep_each_steps_duration(tmp_path: Path) -> None:
    store = tmp_path / "store"
    result = run_thread("solve-issue", workspace=SAMPLE, store=store, replay=RECORDING)
    session = Session(open_store(store))
    events = [s.event for s in session.events(result.thread_id)]
    recording = recording_from_events(events)
    took = [s.duration_s for s in get_thread(result.thread_id, store=store).steps]
    assert [s.duration_s for s in recording.steps] == [round(t, 3) for t in took]
    path = tmp_path / "again.yaml"
    path.write_text(recording.dump())
    assert load_recording(path).steps == recording.steps


def test_ctrl_c_stops_a_paced_replay_and_says_to_replay_again(tmp_path: Path) -> None:
    data = yaml.safe_load(RECORDING.read_text())
    data["steps"][1]["duration_s"] = 3600  # the developer's step: an hour, to be interrupted
    slow = tmp_path / "slow.yaml"
    slow.write_text(yaml.safe_dump(data, sort_keys=False))
    env = {**os.environ, "ORCHESTRATOR_HOME": str(tmp_path / "store")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "run", "solve-issue", "--workspace", str(SAMPLE)]
        + ["--replay", str(slow), "--pace", "-i", "issue=@" + str(SAMPLE / "ISSUE.md")],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    seen = ""
    while "step 1" not in seen:  # the planner's step came (paced), the developer's is waiting
        line = proc.stderr.readline()
        assert line, seen
        seen += line
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, seen + err
    assert "interrupted: the replay" in err and "run the same command again" in err
    assert "continue it with" not in err  # a resumed replay would ask a real model
    (row,) = Session(open_store(tmp_path / "store", readonly=True)).threads()
    assert row.state == "suspended" and row.steps == 1


def test_pace_needs_a_recording(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", "solve-issue", "x", "--pace"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "ORCHESTRATOR_HOME": str(tmp_path / "store")},
    )
    assert out.returncode == 2
    assert "--pace plays a recording at its recorded pace: add --replay RECORDING" in out.stderr
