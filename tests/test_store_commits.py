"""Where and when the SQLite store commits (store/writer.py), seen from outside the process's
connection: a write made while nobody else writes is committed on the caller's thread before
the call returns; writes that wait while another thread commits share one transaction; a lock
held by another process never holds up the caller; and a step's result is on disk before the
next step starts (docs/threads.md).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from orchestrator.actors.base import ActReply, ActRequest
from orchestrator.core.events import StepStarted, ThreadStarted, ThreadStatus
from orchestrator.core.state import ThreadSummary
from orchestrator.definition.loader import load_graph
from orchestrator.run.options import RunOptions
from orchestrator.run.session import Session
from orchestrator.store.sqlite import SqliteStore
from orchestrator.store.writer import Writer


def summary(steps: int) -> ThreadSummary:
    return ThreadSummary(ThreadStatus.RUNNING, steps, 0.0, 0, 0, "")


def started(thread_id: str) -> ThreadStarted:
    return ThreadStarted(thread_id=thread_id, graph="g", graph_hash="h", inputs={}, workspace=".")


def step(n: int) -> StepStarted:
    return StepStarted(n, "worker", f"prompt {n}", "$START", "_")


def on_disk(folder: Path, thread_id: str) -> list[int]:
    """The thread's sequence numbers as another connection reads them: what is committed."""
    with sqlite3.connect(folder / "threads.db") as db:
        rows = db.execute("SELECT seq FROM events WHERE thread_id = ? ORDER BY seq", (thread_id,))
        return [seq for (seq,) in rows]


def writer_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "orchestrator-store-writer"]


def test_a_write_with_nobody_else_writing_is_committed_before_the_call_returns(
    tmp_path: Path,
) -> None:
    before = writer_threads()
    store = SqliteStore(tmp_path)
    store.create(started("t"), summary(0), graph_path="", snapshot={})
    for n in range(2, 12):
        future = store.append_future("t", n, step(n), summary(n))
        assert future.done()  # committed on this thread: nothing to wait for
        assert on_disk(tmp_path, "t") == list(range(1, n + 1))
    assert writer_threads() == before  # no thread was needed
    store.close()


