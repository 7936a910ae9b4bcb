"""The SQLite store's writer thread: every write of a process, group-committed off the event loop.

A step's events used to be committed by the thread that ran the event loop, so each `COMMIT` (and
each `BEGIN IMMEDIATE` that waited for another process) stalled every other thread's network I/O.
Now a store hands its writes to one `Writer`: a thread with its own connection that takes every
write waiting in its queue, runs each inside a SAVEPOINT of one `BEGIN IMMEDIATE ... COMMIT`, and
only then resolves each write's future. So:

- a write is reported done only once its transaction is committed (durability is unchanged: the
  runner awaits an event's future before the state moves on);
- writes of many threads waiting at once share one commit (group commit), and a write that fails
  (a sequence number already taken: `ThreadBusy`) is undone alone, by its savepoint;
- a commit that fails (a full disk) fails every write of the batch, none of which is then saved.

The event loop awaits a write through `asyncio.wrap_future`; synchronous callers block on it.
"""

from __future__ import annotations

import contextlib
import os
import queue
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

# The most writes one transaction takes; more wait for the next (a bound on a batch's latency).
MAX_BATCH = 256

Job = Callable[[sqlite3.Connection], Any]
ErrorFor = Callable[[sqlite3.Error, str], Exception]


@dataclass(frozen=True)
class _Write:
    job: Job
    doing: str  # what the write is, for the message of a StoreError ("saving an event")
    future: Future[Any]


class Writer:
    """One thread owning one write connection; started by the first write, stopped by close()."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], error_for: ErrorFor):
        self._connect = connect
        self._error_for = error_for
        self._queue: queue.SimpleQueue[_Write | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._pid = 0

    def submit(self, job: Job, doing: str) -> Future[Any]:
        """Queue `job(connection)`; its future resolves once its transaction is committed.

        The future cannot be cancelled: a write once asked for is carried out (or fails), so a
        caller that is interrupted while waiting can still learn what became of it.
        """
        future: Future[Any] = Future()
        future.set_running_or_notify_cancel()
        with self._lock:
            if self._closed:
                raise RuntimeError("the thread store is closed")
            if self._thread is None or self._pid != os.getpid():
                # First write, or a forked child (which has the parent's object but no thread).
                self._queue = queue.SimpleQueue()
                self._pid = os.getpid()
                self._thread = threading.Thread(
                    target=self._run,
                    args=(self._queue,),
                    name="orchestrator-store-writer",
                    daemon=True,
                )
                self._thread.start()
            self._queue.put(_Write(job, doing, future))
        return future

    def call(self, job: Job, doing: str) -> Any:
        """Run `job` on the writer and wait for its commit (for callers off the event loop)."""
        return self.submit(job, doing).result()

    def close(self) -> None:
        """Commit what is queued, then stop the thread."""
        with self._lock:
            self._closed = True
            thread = self._thread
            if thread is not None:
                self._queue.put(None)
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    # -- the thread

    def _run(self, jobs: queue.SimpleQueue[_Write | None]) -> None:
        try:
            db = self._connect()
        except sqlite3.Error as exc:
            self._fail_all(jobs, exc)
            return
        try:
            stop = False
            while not stop:
                first = jobs.get()
                if first is None:
                    break
                batch = [first]
                while len(batch) < MAX_BATCH:
                    try:
                        more = jobs.get_nowait()
                    except queue.Empty:
                        break
                    if more is None:
                        stop = True
                        break
                    batch.append(more)
                self._commit(db, batch)
        finally:
            db.close()

    def _fail_all(self, jobs: queue.SimpleQueue[_Write | None], exc: sqlite3.Error) -> None:
        """The connection could not be opened: every write, now and later, fails with why."""
        while True:
            write = jobs.get()
            if write is None:
                return
            write.future.set_exception(self._error_for(exc, write.doing))

    def _commit(self, db: sqlite3.Connection, batch: list[_Write]) -> None:
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            for write in batch:
                write.future.set_exception(self._error_for(exc, write.doing))
            return
        done: list[tuple[_Write, Any]] = []
        failed: list[tuple[_Write, BaseException]] = []
        lost: sqlite3.Error | None = None  # the transaction itself was rolled back by SQLite
        for write in batch:
            if lost is not None:
                failed.append((write, self._error_for(lost, write.doing)))
                continue
            try:
                db.execute("SAVEPOINT write")
                result = write.job(db)
                db.execute("RELEASE write")
            except BaseException as exc:  # handed to the writer's caller, whatever it is
                if isinstance(exc, sqlite3.Error) and not db.in_transaction:
                    lost = exc  # a full disk: SQLite undid the whole transaction
                    failed.append((write, self._error_for(exc, write.doing)))
                    continue
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK TO write")
                    db.execute("RELEASE write")
                error = self._error_for(exc, write.doing) if isinstance(exc, sqlite3.Error) else exc
                failed.append((write, error))
            else:
                done.append((write, result))
        if lost is not None:
            # What seemed done was undone with the transaction: it failed too.
            failed.extend((write, self._error_for(lost, write.doing)) for write, _ in done)
            done = []
        elif done:
            try:
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")  # a failed COMMIT leaves the transaction open
                failed.extend((write, self._error_for(exc, write.doing)) for write, _ in done)
                done = []
        else:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        for write, result in done:
            write.future.set_result(result)
        for write, error in failed:
            write.future.set_exception(error)
