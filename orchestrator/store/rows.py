"""The rows a write of events makes in the SQLite store: each event's row, and the thread's
summary row once per transaction.

A write is prepared on the caller's thread (`prepare`: every event encoded to its JSON text
once, nothing else) and carried out inside a transaction (`Rows.write`), on whichever thread
commits it (writer.py). Events written together (a step's `StepStarted` with its result) share
one UPDATE of the summary row, with the last event's summary: the row is read only once the
transaction is committed, so what it held in between was never seen by anyone.

Optimistic concurrency: an event's row is keyed by (thread, seq), so a sequence number already
taken fails the INSERT; the UPDATE matches the summary row only if its `seq` is still the one
before this write's first event. Either way the write fails with `ThreadBusy` and its
transaction (or savepoint) is undone.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.events import Event
from ..core.state import ThreadSummary
from .base import ThreadBusy

# `json.dumps(data, ensure_ascii=False)` builds a new encoder at every call, through
# `JSONEncoder.encode` and `iterencode` in Python. `_encode` calls the C encoder those make with
# the same arguments (a fresh one per call, as `dumps` does, so that each call has its own record
# of the containers being encoded for the check of circular references), for the same text.
_ENCODER = json.JSONEncoder(ensure_ascii=False)
_make_c_encoder = getattr(json.encoder, "c_make_encoder", None)


def _encode(data: dict[str, Any]) -> str:
    if _make_c_encoder is None:  # a Python without the C accelerator
        return _ENCODER.encode(data)
    c_encoder = _make_c_encoder(
        {}, _ENCODER.default, json.encoder.encode_basestring, None, ": ", ", ", False, False, True
    )
    return "".join(c_encoder(data, 0))


def encode(event: Event) -> tuple[str, str]:
    """The event's type and JSON text: the text of `json.dumps(event.to_dict())`.

    An event class that keeps `Event.to_dict` is encoded from its fields as they are (a frozen
    dataclass's instance dictionary holds exactly its fields, in order): the C encoder writes a
    StrEnum member as its text, which is what `to_dict` converts it to, so the copy that
    `to_dict` makes for other readers is not needed here."""
    cls = type(event)
    if cls.to_dict is Event.to_dict:
        return cls.__name__, _encode({**vars(event), "type": cls.__name__})
    data = event.to_dict()
    return data["type"], _encode(data)


# The summary row, with and without its state: `state` is indexed (`threads list --state`), and
# SQLite rewrites an indexed column's entry whenever the UPDATE sets it, changed or not.
_UPDATE = (
    "UPDATE threads SET {}steps = ?, cost_usd = ?, input_tokens = ?, output_tokens = ?,"
    " reason = ?, updated = ?, seq = ? WHERE id = ? AND seq = ?"
)
_UPDATE_ALL = _UPDATE.format("state = ?, ")
_UPDATE_SAME_STATE = _UPDATE.format("")
_INSERT = "INSERT INTO events (thread_id, seq, at, type, data) VALUES (?, ?, ?, ?, ?)"


@dataclass(frozen=True)
class Rows:
    """Events numbered `first`, `first + 1`... and the summary after the last of them.

    `same_state`: this process committed event `first - 1` of the thread with the state the
    summary has, so the state is left out of the UPDATE. The row still holds it: `WHERE seq =
    first - 1` matches only if nobody wrote the thread since that commit (any write of another
    process that changes the state appends an event, which moves `seq` on)."""

    thread_id: str
    first: int
    events: tuple[tuple[str, str], ...]  # (type, JSON text), in order
    summary: ThreadSummary
    same_state: bool

    @property
    def last(self) -> int:
        return self.first + len(self.events) - 1

    def write(self, db: sqlite3.Connection, now: float) -> None:
        """INSERT every event, then UPDATE the summary row once; ThreadBusy if taken."""
        thread_id = self.thread_id
        for seq, (kind, text) in enumerate(self.events, self.first):
            try:
                db.execute(_INSERT, (thread_id, seq, now, kind, text))
            except sqlite3.IntegrityError:
                raise ThreadBusy(
                    f"thread {thread_id} was advanced by another process (event {seq} already "
                    "exists)"
                ) from None
        summary = self.summary
        rest = (
            summary.steps,
            summary.cost_usd,
            summary.input_tokens,
            summary.output_tokens,
            summary.reason,
            now,
            self.last,
            thread_id,
            self.first - 1,
        )
        if self.same_state:
            cur = db.execute(_UPDATE_SAME_STATE, rest)
        else:
            cur = db.execute(_UPDATE_ALL, (str(summary.status), *rest))
        if cur.rowcount != 1:
            raise ThreadBusy(f"thread {thread_id} was advanced by another process")


def prepare(
    thread_id: str,
    first: int,
    events: Sequence[Event],
    summary: ThreadSummary,
    last_written: tuple[int, str] | None,
) -> Rows:
    """The rows of `events` (numbered from `first`), with `summary` after the last of them.

    `last_written`: the (seq, state) this process last committed to the thread's summary row."""
    state = str(summary.status)
    return Rows(
        thread_id,
        first,
        tuple(encode(event) for event in events),
        summary,
        last_written == (first - 1, state),
    )
