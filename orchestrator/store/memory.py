"""An in-memory event store, for `simulate()` and tests of routing."""

from __future__ import annotations

import time
from typing import Any

from ..engine import Event, ThreadStarted
from .base import Owner, StoredEvent, ThreadBusy, ThreadNotFound, ThreadRow, summary_delta


class MemoryStore:
    def __init__(self) -> None:
        self._events: dict[str, list[StoredEvent]] = {}
        self._rows: dict[str, ThreadRow] = {}
        self._snapshots: dict[str, dict[str, Any]] = {}
        self._leases: dict[str, Owner] = {}

    def create(
        self,
        started: ThreadStarted,
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
            "running",
            0,
            0.0,
            0,
            0,
            now,
            now,
            "",
            started.workspace,
            0,
        )
        if owner is not None:
            self._leases[started.thread_id] = owner
        self.append(started.thread_id, 1, started)

    def append(self, thread_id: str, seq: int, event: Event) -> StoredEvent:
        log = self._events.get(thread_id)
        if log is None:
            raise ThreadNotFound(thread_id)
        if seq != len(log) + 1:
            raise ThreadBusy(
                f"thread {thread_id} was advanced by someone else (event {seq} exists)"
            )
        stored = StoredEvent(seq, time.time(), event)
        log.append(stored)
        row = self._rows[thread_id]
        d = summary_delta(event)
        self._rows[thread_id] = ThreadRow(
            row.id,
            row.graph,
            row.graph_hash,
            row.graph_path,
            d.get("state", row.state),
            row.steps + d.get("steps", 0),
            row.cost_usd + d["cost_usd"],
            row.input_tokens + d["input_tokens"],
            row.output_tokens + d["output_tokens"],
            row.created,
            stored.at,
            d.get("reason", row.reason),
            row.workspace,
            seq,
        )
        return stored

    def events(self, thread_id: str) -> list[StoredEvent]:
        if thread_id not in self._events:
            raise ThreadNotFound(thread_id)
        return list(self._events[thread_id])

    def thread(self, thread_id: str) -> ThreadRow:
        if thread_id not in self._rows:
            raise ThreadNotFound(thread_id)
        return self._rows[thread_id]

    def threads(self, state: str | None = None) -> list[ThreadRow]:
        rows = sorted(self._rows.values(), key=lambda r: r.id)
        return [r for r in rows if state is None or r.state == state]

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
