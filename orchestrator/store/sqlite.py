"""The default event store: SQLite in WAL mode, each write committed before it is reported done.

Events are rows keyed by (thread, seq); the primary key makes a second writer of the same
sequence number fail, which is how two processes are kept from both advancing a thread. A
thread's summary row (state, steps, cost), computed by the caller from the folded state, is
written in the same transaction as the event, so `threads list` never reads the log (but each
thread's first event: its title and labels, and the filters and search, are `search.py`'s).
Appending costs the same at step 10 and at step 10,000.

Writes go through one write connection (`writer.py`): a write is committed at once on the
caller's thread when nobody else is writing, and the writes of several threads waiting at once
are committed together by a writer thread; each write is reported done only once committed. The
connection opened here only reads (WAL readers never wait for the writer).

Every SQLite error becomes a `StoreError` naming the file and what to do (a full disk, a damaged
file, a read-only folder), never a bare `sqlite3` traceback. A store opened `readonly` (the
reading commands: `threads list`, `show`, `export`, `graph --thread`) creates nothing and works
on a read-only file system; a folder without a store reads as a store without threads.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from ..core.events import Event, ThreadStarted, event_from_dict
from ..core.state import ThreadSummary
from . import search
from .base import (
    Owner,
    StoredEvent,
    StoreError,
    ThreadBusy,
    ThreadNotFound,
    ThreadRow,
    pid_alive,
)
from .rows import prepare as prepare_rows
from .sqlite_errors import store_error as store_error  # what an SQLite error means
from .writer import Writer

# `events` is a rowid table (its key an index beside it): a step's two rows, about 1 KB each,
# appended to a `WITHOUT ROWID` b-tree keyed by (thread, seq) split its pages more often, 5.8
# WAL pages per step against 4.3, 50 against 39 µs of SQLite's CPU per step's transaction.
# Stores made before keep their `WITHOUT ROWID` table: the same statements read and write
# both, with the same results (tests/test_store_layout.py), so no migration rewrites them.
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
);
CREATE INDEX IF NOT EXISTS threads_state ON threads(state);
CREATE INDEX IF NOT EXISTS events_forked ON events(thread_id) WHERE type = 'ThreadForked';
"""

LEASE_SECONDS = 30.0

_ROW_COLUMNS = (
    "id, graph, graph_hash, graph_path, state, steps, cost_usd, input_tokens, output_tokens, "
    "created, updated, reason, workspace, seq, " + search.COLUMNS  # title, labels: search.py
)


P = ParamSpec("P")
R = TypeVar("R")


Method = Callable[Concatenate[Any, P], R]


def guarded(doing: str) -> Callable[[Method[P, R]], Method[P, R]]:
    """Turn the SQLite errors of a store method into a StoreError that says what to do."""

    def wrap(method: Method[P, R]) -> Method[P, R]:
        @functools.wraps(method)
        def run(self: Any, *args: P.args, **kw: P.kwargs) -> R:
            try:
                return method(self, *args, **kw)
            except sqlite3.Error as exc:
                raise store_error(exc, self.path, doing) from None

        return run  # type: ignore[return-value]  # functools.wraps' type hides the signature

    return wrap


GITIGNORE = "# created by orchestrator: the thread store is not source code\n*\n"
_connect = functools.partial(
    sqlite3.connect, timeout=30.0, isolation_level=None, check_same_thread=False
)


