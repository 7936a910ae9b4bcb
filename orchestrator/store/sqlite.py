"""The default event store: SQLite in WAL mode, one transaction per event.

Events are rows keyed by (thread, seq); the primary key makes a second writer of the same
sequence number fail, which is how two processes are kept from both advancing a thread. A
thread's summary row (state, steps, cost), computed by the caller from the folded state, is
written in the same transaction as the event, so `threads list` never reads the log. Appending costs the same at step 10 and at step 10,000.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..core.events import Event, ThreadStarted, ThreadStatus, event_from_dict
from ..core.state import ThreadSummary
from .base import Owner, StoredEvent, ThreadBusy, ThreadNotFound, ThreadRow, pid_alive

SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    id TEXT PRIMARY KEY,
    graph TEXT NOT NULL,
    graph_hash TEXT NOT NULL,
    graph_path TEXT NOT NULL,
    snapshot TEXT NOT NULL,
    state TEXT NOT NULL,
    steps INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    workspace TEXT NOT NULL DEFAULT '',
    seq INTEGER NOT NULL DEFAULT 0,
    lease_token TEXT,
    lease_pid INTEGER,
    lease_host TEXT,
    lease_expires REAL
);
CREATE TABLE IF NOT EXISTS events (
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    at REAL NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS threads_state ON threads(state);
"""

LEASE_SECONDS = 30.0

_ROW_COLUMNS = (
    "id, graph, graph_hash, graph_path, state, steps, cost_usd, input_tokens, output_tokens, "
    "created, updated, reason, workspace, seq"
)


