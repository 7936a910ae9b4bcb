"""The rows a write makes (store/rows.py): every event's JSON text is the text of its
`to_dict()`, whichever way it is encoded; events written together update the summary row once,
with the last event's summary; a taken sequence number still fails the whole write.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from orchestrator.core.events import (
    Event,
    StepCommitted,
    StepStarted,
    SuspendKind,
    ThreadCompleted,
    ThreadStarted,
    ThreadStatus,
    ThreadSuspended,
)
from orchestrator.core.state import ThreadSummary
from orchestrator.store.base import ThreadBusy
from orchestrator.store.rows import encode
from orchestrator.store.sqlite import SqliteStore

EVENTS: list[Event] = [
    ThreadStarted(thread_id="t", graph="g", graph_hash="h", inputs={"a": [1, "é"]}, workspace="."),
    ThreadStarted(
        thread_id="t", graph="g", graph_hash="h", inputs={}, workspace=".", models_file={"p": 1}
    ),
    StepStarted(1, "writer", 'Write <about> "x" – ü', "$START", "_"),
    StepCommitted(1, "writer", "draft", {"$status": "draft", "n": 1.5}, "body", "reply"),
    ThreadSuspended("stopped", SuspendKind.LIMIT),
    ThreadCompleted("done", "done", "success"),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__)
def test_an_event_is_encoded_as_its_to_dict(event: Event) -> None:
    data = event.to_dict()
    kind, text = encode(event)
    assert kind == data["type"]
    assert text == json.dumps(data, ensure_ascii=False)


def summary(steps: int, status: ThreadStatus = ThreadStatus.RUNNING) -> ThreadSummary:
    return ThreadSummary(status, steps, 0.25 * steps, 10 * steps, 5 * steps, f"at {steps}")


def test_events_written_together_update_the_summary_row_once(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    writer = store._writes
    assert writer is not None
    statements: list[str] = []
    connect = writer._connect

    def traced() -> sqlite3.Connection:
        db = connect()
        db.set_trace_callback(statements.append)
        return db

    writer._connect = traced
    store.create(EVENTS[0], summary(0), graph_path="", snapshot={})  # type: ignore[arg-type]
    statements.clear()
    store.append_future(
        "t",
        3,
        EVENTS[3],
        summary(1, ThreadStatus.WAITING),
        ((EVENTS[2], summary(0)),),
    ).result()
    assert sum(s.startswith("INSERT INTO events") for s in statements) == 2
    assert sum(s.startswith("UPDATE threads") for s in statements) == 1
    row = store.thread("t")
    assert (row.seq, row.steps, row.state, row.reason) == (3, 1, "waiting", "at 1")
    assert (row.cost_usd, row.input_tokens, row.output_tokens) == (0.25, 10, 5)
    # The same state as this process last wrote: the indexed state is left out.
    statements.clear()
    store.append("t", 4, StepStarted(2, "writer", "again", "writer", "draft"), summary(1))
    store.append("t", 5, StepStarted(3, "writer", "again", "writer", "draft"), summary(1))
    updates = [s for s in statements if s.startswith("UPDATE threads")]
    assert "state" in updates[0] and "state" not in updates[1]
    assert store.thread("t").state == "running"
    # Event 6 is free but 5 is taken: the write fails whole, the summary row as it was.
    with pytest.raises(ThreadBusy):
        store.append_future("t", 6, EVENTS[5], summary(9), ((EVENTS[2], summary(9)),)).result()
    assert store.thread("t").seq == 5 and [e.seq for e in store.events("t")] == [1, 2, 3, 4, 5]
    store.close()


def test_the_c_encoder_called_directly_writes_what_dumps_writes() -> None:
    """`rows._encode` calls json's C encoder without `JSONEncoder.encode`: same text, and the
    same refusals (a circular structure; a value JSON cannot hold), as `json.dumps`."""
    from orchestrator.store.rows import _encode

    tricky: dict[str, Any] = {
        "text": 'é "quoted" \n\t\u2028 \x00 </script>',
        "numbers": [0, -1, 2**70, 1.5, 1e300, float("inf"), float("-inf")],
        "nested": {"a": [], "b": {}, "c": [None, True, False]},
        "": "empty key",
    }
    assert _encode(tricky) == json.dumps(tricky, ensure_ascii=False)
    loop: dict[str, Any] = {}
    loop["self"] = loop
    for encode_ in (_encode, lambda d: json.dumps(d, ensure_ascii=False)):
        with pytest.raises(ValueError, match="Circular reference"):
            encode_(loop)
        with pytest.raises(TypeError, match="not JSON serializable"):
            encode_({"x": object()})
