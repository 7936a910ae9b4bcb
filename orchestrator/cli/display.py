"""How a running thread is shown: one plain line per event, or one JSON object per event."""

from __future__ import annotations

import json
from typing import Any

import click

from ..core.events import (
    AttemptRejected,
    HumanWaiting,
    StepCommitted,
    ThreadCompleted,
    ThreadResumed,
    ThreadSuspended,
)
from ..core.ledger import money
from ..core.state import ThreadState
from ..store.base import StoredEvent
from ..views.facts import StepFigures, step_facts
from ..views.plural import plural


def json_line(stored: StoredEvent, thread_id: str) -> str:
    data = stored.event.to_dict()
    data = {
        "event": data.pop("type"),
        "thread": thread_id,
        "seq": stored.seq,
        "at": stored.at,
        **data,
    }
    return json.dumps(data, ensure_ascii=False, default=str)


class PlainPrinter:
    """Plain lines on stderr: what a person reads when output is not a terminal."""

    def __init__(self, thread_id: str = ""):
        self.thread_id = thread_id

    def __call__(self, stored: StoredEvent, state: ThreadState) -> None:
        line = describe(stored.event, state)
        if line:
            click.echo(line, err=True)

    def child(self, thread_id: str, stored: StoredEvent, state: ThreadState) -> None:
        """An event of a subgraph's child thread, indented under its parent's step."""
        line = child_line(thread_id, stored, state)
        if line:
            click.echo(line, err=True)


def child_line(thread_id: str, stored: StoredEvent, state: ThreadState) -> str:
    line = describe(stored.event, state)
    return f"  ↳ {thread_id} ({state.graph}): {line}" if line else ""


def describe(event: Any, state: ThreadState) -> str:
    match event:
        case StepCommitted():
            facts = ", ".join(step_facts(StepFigures.of_event(event)))
            return f"step {event.step} {event.role} → {event.status}  ({facts})"
        case AttemptRejected():
            first = event.errors[0] if event.errors else "invalid reply"
            more = f" (+{len(event.errors) - 1} more)" if len(event.errors) > 1 else ""
            return f"step {event.step} reply rejected, asking for a repair: {first}{more}"
        case HumanWaiting():
            return f"step {event.step} waits for a person to answer as '{event.role}'"
        case ThreadSuspended():
            return f"suspended: {event.reason}"
        case ThreadResumed():
            note = (
                " (the previous run was interrupted; its step in flight runs again)"
                if event.interrupted
                else ""
            )
            return f"resumed{note}"
        case ThreadCompleted():
            spent = f"{plural(state.committed, 'step')}, {money(state.cost_usd)}"
            if event.outcome == "failure":
                return f"ended '{event.ending}' (a failure) after {spent}"
            ending = "" if event.ending == "done" else f" ({event.ending})"
            return f"completed{ending} in {spent}"
    return ""
