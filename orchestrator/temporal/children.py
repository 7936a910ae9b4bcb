"""A subgraph role's child thread on Temporal: a child workflow (docs/format.md section 14).

The workflow's part of the driver's executor for children (core/driver.py); the rules are the
moderator's (S1-S6, core/subgraph.py), as for a local thread. The child is a workflow of the same
type with the child thread's id (`PARENT.STEP`), started as a child of the parent's workflow.
It runs until it stops (an ending, a wait for a person, a suspension, a cancel) and returns its
log, and the log of each of its own children. The parent keeps those logs, as the local store
keeps a child's events, and so it knows, deterministically, where each child stands:

    child_state     the kept log, folded (None: never started)
    start_child     its ThreadStarted, kept (S2; the inputs checked against the child graph)
    run_child       a child workflow run over the kept log, judging the driver's request first
                    (S3), until it stops; what it returns is kept
    waiting_leaf    where an answer to a thread that waits at a subgraph step goes (S5): the
                    kept log of the child that waits, followed down; the answer is judged there
                    and appended to that log, then the parent is resumed, which runs the child
                    again from its log (S3), as a local thread's answer does
    cancel_children a cancel of the parent goes on to its children (S6): a signal to a running
                    one, a run judging the cancel first for one that stopped

Deterministic: the logs are data the workflow holds; the clock is the workflow's.
"""

from __future__ import annotations

import posixpath
from datetime import timedelta
from typing import Any

from temporalio import workflow

from ..core.allowed import Allowed, allowed_within
from ..core.commands import RunChild
from ..core.engine import fold
from ..core.events import event_from_dict
from ..core.outcomes import CancelRequested, Outcome
from ..core.state import ThreadState
from ..core.subgraph import child_started, children_in_flight, waiting_child
from ..definition.models import Graph
from ..definition.validator import compile_validator
from .codec import outcome_to_dict, stored_to_dict

PARENT_CANCELLED = "parent_cancelled"  # the signal a child gets when its parent is cancelled


def folded(log: list[dict[str, Any]]) -> ThreadState:
    return fold([event_from_dict(stored["event"]) for stored in log])


def inputs_problem(graph: Graph, inputs: dict[str, Any]) -> str | None:
    """Why the child graph refuses these inputs (its input schema), or None."""
    errors = sorted(compile_validator(graph.input_schema).iter_errors(inputs), key=lambda e: e.path)
    if not errors:
        return None
    said = "; ".join(
        f"input '{'.'.join(str(p) for p in e.path)}': {e.message}" if e.path else e.message
        for e in errors
    )
    return f"the inputs of graph '{graph.name}': {said}"


