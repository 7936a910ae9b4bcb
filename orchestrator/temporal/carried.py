"""The graph a thread on Temporal carries (its workflow's snapshot, asked by a query), and a
graph file given to continue it with: linted, its changes announced. A mixin of the Temporal
session, apart so that the session stays one idea a module.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, Protocol, TypeVar

from temporalio.client import WorkflowHandle

from ..core.allowed import Allowed, allowed_within
from ..core.state import ThreadState
from ..definition.graphdiff import graph_changes
from ..definition.loader import load_graph
from ..definition.models import Graph
from ..definition.problems import has_errors
from ..errors import OrchestratorError
from ..linter import lint
from ..run.session import Notify, SessionError
from ..store.base import ThreadRow
from .client import READ_TIMEOUT, answered
from .reading import carried_graph
from .workflow import ThreadWorkflow

T = TypeVar("T")


class _Host(Protocol):
    task_queue: str
    notify: Notify

    def _sync(self, coro: Coroutine[Any, Any, T]) -> T: ...
    async def _handle(self, thread_id: str) -> WorkflowHandle[Any, Any]: ...
    async def _carried(self, handle: WorkflowHandle[Any, Any], queue: str) -> dict[str, Any]: ...
    async def _carried_by_id(self, thread_id: str, queue: str) -> dict[str, Any]: ...
    def graph_for(self, row: ThreadRow, graph_arg: str | None = None) -> Graph: ...
    def graph_of(self, row: ThreadRow) -> Graph | None: ...
    def thread(self, thread_id: str) -> ThreadRow: ...
    def state(self, thread_id: str) -> ThreadState: ...
    def _child_state(self, thread_id: str) -> ThreadState | None: ...
    async def agraph_for(self, row: ThreadRow, graph_arg: str | None = None) -> Graph: ...


class CarriedGraphs:
    async def _carried(self: _Host, handle: WorkflowHandle[Any, Any], queue: str) -> dict[str, Any]:
        call = handle.query(ThreadWorkflow.graph_snapshot, rpc_timeout=READ_TIMEOUT)
        carried: dict[str, Any] = await answered(call, queue)
        return carried

    def graph_for(self: _Host, row: ThreadRow, graph_arg: str | None = None) -> Graph:
        return self._sync(self.agraph_for(row, graph_arg))

    async def agraph_for(self: _Host, row: ThreadRow, graph_arg: str | None = None) -> Graph:
        """The graph the thread carries; with `graph_arg`, that graph (linted), the changes
        noted: a resume then continues with it."""
        queue = getattr(row, "task_queue", self.task_queue)
        carried = await self._carried_by_id(row.id, queue)
        if graph_arg is None:
            return carried_graph(carried)
        graph = load_graph(graph_arg)
        problems = lint(graph)
        if has_errors(problems):
            raise SessionError(
                "the graph has errors; fix them, then resume", usage=False, problems=problems
            )
        current = carried_graph(carried)
        if graph.hash != current.hash:
            changes = graph_changes(carried["snapshot"], graph.model_dump(mode="json"))
            self.notify(
                f"the graph changed since thread {row.id} started "
                f"({current.hash[:15]}… → {graph.hash[:15]}…):\n"
                + "\n".join(f"  - {c}" for c in changes or ["(only formatting or library roles)"])
            )
        return graph

    def graph_of(self: _Host, row: ThreadRow) -> Graph | None:
        """The graph the thread carries, to show (as Session.graph_of); None when no worker
        answers for it."""
        try:
            return self.graph_for(row)
        except (OrchestratorError, ValueError, RuntimeError):  # a graph, Temporal: not shown
            return None

    async def _carried_by_id(self: _Host, thread_id: str, queue: str) -> dict[str, Any]:
        return await self._carried(await self._handle(thread_id), queue)

    def allowed(self: _Host, thread_id: str, graph: Graph | None = None) -> Allowed:
        """What may happen to the thread now (as Session.allowed), from the graph it carries;
        a person inside a subgraph's child (its workflow `PARENT.STEP`) included."""
        row = self.thread(thread_id)
        return allowed_within(graph or self.graph_of(row), self.state(row.id), self._child_state)

    def _child_state(self: _Host, thread_id: str) -> ThreadState | None:
        """A child thread's state from its workflow `PARENT.STEP`; None when there is none."""
        try:
            return self.state(thread_id)
        except OrchestratorError:  # no such child workflow (yet): nothing to answer there
            return None
