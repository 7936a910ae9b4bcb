"""What crosses Temporal, as JSON values: stored events, outcomes, step plans, graph snapshots.

The workflow's inputs, its activities' arguments and results, and its query answers are all
plain JSON, so they read well in Temporal's UI and need no custom data converter. Pure.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..core.events import Event, SuspendKind, event_from_dict
from ..core.outcomes import (
    ActorFailed,
    Answered,
    CancelRequested,
    Interrupted,
    NeedsPerson,
    Outcome,
    Replied,
    ResumeRequested,
)
from ..core.records import Attempt, HistoryItem, Visit
from ..definition.models import Graph, Role
from ..run.plan import StepPlan
from ..store.base import StoredEvent

OUTCOMES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        Replied,
        ActorFailed,
        NeedsPerson,
        Answered,
        Interrupted,
        CancelRequested,
        ResumeRequested,
    )
}


def stored_to_dict(seq: int, at: float, event: Event) -> dict[str, Any]:
    return {"seq": seq, "at": at, "event": event.to_dict()}


def stored_from_dict(data: dict[str, Any]) -> StoredEvent:
    return StoredEvent(int(data["seq"]), float(data["at"]), event_from_dict(data["event"]))


def outcome_to_dict(outcome: Outcome) -> dict[str, Any]:
    data = {f.name: getattr(outcome, f.name) for f in dataclasses.fields(outcome)}
    if isinstance(outcome, ActorFailed):
        data["kind"] = str(outcome.kind)
    return {"type": type(outcome).__name__, **data}


def outcome_from_dict(data: dict[str, Any]) -> Outcome:
    values = dict(data)
    cls = OUTCOMES[values.pop("type")]
    if cls is ActorFailed:
        values["kind"] = SuspendKind(values["kind"])
    outcome: Outcome = cls(**values)
    return outcome


def plan_to_dict(plan: StepPlan) -> dict[str, Any]:
    return dataclasses.asdict(plan)


def plan_from_dict(data: dict[str, Any]) -> StepPlan:
    values = dict(data)
    values["history"] = tuple(HistoryItem(**h) for h in values.get("history") or ())
    values["previous_visits"] = tuple(Visit(**v) for v in values.get("previous_visits") or ())
    values["attempts"] = tuple(
        Attempt(a["reply"], tuple(a["errors"])) for a in values.get("attempts") or ()
    )
    return StepPlan(**values)


def graph_from_snapshot(snapshot: dict[str, Any], subgraphs: dict[str, Any] | None = None) -> Graph:
    """The graph a thread carries (`Graph.model_dump(mode="json")`, and its subgraph roles'
    graphs: `subgraph_snapshots`), rebuilt: same hash."""
    graph = Graph.model_validate(snapshot)
    for name, role in graph.roles.items():
        role._name = name  # what the loader sets: the role's key in the graph
    graph._subgraphs = {
        role: graph_from_snapshot(child["snapshot"], child.get("subgraphs"))
        for role, child in (subgraphs or {}).items()
    }
    return graph


def subgraph_snapshots(graph: Graph) -> dict[str, Any]:
    """The graphs of the subgraph roles, by role, each with its own: what a workflow carries so
    that it can start child workflows without graph files (docs/format.md section 14)."""
    found: dict[str, Any] = {}
    for name in graph.roles:
        child = graph.subgraph(name)
        if child is not None:
            found[name] = {
                "snapshot": child.model_dump(mode="json"),
                "subgraphs": subgraph_snapshots(child),
            }
    return found


def role_from_dump(name: str, data: dict[str, Any]) -> Role:
    role = Role.model_validate(data)
    role._name = name
    return role