class SqliteStore:
    def __init__(
        self, directory: str | Path, *, lease_seconds: float = LEASE_SECONDS, readonly: bool = False
    ):
        self.directory = Path(directory)
        self.path = self.directory / "threads.db"
        self.lease_seconds = lease_seconds
        self.readonly = readonly
        try:
            self._db = self._open_readonly() if readonly else self._open()
        except sqlite3.Error as exc:
            raise store_error(exc, self.path, "opening it") from None
        # Every write goes through one write connection (writer.py); this connection only reads.
        self._writes: Writer | None = None
        if not readonly:
            self._writes = Writer(self._connect_writer, self._error)
        # Per thread, the sequence number and state this process last wrote to its summary row,
        # so that an event that leaves the state as it was does not rewrite it (rows.py).
        self._states: dict[str, tuple[int, str]] = {}

    def _connect_writer(self) -> sqlite3.Connection:
        db = _connect(self.path)
        db.execute("PRAGMA synchronous=NORMAL")  # per connection; WAL is the file's own mode
        return db

    def _error(self, exc: sqlite3.Error, doing: str) -> StoreError:
        return store_error(exc, self.path, doing)

    def _open(self) -> sqlite3.Connection:
        try:
            made = not self.directory.exists()
            self.directory.mkdir(parents=True, exist_ok=True)
            if made:  # kept out of `git status` when it sits in a checkout (as pytest's cache)
                (self.directory / ".gitignore").write_text(GITIGNORE)
        except OSError as exc:
            raise StoreError(
                f"cannot create the thread store folder {self.directory}: "
                f"{exc.strerror or exc}; use a writable --store DIR",
                "unwritable",
            ) from None
        db = _connect(self.path)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(SCHEMA)
            search.migrate(db)  # the search index (store version 1), made for an older store
        except sqlite3.Error:
            db.close()
            raise
        return db

    def _open_readonly(self) -> sqlite3.Connection:
        """Read without writing anything: no folder, no WAL files, no schema created."""
        if not self.path.is_file():  # no store yet: a store without threads
            db = _connect(":memory:")
            db.executescript(SCHEMA)
            return db
        uri = self.path.resolve().as_uri()
        db = _connect(uri + "?mode=ro", uri=True)
        try:
            db.execute("SELECT count(*) FROM threads").fetchone()
        except sqlite3.OperationalError as exc:
            db.close()
            code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
            if code not in (sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY):
                raise
            # A read-only file system, and no -shm file beside the WAL database to read it
            # through: nobody can be writing it, so it can be read as an immutable file.
            db = _connect(uri + "?mode=ro&immutable=1", uri=True)
        return db

    # -- threads

    def _writer(self) -> Writer:
        if self._writes is None:
            raise StoreError(
                f"the thread store {self.path} was opened read-only; to run or continue threads "
                "use a writable --store DIR",
                "unwritable",
            )
        return self._writes

    def create(
        self,
        started: ThreadStarted,
        summary: ThreadSummary,
        *,
        graph_path: str,
        snapshot: dict[str, Any],
        owner: Owner | None = None,
    ) -> None:
        snapshot_text = json.dumps(snapshot, sort_keys=True)
        first = prepare_rows(started.thread_id, 1, (started,), summary, None)

        def job(db: sqlite3.Connection) -> None:
            now = time.time()
            db.execute(
                "INSERT INTO threads (id, graph, graph_hash, graph_path, snapshot, state, created,"
                " updated, workspace, lease_token, lease_pid, lease_host, lease_expires)"
                " VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?)",
                (
                    started.thread_id,
                    started.graph,
                    started.graph_hash,
                    graph_path,
                    snapshot_text,
                    now,
                    now,
                    started.workspace,
                    owner.token if owner else None,
                    owner.pid if owner else None,
                    owner.host if owner else None,
                    now + self.lease_seconds if owner else None,
                ),
            )
            first.write(db, now)
            search.index(db, started)

        self._writer().call(job, "saving a new thread")
        self._states[started.thread_id] = (1, str(summary.status))

    def append(self, thread_id: str, seq: int, event: Event, summary: ThreadSummary) -> StoredEvent:
        return self.append_future(thread_id, seq, event, summary).result()

    def append_future(
        self,
        thread_id: str,
        seq: int,
        event: Event,
        summary: ThreadSummary,
        before: Sequence[tuple[Event, ThreadSummary]] = (),
    ) -> Future[StoredEvent]:
        """Save the event (after the events `before`, numbered up to `seq - 1`, in the same
        transaction); the future resolves once it is committed: at once, on this thread, when no
        other thread is writing (writer.py).

        The JSON text is made here, by the caller, so a writer thread holds the GIL only briefly;
        the summary row is written once, with `summary` (rows.py)."""
        events = (*(item for item, _ in before), event)
        prepared = prepare_rows(
            thread_id, seq - len(before), events, summary, self._states.get(thread_id)
        )

        def job(db: sqlite3.Connection) -> StoredEvent:
            now = time.time()
            prepared.write(db, now)
            return StoredEvent(seq, now, event)

        future: Future[StoredEvent] = self._writer().submit(job, "saving an event")
        if future.done() and future.exception() is None:  # committed, on this thread
            self._states[thread_id] = (seq, str(summary.status))
        return future

    @guarded("reading a thread's events")
    def events(self, thread_id: str, after: int = 0) -> list[StoredEvent]:
        rows = self._db.execute(
            "SELECT seq, at, data FROM events WHERE thread_id = ? AND seq > ? ORDER BY seq",
            (thread_id, after),
        ).fetchall()
        if not rows and not after:
            self.thread(thread_id)  # raises ThreadNotFound
        try:
            return [
                StoredEvent(seq, at, event_from_dict(json.loads(data))) for seq, at, data in rows
            ]
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreError(
                f"the thread store {self.path} is damaged: an event of thread {thread_id} "
                f"cannot be read ({exc})",
                "damaged",
            ) from None

    @guarded("reading a thread's steps")
    def committed_roles(self, thread_id: str) -> list[str]:
        # json_extract reads the one field in C: decoding every event in Python to find it cost
        # a thread's result about as much per step as the step's own commit.
        rows = self._db.execute(
            "SELECT json_extract(data, '$.role') FROM events"
            " WHERE thread_id = ? AND type = 'StepCommitted' ORDER BY seq",
            (thread_id,),
        ).fetchall()
        return [role for (role,) in rows]

    @guarded("reading a thread")
    def thread(self, thread_id: str) -> ThreadRow:
        row = self._db.execute(
            f"SELECT {_ROW_COLUMNS} FROM threads WHERE id = ?", (thread_id,)
        ).fetchone()
        if row is None:
            # Accept a unique prefix (or suffix) of an id, as people copy the end of a ULID.
            # `%` and `_` are LIKE's wildcards: escaped, so `threads cancel %` matches nothing.
            text = thread_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            rows = self._db.execute(
                f"SELECT {_ROW_COLUMNS} FROM threads"
                " WHERE id LIKE ? ESCAPE '\\' OR id LIKE ? ESCAPE '\\'",
                (text + "%", "%" + text),
            ).fetchall()
            if len(rows) != 1 or not thread_id:
                raise ThreadNotFound(thread_id)
            row = rows[0]
        return _row(row)

    @guarded("listing threads")
    def threads(
        self, state: str | None = None, query: search.Query | None = None
    ) -> list[ThreadRow]:
        sql, args = search.select(self._db, _ROW_COLUMNS, query, state)  # filters and search
        return [_row(r) for r in self._db.execute(sql, args).fetchall()]

    @guarded("reading the forks")
    def forks(self) -> dict[str, dict[str, Any]]:
        # A partial index holds the ThreadForked rows alone: no cost to any other append.
        rows = self._db.execute(
            "SELECT thread_id, json_extract(data, '$.from_thread'), json_extract(data, "
            "'$.at_step') FROM events WHERE type = 'ThreadForked' ORDER BY thread_id, seq"
        ).fetchall()  # a fork of a fork holds its origin's ThreadForked too: the last counts
        return {tid: {"thread": origin, "step": step} for tid, origin, step in rows}

    @guarded("reading a thread's graph")
    def snapshot(self, thread_id: str) -> dict[str, Any]:
        row = self._db.execute("SELECT snapshot FROM threads WHERE id = ?", (thread_id,)).fetchone()
        return json.loads(row[0]) if row else {}

    # -- leases

    def acquire(self, thread_id: str, owner: Owner) -> None:
        def job(db: sqlite3.Connection) -> None:
            now = time.time()
            row = db.execute(
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
            db.execute(
                "UPDATE threads SET lease_token = ?, lease_pid = ?, lease_host = ?,"
                " lease_expires = ? WHERE id = ?",
                (owner.token, owner.pid, owner.host, now + self.lease_seconds, thread_id),
            )

        self._writer().call(job, "taking a thread's lease")

    def renew(self, thread_id: str, owner: Owner) -> None:
        def job(db: sqlite3.Connection) -> None:
            db.execute(
                "UPDATE threads SET lease_expires = ? WHERE id = ? AND lease_token = ?",
                (time.time() + self.lease_seconds, thread_id, owner.token),
            )

        self._writer().call(job, "renewing a thread's lease")

    def release(self, thread_id: str, owner: Owner) -> None:
        def job(db: sqlite3.Connection) -> None:
            db.execute(
                "UPDATE threads SET lease_token = NULL, lease_pid = NULL, lease_host = NULL,"
                " lease_expires = NULL WHERE id = ? AND lease_token = ?",
                (thread_id, owner.token),
            )

        self._writer().call(job, "releasing a thread's lease")

    def close(self) -> None:
        if self._writes is not None:
            self._writes.close()  # what is queued is committed first
        self._db.close()


def _row(values: tuple[Any, ...]) -> ThreadRow:
    return search.row_of(values)  # with its title and labels