class SqliteStore:
    def __init__(self, directory: str | Path, *, lease_seconds: float = LEASE_SECONDS):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / "threads.db"
        self.lease_seconds = lease_seconds
        self._db = sqlite3.connect(
            self.path, timeout=30.0, isolation_level=None, check_same_thread=False
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)

    # -- threads

    def create(
        self,
        started: ThreadStarted,
        summary: ThreadSummary,
        *,
        graph_path: str,
        snapshot: dict[str, Any],
        owner: Owner | None = None,
    ) -> None:
        now = time.time()
        with self._tx():
            self._db.execute(
                "INSERT INTO threads (id, graph, graph_hash, graph_path, snapshot, state, created,"
                " updated, workspace, lease_token, lease_pid, lease_host, lease_expires)"
                " VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?)",
                (
                    started.thread_id,
                    started.graph,
                    started.graph_hash,
                    graph_path,
                    json.dumps(snapshot, sort_keys=True),
                    now,
                    now,
                    started.workspace,
                    owner.token if owner else None,
                    owner.pid if owner else None,
                    owner.host if owner else None,
                    now + self.lease_seconds if owner else None,
                ),
            )
            self._insert(started.thread_id, 1, started, summary, now)

    def append(self, thread_id: str, seq: int, event: Event, summary: ThreadSummary) -> StoredEvent:
        now = time.time()
        with self._tx():
            self._insert(thread_id, seq, event, summary, now)
        return StoredEvent(seq, now, event)

    def _insert(
        self, thread_id: str, seq: int, event: Event, summary: ThreadSummary, now: float
    ) -> None:
        data = event.to_dict()
        try:
            self._db.execute(
                "INSERT INTO events (thread_id, seq, at, type, data) VALUES (?, ?, ?, ?, ?)",
                (thread_id, seq, now, data["type"], json.dumps(data, ensure_ascii=False)),
            )
        except sqlite3.IntegrityError:
            raise ThreadBusy(
                f"thread {thread_id} was advanced by another process (event {seq} already exists)"
            ) from None
        cur = self._db.execute(
            "UPDATE threads SET state = ?, steps = ?, cost_usd = ?, input_tokens = ?,"
            " output_tokens = ?, reason = ?, updated = ?, seq = ? WHERE id = ? AND seq = ?",
            (
                str(summary.status),
                summary.steps,
                summary.cost_usd,
                summary.input_tokens,
                summary.output_tokens,
                summary.reason,
                now,
                seq,
                thread_id,
                seq - 1,
            ),
        )
        if cur.rowcount != 1:
            raise ThreadBusy(f"thread {thread_id} was advanced by another process")

    def events(self, thread_id: str, after: int = 0) -> list[StoredEvent]:
        rows = self._db.execute(
            "SELECT seq, at, data FROM events WHERE thread_id = ? AND seq > ? ORDER BY seq",
            (thread_id, after),
        ).fetchall()
        if not rows and not after:
            self.thread(thread_id)  # raises ThreadNotFound
        return [StoredEvent(seq, at, event_from_dict(json.loads(data))) for seq, at, data in rows]

    def thread(self, thread_id: str) -> ThreadRow:
        row = self._db.execute(
            f"SELECT {_ROW_COLUMNS} FROM threads WHERE id = ?", (thread_id,)
        ).fetchone()
        if row is None:
            # Accept a unique prefix (or suffix) of an id, as people copy the end of a ULID.
            rows = self._db.execute(
                f"SELECT {_ROW_COLUMNS} FROM threads WHERE id LIKE ? OR id LIKE ?",
                (thread_id + "%", "%" + thread_id),
            ).fetchall()
            if len(rows) != 1 or not thread_id:
                raise ThreadNotFound(thread_id)
            row = rows[0]
        return _row(row)

    def threads(self, state: str | None = None) -> list[ThreadRow]:
        query = f"SELECT {_ROW_COLUMNS} FROM threads"
        args: tuple[Any, ...] = ()
        if state:
            query += " WHERE state = ?"
            args = (state,)
        return [_row(r) for r in self._db.execute(query + " ORDER BY id", args).fetchall()]

    def snapshot(self, thread_id: str) -> dict[str, Any]:
        row = self._db.execute("SELECT snapshot FROM threads WHERE id = ?", (thread_id,)).fetchone()
        return json.loads(row[0]) if row else {}

    # -- leases

    def acquire(self, thread_id: str, owner: Owner) -> None:
        now = time.time()
        with self._tx():
            row = self._db.execute(
                "SELECT lease_token, lease_pid, lease_host, lease_expires FROM threads WHERE id = ?",
                (thread_id,),
            ).fetchone()
            if row is None:
                raise ThreadNotFound(thread_id)
            token, pid, host, expires = row
            if token and token != owner.token and expires and expires > now:
                alive = pid_alive(pid) if host == owner.host else True
                if alive:
                    raise ThreadBusy(
                        f"thread {thread_id} is being advanced by process {pid} on {host}; "
                        f"wait for it to finish, or stop it (a lease left by a dead process is "
                        f"taken over automatically)"
                    )
            self._db.execute(
                "UPDATE threads SET lease_token = ?, lease_pid = ?, lease_host = ?,"
                " lease_expires = ? WHERE id = ?",
                (owner.token, owner.pid, owner.host, now + self.lease_seconds, thread_id),
            )

    def renew(self, thread_id: str, owner: Owner) -> None:
        self._db.execute(
            "UPDATE threads SET lease_expires = ? WHERE id = ? AND lease_token = ?",
            (time.time() + self.lease_seconds, thread_id, owner.token),
        )

    def release(self, thread_id: str, owner: Owner) -> None:
        self._db.execute(
            "UPDATE threads SET lease_token = NULL, lease_pid = NULL, lease_host = NULL,"
            " lease_expires = NULL WHERE id = ? AND lease_token = ?",
            (thread_id, owner.token),
        )

    def close(self) -> None:
        self._db.close()

    # -- helpers

    def _tx(self) -> _Transaction:
        return _Transaction(self._db)


def _row(values: tuple[Any, ...]) -> ThreadRow:
    row = ThreadRow(*values)
    return replace(row, state=ThreadStatus(row.state))


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on error: one transaction per event."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.db.execute("COMMIT")
        else:
            self.db.execute("ROLLBACK")
