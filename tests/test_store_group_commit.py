"""Group commit in the SQLite store (store/writer.py), with many threads of one process writing
at once: every step a thread is told is committed is on disk, seen from another connection and
from another process; writes waiting at the same moment share one transaction (and, as the
control, writes made one after another do not); a write whose rows do not fit on a full disk
fails alone, with the store's `StoreError`, on the thread that asked for it, while the writes
grouped with it are saved; a forked child writes through a connection of its own.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.core.events import StepCommitted, StepStarted, ThreadStarted, ThreadStatus
from orchestrator.core.state import ThreadSummary
from orchestrator.store.base import StoredEvent, StoreError
from orchestrator.store.sqlite import SqliteStore


def summary(steps: int) -> ThreadSummary:
    return ThreadSummary(ThreadStatus.RUNNING, steps, 0.0, 0, 0, "")


def started(thread_id: str) -> ThreadStarted:
    return ThreadStarted(thread_id=thread_id, graph="g", graph_hash="h", inputs={}, workspace=".")


def start(n: int, prompt: str = "") -> StepStarted:
    return StepStarted(n, "worker", prompt or f"prompt {n}", "$START", "_")


def committed(n: int) -> StepCommitted:
    reply = f"---\n$status: again\n---\nstep {n}\n"
    return StepCommitted(n, "worker", "again", {"$status": "again"}, f"step {n}", reply)


def on_disk(folder: Path, thread_id: str) -> list[int]:
    """The thread's sequence numbers as a new connection reads them: what is committed."""
    db = sqlite3.connect(folder / "threads.db")
    try:
        rows = db.execute("SELECT seq FROM events WHERE thread_id = ? ORDER BY seq", (thread_id,))
        return [seq for (seq,) in rows]
    finally:
        db.close()


class Commits:
    """Wraps the store's write connection factory and counts the COMMITs it runs."""

    def __init__(self, store: SqliteStore):
        writer = store._writes
        assert writer is not None
        self.connect: Callable[[], sqlite3.Connection] = writer._connect
        self.statements: list[str] = []
        writer._connect = self

    def __call__(self) -> sqlite3.Connection:
        db = self.connect()
        db.set_trace_callback(self.statements.append)
        return db

    def count(self) -> int:
        return sum(1 for s in self.statements if s == "COMMIT")


def hold_the_connection(store: SqliteStore) -> tuple[threading.Thread, threading.Event]:
    """Start a write on another thread that keeps the write connection until told to go: writes
    submitted meanwhile wait for it, and are committed together when it ends."""
    writer = store._writes
    assert writer is not None
    entered, leave = threading.Event(), threading.Event()

    def slow(db: sqlite3.Connection) -> None:
        entered.set()
        assert leave.wait(60)

    holder = threading.Thread(target=writer.call, args=(slow, "a slow write"))
    holder.start()
    assert entered.wait(60)
    return holder, leave


def wait_until_queued(store: SqliteStore, count: int) -> None:
    writer = store._writes
    assert writer is not None
    for _ in range(6000):
        with writer._mutex:
            if len(writer._pending) >= count:
                return
        threading.Event().wait(0.01)
    raise AssertionError(f"{count} writes never queued")


