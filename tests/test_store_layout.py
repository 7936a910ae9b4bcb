"""The events table's two layouts (store/sqlite.py): a new store's is a rowid table, a store made
before keeps its `WITHOUT ROWID` table, and the same statements read and write both, with the
same results: the same script of writes (a new thread, steps, a taken sequence number, a fork's
event, a second thread) leaves the same events, rows, lists, searches and forks in either.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from orchestrator.core.events import (
    StepCommitted,
    StepStarted,
    ThreadCompleted,
    ThreadForked,
    ThreadStarted,
    ThreadStatus,
)
from orchestrator.core.state import ThreadSummary
from orchestrator.core.titles import ThreadQuery
from orchestrator.store import sqlite as sqlite_store
from orchestrator.store.base import ThreadBusy
from orchestrator.store.sqlite import SqliteStore

OLD_EVENTS_END = "    PRIMARY KEY (thread_id, seq)\n) WITHOUT ROWID;"
NEW_EVENTS_END = "    PRIMARY KEY (thread_id, seq)\n);"


def old_store(folder: Path) -> Path:
    """A store file as the versions before this layout made it (`WITHOUT ROWID` events)."""
    assert NEW_EVENTS_END in sqlite_store.SCHEMA
    folder.mkdir()
    db = sqlite3.connect(folder / "threads.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(sqlite_store.SCHEMA.replace(NEW_EVENTS_END, OLD_EVENTS_END))
    db.close()
    return folder


def layout(folder: Path) -> str:
    db = sqlite3.connect(folder / "threads.db")
    try:
        (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE name = 'events'").fetchone()
    finally:
        db.close()
    return "without rowid" if "WITHOUT ROWID" in sql.upper() else "rowid"


def summary(steps: int, status: ThreadStatus = ThreadStatus.RUNNING) -> ThreadSummary:
    return ThreadSummary(status, steps, 0.5 * steps, 7 * steps, 3 * steps, f"r{steps}")


def script(store: SqliteStore) -> dict[str, Any]:
    """The same writes, then everything a reader sees (times left out: they differ)."""
    for tid, title in (("01TA", "alpha login"), ("01TB", "beta")):
        started = ThreadStarted(
            tid, "g", "h", {"topic": title}, ".", title=title, labels={"k": tid}
        )
        store.create(started, summary(0), graph_path="g.yaml", snapshot={"name": "g"})
    seq = 1
    for step in range(1, 40):
        start = StepStarted(step, "writer" if step % 2 else "reviewer", f"p{step}", "$START", "_")
        done = StepCommitted(
            step, start.role, "draft", {"$status": "draft", "n": step}, "b" * 900, "r"
        )
        store.append_future(
            "01TA", seq + 2, done, summary(step), ((start, summary(step)),)
        ).result()
        seq += 2
    with pytest.raises(ThreadBusy):
        store.append("01TA", seq, StepStarted(99, "writer", "p", "$START", "_"), summary(99))
    store.append("01TB", 2, ThreadForked("01TA", 3), summary(0))
    store.append(
        "01TA",
        seq + 1,
        ThreadCompleted("ok", "done", "success"),
        summary(39, ThreadStatus.COMPLETED),
    )
    seen: dict[str, Any] = {}
    for tid in ("01TA", "01TB"):
        seen[tid] = [(e.seq, e.event) for e in store.events(tid)]
        row = store.thread(tid)
        seen[tid + " row"] = (row.state, row.steps, row.seq, row.cost_usd, row.reason, row.title)
    seen["after 70"] = [(e.seq, e.event) for e in store.events("01TA", after=70)]
    seen["roles"] = store.committed_roles("01TA")
    seen["list"] = [r.id for r in store.threads()]
    seen["completed"] = [r.id for r in store.threads("completed")]
    seen["search"] = [r.id for r in store.threads(query=ThreadQuery(search="log"))]
    seen["forks"] = store.forks()
    seen["prefix"] = store.thread("01TB").id
    return seen


def test_a_new_store_has_a_rowid_events_table(tmp_path: Path) -> None:
    SqliteStore(tmp_path / "new").close()
    assert layout(tmp_path / "new") == "rowid"


def test_control_an_old_store_keeps_its_layout(tmp_path: Path) -> None:
    """The control of the comparison below: the old layout is really there, and stays."""
    folder = old_store(tmp_path / "old")
    store = SqliteStore(folder)
    script(store)
    store.close()
    assert layout(folder) == "without rowid"


def test_both_layouts_read_and_write_the_same(tmp_path: Path) -> None:
    new = SqliteStore(tmp_path / "new")
    old = SqliteStore(old_store(tmp_path / "old"))
    try:
        seen_new, seen_old = script(new), script(old)
    finally:
        new.close()
        old.close()
    assert seen_new == seen_old
    assert len(seen_new["01TA"]) == 1 + 78 + 1 and seen_new["roles"][:2] == ["writer", "reviewer"]
    assert seen_new["forks"] == {"01TB": {"thread": "01TA", "step": 3}}
    assert seen_new["search"] == ["01TA"]
    # Reopened, the old store reads the same again (nothing was migrated or lost).
    reopened = SqliteStore(tmp_path / "old", readonly=True)
    try:
        assert [(e.seq, e.event) for e in reopened.events("01TA")] == seen_old["01TA"]
    finally:
        reopened.close()
