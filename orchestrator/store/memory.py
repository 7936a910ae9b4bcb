"""An in-memory event store, for `simulate()` and tests of routing."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import replace
from typing import Any

from ..core.events import Event, StepCommitted, ThreadForked, ThreadStarted, ThreadStatus
from ..core.state import ThreadSummary
from ..core.titles import ThreadQuery, inputs_text
from .base import Owner, Resolved, StoredEvent, StoreError, ThreadBusy, ThreadNotFound, ThreadRow


class MemoryStore:
    def __init__(self) -> None:
        self._events: dict[str, list[StoredEvent]] = {}
        self._rows: dict[str, ThreadRow] = {}
        self._snapshots: dict[str, dict[str, Any]] = {}
        self._leases: dict[str, Owner] = {}
        # Per thread, the summary, time and sequence number of the last append not yet folded
        # into its row.
        self._latest: dict[str, tuple[ThreadSummary, float, int]] = {}
        self._texts: dict[str, str] = {}  # per thread, its inputs' text, for a search

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
        self._events[started.thread_id] = []
        self._snapshots[started.thread_id] = snapshot
        self._rows[started.thread_id] = ThreadRow(
            started.thread_id,
            started.graph,
            started.graph_hash,
            graph_path,
            ThreadStatus.RUNNING,
            0,
            0.0,
            0,
            0,
            now,
            now,
            "",
            started.workspace,
            0,
            started.title,
            dict(started.labels),
        )
        self._texts[started.thread_id] = inputs_text(started.inputs)
        if owner is not None:
            self._leases[started.thread_id] = owner
        self.append(started.thread_id, 1, started, summary)

    def append(self, thread_id: str, seq: int, event: Event, summary: ThreadSummary) -> StoredEvent:
        log = self._events.get(thread_id)
        if log is None:
            raise ThreadNotFound(thread_id)
        if seq != len(log) + 1:
            raise ThreadBusy(
                f"thread {thread_id} was advanced by someone else (event {seq} exists)"
            )
        stored = StoredEvent(seq, time.time(), event)
        log.append(stored)
        # The summary row is made when it is read (`thread`, `threads`), not at every append:
        # a `dataclasses.replace` of a 14-field row cost a twentieth of an in-memory step.
        self._latest[thread_id] = (summary, stored.at, seq)
        return stored

    def append_future(
        self,
        thread_id: str,
        seq: int,
        event: Event,
        summary: ThreadSummary,
        before: Sequence[tuple[Event, ThreadSummary]] = (),
    ) -> Future[StoredEvent]:
        """`append` (after the events `before`), done at once: a future already resolved."""
        try:
            for n, (item, item_summary) in enumerate(before, seq - len(before)):
                self.append(thread_id, n, item, item_summary)
            return Resolved(self.append(thread_id, seq, event, summary))
        except StoreError as exc:  # ThreadBusy, ThreadNotFound: the caller's future says so
            return Resolved(error=exc)

    def events(self, thread_id: str, after: int = 0) -> list[StoredEvent]:
        if thread_id not in self._events:
            raise ThreadNotFound(thread_id)
        return self._events[thread_id][after:]

    def committed_roles(self, thread_id: str) -> list[str]:
        return [s.event.role for s in self.events(thread_id) if isinstance(s.event, StepCommitted)]

    def thread(self, thread_id: str) -> ThreadRow:
        if thread_id not in self._rows:
            raise ThreadNotFound(thread_id)
        latest = self._latest.pop(thread_id, None)
        if latest is not None:
            summary, at, seq = latest
            self._rows[thread_id] = replace(
                self._rows[thread_id],
                state=summary.status,
                steps=summary.steps,
                cost_usd=summary.cost_usd,
                input_tokens=summary.input_tokens,
                output_tokens=summary.output_tokens,
                reason=summary.reason,
                updated=at,
                seq=seq,
            )
        return self._rows[thread_id]

    def threads(
        self, state: str | None = None, query: ThreadQuery | None = None
    ) -> list[ThreadRow]:
        rows = sorted((self.thread(thread_id) for thread_id in self._rows), key=lambda r: r.id)
        query = (query or ThreadQuery()).narrowed(state)
        return [r for r in rows if query.matches(r, self._texts.get(r.id, ""))]

    def forks(self) -> dict[str, dict[str, Any]]:
        return {
            tid: {"thread": s.event.from_thread, "step": s.event.at_step}
            for tid, stored in self._events.items()
            for s in stored
            if isinstance(s.event, ThreadForked)
        }

    def snapshot(self, thread_id: str) -> dict[str, Any]:
        return self._snapshots.get(thread_id, {})

    def acquire(self, thread_id: str, owner: Owner) -> None:
        self._leases[thread_id] = owner

    def renew(self, thread_id: str, owner: Owner) -> None:
        pass

    def release(self, thread_id: str, owner: Owner) -> None:
        if self._leases.get(thread_id) == owner:
            del self._leases[thread_id]

    def close(self) -> None:
        pass