def test_events_written_together_are_saved_together_or_not_at_all(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    store.create(started("t"), summary(0), graph_path="", snapshot={})
    done = store.append_future("t", 3, step(3), summary(3), ((step(2), summary(2)),))
    assert done.result().seq == 3 and on_disk(tmp_path, "t") == [1, 2, 3]
    # Event 4 is free but 5 is taken: neither is saved.
    store.append("t", 4, step(4), summary(4))
    taken = store.append_future("t", 5, step(5), summary(5), ((step(4), summary(4)),))
    assert taken.exception() is not None
    assert on_disk(tmp_path, "t") == [1, 2, 3, 4]
    store.close()


class Traced:
    """A connection factory that counts the COMMITs its connections run."""

    def __init__(self, path: Path):
        self.path = path
        self.statements: list[str] = []

    def __call__(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE IF NOT EXISTS rows (n INTEGER PRIMARY KEY)")
        db.set_trace_callback(self.statements.append)
        return db

    def commits(self) -> int:
        return sum(1 for s in self.statements if s == "COMMIT")


def test_writes_waiting_while_another_thread_commits_share_one_transaction(
    tmp_path: Path,
) -> None:
    traced = Traced(tmp_path / "w.db")
    writer = Writer(traced, lambda exc, doing: RuntimeError(doing))
    entered, leave = threading.Event(), threading.Event()

    def slow(db: sqlite3.Connection) -> None:  # holds the connection until told
        db.execute("INSERT INTO rows VALUES (0)")
        entered.set()
        assert leave.wait(30)

    first = threading.Thread(target=writer.call, args=(slow, "a slow write"))
    first.start()
    assert entered.wait(30)
    futures: dict[int, Any] = {}

    def submit(n: int) -> None:
        futures[n] = writer.submit(lambda db: db.execute("INSERT INTO rows VALUES (?)", (n,)), "w")

    others = [threading.Thread(target=submit, args=(n,)) for n in range(1, 21)]
    for thread in others:
        thread.start()
    for thread in others:
        thread.join(30)  # each returned at once, with its write queued: nobody waited
    assert len(futures) == 20 and not any(f.done() for f in futures.values())
    leave.set()
    first.join(30)
    for future in futures.values():
        future.result(timeout=30)
    # One transaction for the slow write, one for the twenty that waited for it.
    assert traced.commits() == 2
    writer.close()
    with sqlite3.connect(tmp_path / "w.db") as db:
        assert db.execute("SELECT count(*) FROM rows").fetchone()[0] == 21


def test_alone_each_write_is_its_own_transaction(tmp_path: Path) -> None:
    """The control of the test above: without a commit under way nothing waits, nothing groups."""
    traced = Traced(tmp_path / "w.db")
    writer = Writer(traced, lambda exc, doing: RuntimeError(doing))
    for n in range(20):
        assert writer.submit(lambda db, n=n: db.execute("INSERT INTO rows VALUES (?)", (n,)), "w")
    assert traced.commits() == 20
    writer.close()


def test_another_process_holding_the_lock_never_holds_up_the_caller(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    store.create(started("t"), summary(0), graph_path="", snapshot={})
    other = sqlite3.connect(tmp_path / "threads.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # as another process's transaction would
    began = time.monotonic()
    future = store.append_future("t", 2, step(2), summary(2))
    assert time.monotonic() - began < 1.0  # handed to the writer thread, which waits
    assert not future.done()
    other.execute("COMMIT")
    other.close()
    assert future.result(timeout=30).seq == 2
    assert on_disk(tmp_path, "t") == [1, 2]
    store.close()


GRAPH = """
name: loop
description: A role that answers at once, five times.
limits: { max_steps: 20, max_visits: 20 }
roles:
  worker:
    description: Works
    goal: You work.
    frontmatter:
      oneOf:
        - { type: object, properties: { $status: { const: again } }, required: [$status] }
        - { type: object, properties: { $status: { const: done } }, required: [$status] }
graph:
  $START: { _: { role: worker, prompt: go } }
  worker:
    again: { role: worker, prompt: again }
    done: { role: $END, prompt: done }
"""


class Checking:
    """An instant model that looks at the disk before answering: every step before this one
    must be committed there already (read through a connection of its own)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.seen: list[int] = []

    async def play(self, request: ActRequest) -> ActReply:
        with sqlite3.connect(self.folder / "threads.db") as db:
            rows = db.execute(
                "SELECT json_extract(data, '$.step') FROM events"
                " WHERE thread_id = ? AND type = 'StepCommitted' ORDER BY seq",
                (request.thread_id,),
            ).fetchall()
        assert [n for (n,) in rows] == list(range(1, request.step))
        self.seen.append(request.step)
        status = "done" if request.step == 5 else "again"
        return ActReply(text=f"---\n$status: {status}\n---\n")


def test_a_step_is_on_disk_before_the_next_step_starts(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text(GRAPH)
    graph = load_graph(path)
    store = SqliteStore(tmp_path / "store")
    session = Session(store)
    thread_id = session.start(graph, {"task": "count"}, folder=tmp_path).thread_id
    actor = Checking(tmp_path / "store")
    result = asyncio.run(
        session.advance(graph, thread_id, actor_for=lambda n, r: actor, options=RunOptions())
    )
    assert result.state == "completed", result.reason
    assert actor.seen == [1, 2, 3, 4, 5]
    assert result.path == ["worker"] * 5 + ["$END"]
    store.close()
    kinds = [e.event.__class__.__name__ for e in SqliteStore(tmp_path / "store").events(thread_id)]
    assert kinds.count("StepStarted") == kinds.count("StepCommitted") == 5
