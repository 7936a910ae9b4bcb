"""The contract's awaitable twins for a session whose reads answer at once (a local store).

`ThreadSession` (run/contract.py) has an async form of every read so that a caller inside an
event loop holds one protocol; a local store answers without waiting, so each twin is simply
its sync form. The mixin types `self` as what it needs (mypy's protocol-typed mixins).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..core.titles import ThreadQuery
    from ..definition.models import Graph
    from ..store.base import StoredEvent, ThreadRow
    from .options import RunOptions
    from .session import Started
    from .waiting import Question


class _Sync(Protocol):
    def start(
        self,
        graph: Graph,
        inputs: dict[str, Any],
        *,
        folder: Path,
        in_place: bool = False,
        replay: bool = False,
        thread_id: str | None = None,
        options: RunOptions | None = None,
        title: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> Started: ...

    def cancel(self, thread_id: str, reason: str = ...) -> ThreadRow: ...
    def thread(self, thread_id: str) -> ThreadRow: ...
    def threads(
        self, state: str | None = None, query: ThreadQuery | None = None
    ) -> list[ThreadRow]: ...
    def events(self, thread_id: str, after: int = 0) -> list[StoredEvent]: ...
    def question(
        self, thread_id: str, graph: Graph | None = None, step: int | None = None
    ) -> Question | None: ...
    def graph_for(self, row: ThreadRow, graph_arg: str | None = None) -> Graph: ...


class AwaitableTwins:
    async def astart(
        self: _Sync,
        graph: Graph,
        inputs: dict[str, Any],
        *,
        folder: Path,
        in_place: bool = False,
        replay: bool = False,
        thread_id: str | None = None,
        options: RunOptions | None = None,
        title: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> Started:
        return self.start(
            graph,
            inputs,
            folder=folder,
            in_place=in_place,
            replay=replay,
            thread_id=thread_id,
            options=options,
            title=title,
            labels=labels,
        )

    async def acancel(
        self: _Sync, thread_id: str, reason: str = "cancelled by the user"
    ) -> ThreadRow:
        return self.cancel(thread_id, reason)

    async def athread(self: _Sync, thread_id: str) -> ThreadRow:
        return self.thread(thread_id)

    async def athreads(
        self: _Sync, state: str | None = None, query: ThreadQuery | None = None
    ) -> list[ThreadRow]:
        return self.threads(state, query)

    async def aevents(self: _Sync, thread_id: str, after: int = 0) -> list[StoredEvent]:
        return self.events(thread_id, after)

    async def aquestion(
        self: _Sync, thread_id: str, graph: Graph | None = None, step: int | None = None
    ) -> Question | None:
        return self.question(thread_id, graph, step)

    async def agraph_for(self: _Sync, row: ThreadRow, graph_arg: str | None = None) -> Graph:
        return self.graph_for(row, graph_arg)