def test_each_thread_sees_every_acknowledged_step_on_disk(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    commits = Commits(store)
    ids = [f"t{i}" for i in range(8)]
    for thread_id in ids:
        store.create(started(thread_id), summary(0), graph_path="", snapshot={})
    unseen: list[str] = []
    go = threading.Barrier(len(ids))

    def advance(thread_id: str) -> None:
        go.wait(60)  # all start at once, so that their writes meet
        for step in range(1, 13):
            seq = 2 * step + 1  # a step's start and its result, in one write
            stored = store.append_future(
                thread_id, seq, committed(step), summary(step), ((start(step), summary(step)),)
            ).result(timeout=60)
            assert stored.seq == seq
            # Acknowledged: a connection opened now must see both events, and all before.
            if on_disk(tmp_path, thread_id) != list(range(1, seq + 1)):
                unseen.append(f"{thread_id} step {step}")

    threads = [threading.Thread(target=advance, args=(t,)) for t in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert unseen == []
    writes = len(ids) * (1 + 12)
    assert 1 <= commits.count() <= writes  # grouped or not: as the threads happened to meet
    store.close()
    # Another process reads every thread whole, with its summary row.
    code = (
        "import json, sys\n"
        "from orchestrator.store.sqlite import SqliteStore\n"
        "s = SqliteStore(sys.argv[1], readonly=True)\n"
        "print(json.dumps({r.id: [r.steps, r.seq, [e.seq for e in s.events(r.id)]]"
        " for r in s.threads()}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True
    )
    seen = json.loads(out.stdout)
    assert seen == {t: [12, 25, list(range(1, 26))] for t in ids}


def test_writes_waiting_at_the_same_moment_share_one_transaction(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    ids = [f"t{i}" for i in range(10)]
    commits = Commits(store)  # before the first write opens the connection
    for thread_id in ids:
        store.create(started(thread_id), summary(0), graph_path="", snapshot={})
    commits.statements.clear()
    holder, leave = hold_the_connection(store)
    results: dict[str, StoredEvent] = {}

    def write(thread_id: str) -> None:
        results[thread_id] = store.append(thread_id, 2, start(2), summary(2))

    writers = [threading.Thread(target=write, args=(t,)) for t in ids]
    for thread in writers:
        thread.start()
    wait_until_queued(store, len(ids))
    assert not results and all(on_disk(tmp_path, t) == [1] for t in ids)  # none committed yet
    leave.set()
    for thread in [holder, *writers]:
        thread.join(60)
    assert sorted(results) == ids
    # One COMMIT for the slow write, one for the ten writes that waited for it.
    assert commits.count() == 2
    assert all(on_disk(tmp_path, t) == [1, 2] for t in ids)
    store.close()


def test_control_writes_made_one_after_another_are_not_grouped(tmp_path: Path) -> None:
    """The control of the test above: the same ten writes from ten threads, each made once the
    one before it is committed, take ten transactions."""
    store = SqliteStore(tmp_path)
    ids = [f"t{i}" for i in range(10)]
    commits = Commits(store)  # before the first write opens the connection
    for thread_id in ids:
        store.create(started(thread_id), summary(0), graph_path="", snapshot={})
    commits.statements.clear()
    for thread_id in ids:
        thread = threading.Thread(target=store.append, args=(thread_id, 2, start(2), summary(2)))
        thread.start()
        thread.join(60)
        assert on_disk(tmp_path, thread_id) == [1, 2]
    assert commits.count() == len(ids)
    store.close()


def _mount(*args: str) -> bool:
    return subprocess.run(["mount", *args], capture_output=True).returncode == 0


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB tmpfs (CI runs as root, as test_store_faults.py's small disk does)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or not _mount("-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)):
        pytest.skip("needs root to mount a small tmpfs")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], capture_output=True)


HUGE = "x" * 3_000_000  # three times the disk


def test_a_write_that_does_not_fit_fails_alone_on_its_own_thread(small_disk: Path) -> None:
    store = SqliteStore(small_disk / "store")
    commits = Commits(store)  # before the first write opens the connection
    for thread_id in ("big", "a", "b"):
        store.create(started(thread_id), summary(0), graph_path="", snapshot={})
    commits.statements.clear()
    holder, leave = hold_the_connection(store)
    outcomes: dict[str, Any] = {}

    def write(thread_id: str, prompt: str) -> None:
        try:
            outcomes[thread_id] = store.append(thread_id, 2, start(2, prompt), summary(2))
        except StoreError as exc:
            outcomes[thread_id] = exc

    # Queued in this order: the big write is the group's first, the others come after it.
    writers = []
    for n, (thread_id, prompt) in enumerate((("big", HUGE), ("a", "small"), ("b", "small"))):
        thread = threading.Thread(target=write, args=(thread_id, prompt))
        thread.start()
        writers.append(thread)
        wait_until_queued(store, n + 1)
    leave.set()
    for thread in [holder, *writers]:
        thread.join(60)
    error = outcomes["big"]
    assert isinstance(error, StoreError) and error.kind == "full", error
    assert "is full" in str(error) and str(small_disk / "store" / "threads.db") in str(error)
    assert isinstance(outcomes["a"], StoredEvent) and isinstance(outcomes["b"], StoredEvent)
    assert on_disk(small_disk / "store", "a") == [1, 2]
    assert on_disk(small_disk / "store", "b") == [1, 2]
    assert on_disk(small_disk / "store", "big") == [1]  # its earlier steps kept
    # The slow write, then the group (undone whole by SQLite), then a and b alone.
    assert commits.count() == 3
    store.close()


def test_control_sqlite_undoes_the_whole_group_when_one_write_does_not_fit(
    small_disk: Path,
) -> None:
    """The control: what the writer works around. In one transaction, a small write followed by
    one that does not fit: SQLite undoes the transaction, the small write with it."""
    store = SqliteStore(small_disk / "store")
    store.create(started("a"), summary(0), graph_path="", snapshot={})
    store.close()
    db = sqlite3.connect(small_disk / "store" / "threads.db", isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO events VALUES ('a', 2, 0, 'StepStarted', '{}')")
    with pytest.raises(sqlite3.Error) as failed:
        db.execute("INSERT INTO events VALUES ('a', 3, 0, 'StepStarted', ?)", (HUGE,))
    assert failed.value.sqlite_errorcode & 0xFF == sqlite3.SQLITE_FULL
    assert not db.in_transaction  # undone whole
    db.close()
    assert on_disk(small_disk / "store", "a") == [1]


def test_a_forked_child_writes_through_a_connection_of_its_own(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    store.create(started("parent"), summary(0), graph_path="", snapshot={})
    holder, leave = hold_the_connection(store)
    queued = store.append_future("parent", 2, start(2), summary(2))  # starts the writer thread
    leave.set()
    holder.join(60)
    assert queued.result(timeout=60).seq == 2
    assert any(t.name == "orchestrator-store-writer" for t in threading.enumerate())
    writer = store._writes
    assert writer is not None
    parents = writer._db
    assert parents is not None
    pid = os.fork()  # the connection open, the writer thread waiting for work
    if pid == 0:  # the child: none of the parent's threads; the parent's connection is not used
        code = 1
        try:
            store.create(started("child"), summary(0), graph_path="", snapshot={})
            store.append("child", 2, start(2), summary(2))
            # SQLite forbids using a connection across fork(): the child opened its own.
            code = 3 if writer._db is parents or writer._db is None else 0
            code = code or (0 if on_disk(tmp_path, "child") == [1, 2] else 2)
        except BaseException as exc:  # noqa: BLE001  (shown by the parent)
            (tmp_path / "child-error").write_text(repr(exc))
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    error = tmp_path / "child-error"
    assert os.waitstatus_to_exitcode(status) == 0, error.read_text() if error.exists() else ""
    store.append("parent", 3, start(3), summary(3))  # the parent's writer goes on
    assert on_disk(tmp_path, "parent") == [1, 2, 3] and on_disk(tmp_path, "child") == [1, 2]
    store.close()


def wal_size_after_commits(folder: Path, commits: int) -> int:
    store = SqliteStore(folder)
    store.create(started("t"), summary(0), graph_path="", snapshot={})
    for n in range(2, commits + 2):
        store.append("t", n, start(n, "x" * 2000), summary(n))
    size = (folder / "threads.db-wal").stat().st_size
    store.close()
    return size


def test_the_log_starts_over_after_each_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checkpoints run on the writer thread while the caller's thread goes on committing: the
    log must still start over, or it grows for as long as the process writes."""
    monkeypatch.setattr("orchestrator.store.writer.CHECKPOINT_EVERY", 16)
    monkeypatch.setattr("orchestrator.store.writer.RESTART_FRAMES", 64)
    size = wal_size_after_commits(tmp_path, 1500)
    assert size < 10_000_000, size  # the commits between two restarts (33 MB without them)


def test_control_without_the_second_checkpoint_the_log_grows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control: the same commits, the write connection's checkpoint left out."""
    monkeypatch.setattr("orchestrator.store.writer.CHECKPOINT_EVERY", 16)
    monkeypatch.setattr("orchestrator.store.writer.RESTART_FRAMES", 64)
    monkeypatch.setattr("orchestrator.store.writer.Writer._restart_log", lambda self: None)
    size = wal_size_after_commits(tmp_path, 1500)
    assert size > 20_000_000, size  # every commit's pages, one after another
