"""Where a request to a thread goes when a subgraph's child is what waits (rule S5, followed
down), and what may happen to a thread with its waiting children's state (`allowed`).

A mixin of the local `Session`: it needs only the store and the session's reads. The rules are
the moderator's (core/allowed.py, core/subgraph.py); this module only gathers the children's
states from the store, which the pure query cannot read.
"""

from __future__ import annotations

from typing import Protocol

from ..core.allowed import Allowed, allowed_within
from ..core.state import ThreadState
from ..core.subgraph import child_id
from ..definition.models import Graph
from ..store.base import EventStore, ThreadNotFound, ThreadRow


class _Reads(Protocol):
    store: EventStore

    def thread(self, thread_id: str) -> ThreadRow: ...
    def state(self, thread_id: str) -> ThreadState: ...
    def _graph_quietly(self, row: ThreadRow) -> Graph | None: ...
    def _child_state(self, thread_id: str) -> ThreadState | None: ...


class ChildRouting:
    def waiting_leaf(
        self: _Reads, graph: Graph, thread_id: str, step: int | None = None
    ) -> tuple[Graph, str]:
        """The thread (and its graph) whose person's step a waiting thread waits for: itself,
        or the waiting child of its waiting subgraph step (`step`, else the first), followed
        down."""
        row = self.thread(thread_id)
        asked = allowed_within(graph, self.state(row.id), self._child_state)
        found = asked.answering(step)
        if found is None or not found.via:
            return graph, row.id
        for via in found.via:
            role = self.state(thread_id).flight(via)
            child = graph.subgraph(role.role) if role is not None else None
            if child is None:  # pragma: no cover - allowed() listed it through this step
                return graph, row.id
            graph, thread_id = child, child_id(thread_id, via)
        return graph, thread_id

    def _child_state(self: _Reads, thread_id: str) -> ThreadState | None:
        """A child thread's state from the store; None when it has not started."""
        try:
            row = self.store.thread(thread_id)
        except ThreadNotFound:
            return None
        return self.state(row.id) if row.id == thread_id else None  # an exact id, no prefix

    def allowed(self: _Reads, thread_id: str, graph: Graph | None = None) -> Allowed:
        """What may happen to the thread now (core/allowed.py), a person waiting inside a
        subgraph's child included: of `graph`, else of the thread's graph file, else of the
        graph as it was when the thread started (None when neither loads: cancel only)."""
        row = self.thread(thread_id)
        return allowed_within(
            graph or self._graph_quietly(row), self.state(row.id), self._child_state
        )
