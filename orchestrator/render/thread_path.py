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

from ..core.events import Event
from ..core.steps import thread_view
from ..store.base import ThreadNotFound, default_store_dir
from ..store.sqlite import SqliteStore
from .diagram import EdgeKey, Taken


def edges_from_events(events: Iterable[Event]) -> list[EdgeKey]:
    """The edges a thread took, in order, from its events."""
    return thread_view(list(events)).edges()


def thread_path(
    store_dir: str | os.PathLike[str] | None, thread_id: str, graph: str | None = None
) -> Taken:
    """The edges thread `thread_id` (or a unique prefix of its id) took, from the store.

    `store_dir` None means the default store (`$ORCHESTRATOR_HOME` or `./.orchestrator/`).
    Raises LookupError when there is no store there, no such thread, or (with `graph`) the
    thread is of another graph: its path drawn on this graph would mean nothing.
    """
    directory = default_store_dir(store_dir)
    if not (Path(directory) / "threads.db").is_file():
        raise LookupError(f"no thread store in {directory} (pass --store DIR)")
    store = SqliteStore(directory, readonly=True)
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
    if graph is not None and row.graph != graph:
        raise LookupError(
            f"thread {row.id} is a thread of graph '{row.graph}', not of '{graph}'; "
            f"draw it with `orchestrator graph {row.graph} --thread {row.id}`"
        )
    return Taken.from_edges(edges_from_events(events))