class ChildThreads:
    """The child-workflow half of ThreadWorkflow's executor (see the module's docstring)."""

    workflow_name: str
    graph: Graph
    state: ThreadState
    model: str | None
    heartbeat: timedelta
    subgraphs: dict[str, Any]  # by subgraph role: {"snapshot", "subgraphs"} (codec.py)
    children: dict[str, Any]  # by child thread id: {"log", "children"}, as last returned
    child_runs: dict[str, workflow.ChildWorkflowHandle[Any, Any]]
    recording: dict[str, Any] | None
    replay_pace: float

    async def child_state(self, child: str) -> ThreadState | None:
        kept = self.children.get(child)
        return folded(kept["log"]) if kept is not None else None

    async def start_child(self, command: RunChild, graph: Graph) -> str | None:
        problem = inputs_problem(graph, command.inputs)
        if problem is not None:
            return problem
        root = self.state.workspace  # decide() refused a location outside it (D5b)
        workspace = posixpath.join(root, command.location) if command.location else root
        started = child_started(self.state, command, graph, workspace)
        at = workflow.now().timestamp()
        self.children[command.child] = {"log": [stored_to_dict(1, at, started)], "children": {}}
        return None

    async def run_child(
        self, command: RunChild, graph: Graph, first: Outcome | None
    ) -> tuple[ThreadState, float]:
        kept = self.children[command.child]
        carried = self.subgraphs.get(command.role) or {}
        params = {  # ThreadInput's fields (workflow.py), as JSON
            "thread_id": command.child,
            "snapshot": carried.get("snapshot") or graph.model_dump(mode="json"),
            "subgraphs": carried.get("subgraphs") or {},
            "events": kept["log"],
            "children": kept["children"],
            "max_steps": command.max_steps,
            "max_cost_usd": command.max_cost_usd,
            "model": self.model,
            "first": outcome_to_dict(first) if first is not None else None,
            "heartbeat_seconds": self.heartbeat.total_seconds(),
            "as_child": True,
            "recording": self.recording,  # a replay's: it holds its children's steps
            "replay_pace": self.replay_pace,
        }
        began = workflow.now()
        handle = await workflow.start_child_workflow(
            self.workflow_name,
            params,
            id=command.child,
            static_summary=f"{graph.name}: step {command.step} of {self.state.thread_id}",
        )
        self.child_runs[command.child] = handle
        try:
            result: dict[str, Any] = await handle
        finally:
            self.child_runs.pop(command.child, None)
        self.children[command.child] = {"log": result["log"], "children": result["children"]}
        return folded(result["log"]), (workflow.now() - began).total_seconds()

    def waiting_leaf(self) -> tuple[dict[str, Any], Graph, ThreadState] | None:
        """S5: the kept log, graph and state of the child that waits for the person this
        thread waits for, followed down; None when the person's step is this thread's own."""
        graph, state, kept_children = self.graph, self.state, self.children
        found = None
        while (inside := waiting_child(graph, state)) is not None:
            kept = kept_children.get(inside[0])
            if kept is None:
                break
            graph, state, kept_children = inside[1], folded(kept["log"]), kept["children"]
            found = kept
        return (found, graph, state) if found is not None else None

    def allowed_now(self) -> Allowed:
        """`allowed()` of this thread, with the waiting child's own (S5, followed down through
        the kept logs), so a person inside a child is answerable through the parent."""

        def kept_state(thread_id: str) -> ThreadState | None:
            kept = _kept(self.children, thread_id)
            return folded(kept["log"]) if kept is not None else None

        return allowed_within(self.graph, self.state, kept_state)

    def children_to_cancel(self) -> list[tuple[str, str]]:
        """S6: the children (id, subgraph role) of the steps in flight, asked before a cancel."""
        found = []
        for child in children_in_flight(self.state):
            flight = self.state.flight(int(child.rsplit(".", 1)[1]))
            if flight is not None and self.graph.subgraph(flight.role) is not None:
                found.append((child, flight.role))
        return found

    async def cancel_children(self, children: list[tuple[str, str]], reason: str) -> None:
        """S6: cancelled with their parent: a running child by a signal, one that stopped (it
        waits, or suspended) by a run of its workflow that judges the cancel first."""
        for child, role in children:
            handle = self.child_runs.get(child)
            if handle is not None:
                await handle.signal(PARENT_CANCELLED, reason)
                continue
            kept = self.children.get(child)
            graph = self.graph.subgraph(role)
            if kept is None or graph is None or folded(kept["log"]).status.ended:
                continue
            step = int(child.rsplit(".", 1)[1])
            command = RunChild(step, role, child, {}, None, 1, None)
            await self.run_child(command, graph, CancelRequested(reason))


def _kept(children: dict[str, dict[str, Any]], thread_id: str) -> dict[str, Any] | None:
    """The kept log of child thread `thread_id` (`PARENT.STEP[.STEP...]`), looked up through
    the kept children of its ancestors."""
    for kid_id, kept in children.items():
        if thread_id == kid_id:
            return kept
        if thread_id.startswith(kid_id + "."):
            return _kept(kept["children"], thread_id)
    return None
