"""The SQLite store's writes: committed on the caller's thread when nobody else is writing,
group-committed by a writer thread when several threads are.

Every write of a process goes through one `Writer`, which owns one write connection. A write is
carried out one of two ways:

- **Alone, on the caller's thread** (the common case: one event loop advancing its threads):
  when no commit is under way and no write is waiting, the write takes the connection and runs
  `BEGIN IMMEDIATE; job; COMMIT` at once, and `submit` returns a future that is already done.
  No thread hand-off in either direction: the runner's `await` of the event's future does not
  even go through the event loop. The connection waits for no lock on this path (its busy
  timeout is 0 here): if another *process* holds the database's write lock, the write is handed
  to the writer thread instead, which waits for it. So the caller is never held up for longer
  than its own small transaction.
- **Grouped, on the writer thread**, when a write arrives while another thread's commit is
  under way (or writes are already waiting): it is queued, and the writer thread, once the
  connection is free, takes every write waiting at that moment and commits them in one
  `BEGIN IMMEDIATE ... COMMIT`, each inside a SAVEPOINT, then resolves their futures. Writes of
  many threads waiting at once share one commit (group commit).

Either way:

- a write is reported done only once its transaction is committed (durability is unchanged: the
  runner waits for an event's future before the state moves on; with `synchronous=NORMAL` in WAL
  mode a committed transaction survives the process being killed);
- writes are committed in the order they were submitted (a write never overtakes one that is
  waiting: it then queues behind it);
- a write that fails (a sequence number already taken: `ThreadBusy`) is undone alone: by
  rolling back its own transaction, or its savepoint in a group;
- a group whose transaction fails as a whole (one write's rows do not fit on a full disk, and
  SQLite undoes the whole transaction; or its COMMIT fails) does not fail the others with it:
  each of its other writes is committed again alone, in order, so a write fails (with the
  `StoreError` that names the cause) only for a reason of its own, on the thread that asked for it.

WAL checkpoints (copying the log back into the database file, with an fsync) are not left to
SQLite's automatic checkpoint, which would run them inside the COMMIT of whichever write crossed
the threshold, on the caller's thread: every `CHECKPOINT_EVERY` commits the writer thread runs a
PASSIVE checkpoint on a connection of its own, which never blocks a writer, then copies the few
pages committed meanwhile through the write connection, holding it as a group commit does, so
that the next write starts the log over (`_restart_log`, once the log holds more than
`RESTART_FRAMES` pages): the log stays under about 16 MB instead of growing for as long as the
process writes.

The event loop awaits a queued write through `asyncio.wrap_future`; synchronous callers block.
"""

from __future__ import annotations

import collections
import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from .base import Resolved

# The most writes one grouped transaction takes; more wait for the next (a bound on latency).
MAX_BATCH = 256
# Commits between two checkpoints. SQLite's own default is a checkpoint once the log holds 1,000
# pages; a step's transaction writes about 3 to 4 (the event's rows, the thread's row, an index).
CHECKPOINT_EVERY = 256
# Pages in the log above which a checkpoint also lets it start over (`_restart_log`): 16 MB.
RESTART_FRAMES = 4096

Job = Callable[[sqlite3.Connection], Any]
ErrorFor = Callable[[sqlite3.Error, str], Exception]


@dataclass(frozen=True)
class _Write:
    job: Job
    doing: str  # what the write is, for the message of a StoreError ("saving an event")
    future: Future[Any]


