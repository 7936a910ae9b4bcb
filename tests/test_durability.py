"""Threads survive a killed process, and two processes never both advance one thread."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from collections import Counter
from pathlib import Path

import pytest

from orchestrator.core.engine import fold
from orchestrator.core.events import StepCommitted, ThreadStarted
from orchestrator.store.base import Owner, ThreadBusy
from orchestrator.store.sqlite import SqliteStore
from tests.cli_helpers import LOOP_GRAPH, Project


def reply(status: str, note: str) -> str:
    return f"---\n$status: {status}\nnote: {note}\n---\n"


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.05):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met in time")


def in_flight_step(project: Project, step: int) -> str | None:
    """The id of the thread once step `step` has started and not committed (read-only look)."""
    path = project.store / "threads.db"
    if not path.exists():
        return None
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        rows = db.execute("SELECT thread_id, type, data FROM events ORDER BY seq").fetchall()
    except sqlite3.Error:
        return None  # the schema is being created
    finally:
        db.close()
    started = {
        tid
        for tid, kind, data in rows
        if kind == "StepStarted" and json.loads(data)["step"] == step
    }
    committed = {
        tid
        for tid, kind, data in rows
        if kind == "StepCommitted" and json.loads(data)["step"] == step
    }
    return next(iter(started - committed), None)


def test_sigkill_mid_step_then_resume_completes_each_step_once(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    replies = {str(i): reply("again", f"r{i}") for i in range(1, 5)}
    project.script(worker={**replies, "5": reply("done", "all")})
    project.set("sleep", {"worker:3": 120})  # step 3 hangs until we kill the run

    proc = project.popen("run", "loop", "build it")
    thread_id = wait_for(lambda: in_flight_step(project, 3))
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    (tmp_path / "sleep.json").unlink()  # the step answers promptly when it runs again
    out = project.run("threads", "resume", thread_id)
    assert out.returncode == 0, out.stderr
    assert "Finished: all" in out.stdout
    assert "interrupted" in out.stderr

    events = project.events(thread_id)
    committed = [e["step"] for e in events if e["type"] == "StepCommitted"]
    assert committed == sorted(set(committed)) == [1, 2, 3, 4, 5]
    started = Counter(e["step"] for e in events if e["type"] == "StepStarted")
    assert started[3] == 2  # the interrupted step ran again, and the log says so
    assert any(e["type"] == "ThreadResumed" and e["interrupted"] for e in events)
    show = project.run("threads", "show", thread_id)
    assert "ran again on resume" in show.stdout


def test_two_processes_resuming_one_thread(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    project.script(worker=[reply("again", "one"), reply("done", "two")])
    project.set("fail", {"worker:2": "service unavailable"})
    first = project.run("run", "loop", "x")
    assert first.returncode == 3, first.stderr
    assert "service unavailable" in first.stderr
    thread_id = project.threads()[0]["id"]

    (tmp_path / "fail.json").unlink()
    project.set("sleep", {"worker:2": 3})
    a = project.popen("threads", "resume", thread_id)
    b = project.popen("threads", "resume", thread_id)
    out_a, err_a = a.communicate(timeout=60)
    out_b, err_b = b.communicate(timeout=60)
    codes = sorted([a.returncode, b.returncode])
    assert codes == [0, 1], (err_a, err_b)
    loser_err = err_a if a.returncode == 1 else err_b
    assert "being advanced by process" in loser_err or "advanced by another process" in loser_err
    events = project.events(thread_id)
    committed = [e["step"] for e in events if e["type"] == "StepCommitted"]
    assert committed == [1, 2]


def test_store_refuses_a_taken_sequence_number(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    started = ThreadStarted("T1", "g", "sha256:x", {}, str(tmp_path))
    store.create(started, fold([started]).summary(), graph_path="g.yaml", snapshot={})
    commit = StepCommitted(1, "a", "_", {}, "", "reply")
    summary = fold([started, commit]).summary()
    store.append("T1", 2, commit, summary)
    with pytest.raises(ThreadBusy):
        store.append("T1", 2, commit, summary)
    assert [s.seq for s in store.events("T1")] == [1, 2]
    assert store.thread("T1").steps == 1


def test_lease_of_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    started = ThreadStarted("T2", "g", "h", {}, ".")
    store.create(started, fold([started]).summary(), graph_path="", snapshot={})
    dead = Owner("dead", 999_999_999, Owner.this_process("x").host)
    alive_elsewhere = Owner("other", 1, "another-host")
    me = Owner.this_process("me")
    store.acquire("T2", dead)
    store.acquire("T2", me)  # the dead process's lease does not block
    store.release("T2", me)
    store.acquire("T2", alive_elsewhere)
    with pytest.raises(ThreadBusy, match="another-host"):
        store.acquire("T2", me)


def test_threads_list_json_fields(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    project.script(worker=[reply("done", "quick")])
    assert project.run("run", "loop", "x").returncode == 0
    rows = project.threads()
    assert len(rows) == 1
    row = rows[0]
    assert {"id", "graph", "state", "steps", "updated"} <= set(row)
    assert (row["graph"], row["state"], row["steps"]) == ("loop", "completed", 1)
    json.dumps(row)
