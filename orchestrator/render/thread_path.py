"""The path a thread took through its graph, read from its events in the store.

`thread_path(store_dir, thread_id)` gives the edges the thread took as (source, status, target)
triples, in order, with how often each was taken (a `Taken`), for `orchestrator graph GRAPH
--thread ID` to draw. The edges come from the event log alone, so the path is the one the thread
really took even when the graph file changed since:

- each step's `StepStarted` names the edge that led to it (source role or `$START`, the status
  taken, and the role); a step that ran again after a crash or a resume counts once;
- each `ThreadCompleted` adds the edge into `$END` from the last committed step (or from
  `$START` when the thread ended before any step).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ..engine import Event, StepCommitted, StepStarted, ThreadCompleted
from ..spec.models import END, SINGLE_EXIT, START
from .diagram import EdgeKey, Taken


def edges_from_events(events: Iterable[Event]) -> list[EdgeKey]:
    """The edges a thread took, in order, from its events."""
    edges: list[EdgeKey] = []
    started: dict[int, int] = {}  # step number -> index of its edge in `edges`
    last: tuple[str, str] | None = None  # the latest committed step's (role, status)
    for event in events:
        if isinstance(event, StepStarted):
            edge = (event.source, event.status, event.role)
            if event.step in started:
                edges[started[event.step]] = edge  # decided again after a resume: same step
            else:
                started[event.step] = len(edges)
                edges.append(edge)
        elif isinstance(event, StepCommitted):
            last = (event.role, event.status)
        elif isinstance(event, ThreadCompleted):
            source, status = last if last is not None else (START, SINGLE_EXIT)
            edges.append((source, status, END))
    return edges


def thread_path(store_dir: str | os.PathLike[str] | None, thread_id: str) -> Taken:
    """The edges thread `thread_id` (or a unique prefix of its id) took, from the store.

    `store_dir` None means the default store (`$ORCHESTRATOR_HOME` or `./.orchestrator/`).
    Raises LookupError when there is no store there or no such thread.
    """
    # deferred: only `graph --thread` opens the store; edges_from_events needs none
    from ..store.base import ThreadNotFound, default_store_dir
    from ..store.sqlite import SqliteStore

    directory = default_store_dir(store_dir)
    if not (Path(directory) / "threads.db").is_file():
        raise LookupError(f"no thread store in {directory} (pass --store DIR)")
    store = SqliteStore(directory)
    try:
        try:
            row = store.thread(thread_id)
            events = [stored.event for stored in store.events(row.id)]
        except ThreadNotFound:
            raise LookupError(
                f"no thread '{thread_id}' in {directory} (see `orchestrator threads list`)"
            ) from None
    finally:
        store.close()
    return Taken.from_edges(edges_from_events(events))