def _busy(exc: sqlite3.Error) -> bool:
    """Another connection holds the write lock (SQLITE_BUSY, or LOCKED, with its extended codes)."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    return code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


class Writer:
    """One write connection, used by one thread at a time; see the module's docstring."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], error_for: ErrorFor):
        self._connect = connect
        self._error_for = error_for
        self._mutex = threading.Lock()  # guards everything below
        self._wake = threading.Condition(self._mutex)
        self._pending: collections.deque[_Write] = collections.deque()
        self._in_use = False  # a thread is using the connection (a commit under way)
        self._db: sqlite3.Connection | None = None
        self._patience_ms = 0  # the connection's own busy timeout: what the writer thread waits
        self._thread: threading.Thread | None = None
        self._closed = False
        self._commits = 0  # since the last checkpoint
        self._checkpoint_due = False
        self._wanted = False  # the writer thread waits for the connection (see _restart_log)
        self._pid = os.getpid()
        self._forsaken: list[sqlite3.Connection] = []  # a parent's connections, in a fork

    # -- the callers' side

    def submit(self, job: Job, doing: str) -> Future[Any]:
        """Run `job(connection)` in a transaction; the future resolves once it is committed.

        Done at once (on this thread) when nobody else is writing; otherwise queued for the
        writer thread. The future cannot be cancelled: a write once asked for is carried out (or
        fails), so a caller that is interrupted while waiting can still learn what became of it.
        """
        with self._mutex:
            if self._closed:
                raise RuntimeError("the thread store is closed")
            if self._pid != os.getpid():
                self._after_fork()
            if self._in_use or self._pending or self._wanted:
                return self._queue(job, doing)
            self._in_use = True  # the connection is ours until the commit is over
        alone: Future[Any] | None = None
        handed_over = False
        try:
            alone = self._commit_alone(job, doing)
            handed_over = alone is None
        finally:
            with self._mutex:
                self._in_use = False
                if handed_over:  # another process holds the write lock: the thread waits for it
                    alone = self._queue(job, doing, first=True)
                if self._pending or self._closed or self._checkpoint_due or self._wanted:
                    self._wake.notify_all()
        assert alone is not None
        return alone

    def call(self, job: Job, doing: str) -> Any:
        """Run `job` and wait for its commit (for callers off the event loop)."""
        return self.submit(job, doing).result()

    def close(self) -> None:
        """Commit what is queued, stop the thread, close the connection."""
        with self._mutex:
            self._closed = True
            self._wake.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        with self._mutex:
            while self._in_use:  # a commit on another caller's thread: let it finish
                self._wake.wait()
            db, self._db = self._db, None
        if db is not None:
            db.close()

    def _queue(self, job: Job, doing: str, *, first: bool = False) -> Future[Any]:
        """Queue a write for the writer thread (the mutex is held)."""
        future: Future[Any] = Future()
        future.set_running_or_notify_cancel()
        write = _Write(job, doing, future)
        if first:
            self._pending.appendleft(write)  # it was submitted before those queued meanwhile
        else:
            self._pending.append(write)
        self._start_thread()
        self._wake.notify_all()
        return future

    def _start_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="orchestrator-store-writer", daemon=True
            )
            self._thread.start()

    def _after_fork(self) -> None:
        """A forked child has the parent's object but none of its threads, and must not use the
        parent's connection (SQLite forbids it); it is kept, unclosed, so that the garbage
        collector does not close it either."""
        self._pid = os.getpid()
        self._thread = None
        self._in_use = False
        self._wanted = False
        self._pending = collections.deque()
        if self._db is not None:
            self._forsaken.append(self._db)
        self._db = None

    def _connection(self) -> sqlite3.Connection:
        """The write connection, opened by the first write. Its busy timeout is 0, so that a
        write on a caller's thread never waits for another process; the writer thread sets it
        back to the connection's own timeout while it commits."""
        if self._db is None:
            db = self._connect()
            try:
                self._patience_ms = int(db.execute("PRAGMA busy_timeout").fetchone()[0])
                db.execute("PRAGMA busy_timeout = 0")
                # Checkpoints run on the writer thread, not inside a caller's COMMIT.
                db.execute("PRAGMA wal_autocheckpoint = 0")
            except sqlite3.Error:
                db.close()
                raise
            self._db = db
        return self._db

    def _commit_alone(self, job: Job, doing: str) -> Future[Any] | None:
        """One write in its own transaction, on the caller's thread (the connection is ours).

        A done future, or None when another process holds the write lock (the caller then hands
        the write to the writer thread, which waits for the lock)."""
        try:
            db = self._connection()
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            if _busy(exc):
                return None
            return Resolved(error=self._error_for(exc, doing))
        try:
            result = job(db)
        except BaseException as exc:  # handed to the caller, whatever it is
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")  # undoes this write alone: it is the only one
            error = self._error_for(exc, doing) if isinstance(exc, sqlite3.Error) else exc
            return Resolved(error=error)
        try:
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")  # a failed COMMIT leaves the transaction open
            return Resolved(error=self._error_for(exc, doing))
        self._committed()
        return Resolved(result)

    def _committed(self) -> None:
        """Count a commit; every CHECKPOINT_EVERY, ask the writer thread for a checkpoint."""
        self._commits += 1
        if self._commits >= CHECKPOINT_EVERY:
            self._commits = 0
            with self._mutex:
                self._checkpoint_due = True
                self._start_thread()

    # -- the writer thread

    def _run(self) -> None:
        checkpointer: sqlite3.Connection | None = None
        try:
            while True:
                with self._mutex:
                    while (self._in_use or not self._pending) and not self._checkpoint_due:
                        if self._closed and not self._pending:
                            return
                        self._wake.wait()
                    checkpoint, self._checkpoint_due = self._checkpoint_due, False
                    batch: list[_Write] = []
                    if not self._in_use:
                        while self._pending and len(batch) < MAX_BATCH:
                            batch.append(self._pending.popleft())
                        self._in_use = bool(batch)
                if batch:
                    try:
                        self._commit_batch(batch)
                    finally:
                        with self._mutex:
                            self._in_use = False
                            self._wake.notify_all()
                if checkpoint:
                    checkpointer = self._checkpoint(checkpointer)
        finally:
            if checkpointer is not None:
                checkpointer.close()

    def _checkpoint(self, db: sqlite3.Connection | None) -> sqlite3.Connection | None:
        """A PASSIVE checkpoint on the thread's own connection: it copies what it can of the
        log into the database and never waits for, or blocks, a writer or a reader. Then the
        few pages written meanwhile are copied through the write connection (`_restart_log`)."""
        try:
            db = db or self._connect()
            _, frames, _ = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except Exception:  # noqa: BLE001  (a failing disk: the next write reports it)
            return db  # the log is kept meanwhile, and the next checkpoint tries again
        if frames > RESTART_FRAMES:
            self._restart_log()
        return db

    def _restart_log(self) -> None:
        """Copy the last pages of the log through the write connection, with no write between.

        SQLite starts the log over (writes it again from its beginning) only when a write
        begins with every page of the log copied into the database; the writes committed while
        the checkpoint above ran leave it a few pages short, every time, and the log would grow
        for as long as the process writes (200 MB after 10,000 steps). So the thread takes the
        connection as a group commit does (a write arriving meanwhile queues, the event loop is
        not held up) for a second checkpoint of those few pages: the next write restarts the
        log. That second checkpoint holds up the next write for its fsyncs (milliseconds), so
        it is made only once the log holds more than RESTART_FRAMES pages: the log's file stays
        under about that size plus the writes between two checkpoints."""
        with self._mutex:
            self._wanted = True
            while self._in_use:
                self._wake.wait()
            self._wanted = False
            if self._closed or self._pid != os.getpid():
                return
            self._in_use = True
        try:
            self._connection().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except Exception:  # noqa: BLE001  (as above: the next checkpoint tries again)
            pass
        finally:
            with self._mutex:
                self._in_use = False
                self._wake.notify_all()

    def _commit_batch(self, batch: list[_Write]) -> None:
        """Commit the writes in one transaction, each in a savepoint, and resolve their futures.

        A write whose job fails (`ThreadBusy`) is undone alone. When the transaction as a whole
        fails (one write's rows do not fit on a full disk: SQLite undoes the whole transaction,
        or the COMMIT fails), the other writes are not failed with it: each is committed again
        alone, so that every write fails only for a reason of its own."""
        try:
            db = self._connection()
            db.execute(f"PRAGMA busy_timeout = {self._patience_ms}")  # wait for other processes
            try:
                db.execute("BEGIN IMMEDIATE")
            finally:
                db.execute("PRAGMA busy_timeout = 0")
        except sqlite3.Error as exc:
            for write in batch:
                write.future.set_exception(self._error_for(exc, write.doing))
            return
        except Exception as exc:  # not SQLite's: still the writes' answer, and the thread lives
            for write in batch:
                write.future.set_exception(exc)
            return
        done: list[tuple[_Write, Any]] = []
        own: list[tuple[_Write, BaseException]] = []  # failed for a reason of their own
        whole: sqlite3.Error | None = None  # the transaction itself failed
        for write in batch:
            try:
                db.execute("SAVEPOINT write")
                result = write.job(db)
                db.execute("RELEASE write")
            except BaseException as exc:  # handed to the writer's caller, whatever it is
                if isinstance(exc, sqlite3.Error) and not db.in_transaction:
                    whole = exc  # a full disk: SQLite undid the whole transaction
                    break
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK TO write")
                    db.execute("RELEASE write")
                error = self._error_for(exc, write.doing) if isinstance(exc, sqlite3.Error) else exc
                own.append((write, error))
            else:
                done.append((write, result))
        if whole is None and done:
            try:
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                whole = exc
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")  # a failed COMMIT leaves the transaction open
            else:
                self._committed()
        elif db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        for write, error in own:
            write.future.set_exception(error)
        if whole is None:
            for write, result in done:
                write.future.set_result(result)
            return
        failed = {id(write) for write, _ in own}
        again = [write for write in batch if id(write) not in failed]
        if len(batch) == 1:
            for write in again:
                write.future.set_exception(self._error_for(whole, write.doing))
            return
        for write in again:  # in the order they were submitted
            self._commit_batch([write])
