"""The EventStore protocol and what every store shares.

A store keeps, per thread, an append-only list of events numbered 1, 2, 3... Appending names the
sequence number it expects to write; a store refuses a number that is already taken
(`ThreadBusy`), so two processes can never both advance one thread (optimistic concurrency). On
top of that a lease names the process currently advancing a thread, so the loser learns early
and clearly; a lease whose process is dead, or that expired, is taken over.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ..core.events import Event, ThreadStarted, ThreadStatus
from ..core.state import ThreadSummary
from ..core.titles import LABEL_VALUE_LENGTH, ThreadQuery, one_line
from ..errors import StoreError as StoreError  # the store's errors, with their family
from ..errors import ThreadBusy as ThreadBusy
from ..errors import ThreadNotFound as ThreadNotFound

T = TypeVar("T")


def default_store_dir(store: str | os.PathLike[str] | None = None) -> Path:
    """`--store DIR`, else `$ORCHESTRATOR_HOME`, else `./.orchestrator/`."""
    if store:
        return Path(store)
    home = os.environ.get("ORCHESTRATOR_HOME")
    return Path(home) if home else Path.cwd() / ".orchestrator"


@dataclass(frozen=True)
class StoredEvent:
    seq: int
    at: float  # unix time, recorded by the store
    event: Event


@dataclass(frozen=True)
class ThreadRow:
    id: str
    graph: str
    graph_hash: str
    graph_path: str
    state: ThreadStatus
    steps: int
    cost_usd: float
    input_tokens: int
    output_tokens: int
    created: float
    updated: float
    reason: str
    workspace: str
    seq: int  # number of events
    # From the thread's ThreadStarted event (core/titles.py); empty for a thread started before
    # titles existed.
    title: str = ""
    labels: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            # Made safe again: a row read from a store or a memo that someone else wrote.
            "title": one_line(self.title),
            "labels": {k: one_line(str(v), LABEL_VALUE_LENGTH) for k, v in self.labels.items()},
            "graph": self.graph,
            "state": self.state,
            "steps": self.steps,
            "cost_usd": round(self.cost_usd, 6),
            "created": self.created,
            "updated": self.updated,
            "reason": self.reason,
            "workspace": self.workspace,
        }


@dataclass(frozen=True)
class Owner:
    """Who holds a thread's lease: this process."""

    token: str
    pid: int
    host: str

    @classmethod
    def this_process(cls, token: str) -> Owner:
        return cls(token, os.getpid(), socket.gethostname())


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A killed child that its parent has not reaped yet is a zombie: dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        return True


class Resolved(Future[T]):
    """A future that is done when made: what a store that writes at once returns from
    `append_future`, without the lock and condition a `Future` sets up (a third of an
    in-memory append's cost). Only the methods of a done future are offered."""

    def __init__(self, value: T | None = None, error: BaseException | None = None):
        # No Future.__init__: nothing ever waits on a future that is already done.
        self._value = value
        self._error = error

    def done(self) -> bool:
        return True

    def cancelled(self) -> bool:
        return False

    def running(self) -> bool:
        return False

    def result(self, timeout: float | None = None) -> T:
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]

    def exception(self, timeout: float | None = None) -> BaseException | None:
        return self._error

    def add_done_callback(self, fn: Callable[[Future[T]], object]) -> None:
        fn(self)


class EventStore(Protocol):
    """Events plus a summary row per thread. The summary is computed by the caller from the
    folded state (`ThreadState.summary()`), so a store knows no rule of its own."""

    def create(
        self,
        started: ThreadStarted,
        summary: ThreadSummary,
        *,
        graph_path: str,
        snapshot: dict[str, Any],
        owner: Owner | None = None,
    ) -> None: ...

    def append(
        self, thread_id: str, seq: int, event: Event, summary: ThreadSummary
    ) -> StoredEvent: ...

    def append_future(
        self,
        thread_id: str,
        seq: int,
        event: Event,
        summary: ThreadSummary,
        before: Sequence[tuple[Event, ThreadSummary]] = (),
    ) -> Future[StoredEvent]:
        """`append` without waiting: the future resolves once the event is committed (or fails
        as `append` would). The events `before` (numbered up to `seq - 1`) are written first,
        in the same transaction: all are saved or none. The SQLite store commits on the
        caller's thread when no other thread is writing (the future is then done at once), and
        otherwise on its writer thread, so the event loop never waits for another's commit."""
        ...

    def events(self, thread_id: str, after: int = 0) -> list[StoredEvent]:
        """The thread's events with a sequence number above `after`, in order."""
        ...

    def committed_roles(self, thread_id: str) -> list[str]:
        """The roles of the thread's committed steps, in order: its path (`core.steps.path_of`)
        without `$END`, read without decoding every event."""
        ...

    def thread(self, thread_id: str) -> ThreadRow: ...

    def threads(
        self, state: str | None = None, query: ThreadQuery | None = None
    ) -> list[ThreadRow]:
        """The threads, by id; `query` filters them (graph, labels, a text search)."""
        ...

    def forks(self) -> dict[str, dict[str, Any]]:
        """Thread id -> {thread, step}: each fork in the store and where it was forked from
        (its ThreadForked event: docs/format.md section 20)."""
        ...

    def snapshot(self, thread_id: str) -> dict[str, Any]: ...

    def acquire(self, thread_id: str, owner: Owner) -> None: ...

    def renew(self, thread_id: str, owner: Owner) -> None: ...

    def release(self, thread_id: str, owner: Owner) -> None: ...

    def close(self) -> None: ...
