"""The comparison of a replayed thread with its recording: the first divergence, if any.

The rules are those of the package's documentation (orchestrator/replay/report.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..actors.recording import Recording, resumes_of
from ..core.events import Event, SuspendKind, ThreadStatus, ThreadSuspended
from ..core.steps import StepView, thread_view
from ..definition.models import END, START, Graph
from .report import Divergence, DivergenceKind, _label

# --------------------------------------------------------------------------- the comparison


def _last(items: Iterable[Any], cls: type[Any]) -> Any:
    found = None
    for item in items:
        event = getattr(item, "event", item)
        if isinstance(event, cls):
            found = event
    return found


def first_divergence(
    graph: Graph, recording: Recording, events: list[Event]
) -> tuple[Divergence | None, list[str]]:
    """Compare the replayed thread's events with the recording (rules in the module doc):
    the route's first divergence, or an earlier one where the recorded thread was resumed."""
    found, notes = _route_divergence(graph, recording, events)
    resumed = _resume_divergence(recording, events)
    if resumed is not None and (found is None or resumed.step <= found.step):
        return resumed, notes
    return found, notes


def _resume_divergence(recording: Recording, events: list[Event]) -> Divergence | None:
    """Where the recorded thread reached an ending and was resumed (`resumed:`), the replay
    must end there too, in the same ending (the replayer resumes it as its user did)."""
    replayed = resumes_of(events)
    view = thread_view(events)
    started = {s.step: s for s in view.steps}
    committed = view.committed
    for i, mark in enumerate(recording.resumed):
        step = mark.after + 1
        if i < len(replayed):
            if mark.ending is not None and replayed[i].ending != mark.ending:
                last = committed[mark.after - 1] if mark.after else None
                edge = (last.role, last.status or "", END) if last is not None else None
                via = f" (edge {_label(edge)})" if edge else ""
                return Divergence(
                    DivergenceKind.ENDING,
                    step,
                    END,
                    END,
                    f"step {step}: the recording ends in '{mark.ending}' after step "
                    f"{mark.after} and was resumed there, but the graph now ends in "
                    f"'{replayed[i].ending}'{via}",
                    edge=edge,
                )
            continue
        start = started.get(step)
        if start is None:
            return None  # the replay stopped before: the route's divergence says where
        edge = _edge_of(start, start.role)
        via = f" (edge {_label(edge)})" if edge else ""
        return Divergence(
            DivergenceKind.CONTINUES,
            step,
            END,
            start.role,
            f"step {step}: the recording ends at $END after step {mark.after} and was resumed "
            f"there, but the graph now continues to '{start.role}'{via}",
            edge=edge,
        )
    return None


def _route_divergence(
    graph: Graph, recording: Recording, events: list[Event]
) -> tuple[Divergence | None, list[str]]:
    recorded = recording.steps
    # A recording ends at $END when it says so: an ending, `completed`, or no state at all.
    expects_end = recording.ending is not None or recording.state in (None, ThreadStatus.COMPLETED)
    notes: list[str] = []
    view = thread_view(events)
    started = {s.step: s for s in view.steps}
    rejected = {s.step: list(s.attempts) for s in view.steps}
    committed = view.committed

    # 1. Every committed step played the recorded role (the replay actor refuses any other);
    #    it must also have accepted the recorded reply, not an attempt rejected when recorded.
    for event in committed:
        step = recorded[event.step - 1]
        if event.reply != step.output:
            edge = _edge_of(started.get(event.step), event.role)
            return Divergence(
                DivergenceKind.ATTEMPT_ACCEPTED,
                event.step,
                step.role,
                event.role,
                f"step {event.step} ({step.role}): a reply that was rejected when recorded is "
                f"now accepted (status '{event.status}'), so the recorded reply is never used; "
                f"remove the attempt from the recording if the looser schema is intended",
                edge=edge,
            ), notes

    state = view.state
    k = len(committed)
    after = k + 1  # the step the graph was deciding when it stopped
    holds = recorded[k].role if k < len(recorded) else (END if expects_end else None)
    source, status = (committed[-1].role, committed[-1].status or "") if committed else (START, "_")

    if state.ending is not None:
        completed_edge = (source, status, END)
        if k < len(recorded):
            return Divergence(
                DivergenceKind.ENDED_EARLY,
                after,
                holds,
                END,
                f"step {after}: the recording holds '{holds}', but the graph now ends at $END "
                f"(edge {_label(completed_edge)})",
                edge=completed_edge,
            ), notes
        if not expects_end:
            return Divergence(
                DivergenceKind.ENDED_EARLY,
                after,
                None,
                END,
                f"step {after}: the recorded thread did not end after step {k} (it was "
                f"{recording.state}), but the graph now ends at $END (edge {_label(completed_edge)})",
                edge=completed_edge,
            ), notes
        if recording.ending is not None and recording.ending != state.ending:
            return Divergence(
                DivergenceKind.ENDING,
                after,
                END,
                END,
                f"step {after}: the recording ends in '{recording.ending}', but the graph now "
                f"ends in '{state.ending}' (edge {_label(completed_edge)})",
                edge=completed_edge,
            ), notes
        return None, notes

    suspension = _last(events, ThreadSuspended)
    if state.status != ThreadStatus.SUSPENDED or suspension is None:
        return Divergence(
            DivergenceKind.STOPPED,
            after,
            holds,
            None,
            f"the replayed thread is {state.status}: {state.reason}",
        ), notes

    kind = suspension.kind
    if kind == SuspendKind.REPLAY_DIVERGENCE:
        s = suspension.step or after
        start = started.get(s)
        graph_role = start.role if start is not None else None
        edge = _edge_of(start, graph_role)
        via = f" (edge {_label(edge)})" if edge else ""
        if s > len(recorded):
            if not expects_end:
                notes.append(
                    f"the recording stops after step {len(recorded)} (its thread was "
                    f"{recording.state}); the graph would continue with '{graph_role}'{via}"
                )
                return None, notes
            return Divergence(
                DivergenceKind.CONTINUES,
                s,
                END,
                graph_role,
                f"step {s}: the recording ends at $END after step {len(recorded)}, but the graph "
                f"now continues to '{graph_role}'{via}; a recording that stops mid-thread on "
                f"purpose says so with `state: suspended`",
                edge=edge,
            ), notes
        holds = recorded[s - 1].role
        if graph_role != holds:
            return Divergence(
                DivergenceKind.ROUTE,
                s,
                holds,
                graph_role,
                f"step {s}: the recording holds '{holds}', but the graph now routes to "
                f"'{graph_role}'{via}",
                edge=edge,
            ), notes
        errors = tuple(rejected[s][-1].errors) if rejected.get(s) else ()
        return Divergence(
            DivergenceKind.REJECTED,
            s,
            holds,
            graph_role,
            f"step {s} ({holds}): the recorded reply is now rejected by the role's schema",
            errors=errors,
            edge=edge,
        ), notes

    if kind == SuspendKind.REPAIRS:
        s = suspension.step or after
        step = recorded[s - 1]
        attempts = rejected.get(s, [])
        errors = tuple(attempts[-1].errors) if attempts else ()
        edge = _edge_of(started.get(s), step.role)
        if attempts and attempts[-1].reply == step.output:
            return Divergence(
                DivergenceKind.REJECTED,
                s,
                step.role,
                step.role,
                f"step {s} ({step.role}): the recorded reply is now rejected by the role's schema",
                errors=errors,
                edge=edge,
            ), notes
        max_repairs = graph.roles[step.role].max_repairs
        return Divergence(
            DivergenceKind.REPAIRS,
            s,
            step.role,
            step.role,
            f"step {s} ({step.role}): the recording holds {len(step.attempts)} rejected "
            f"repl{'ies' if len(step.attempts) != 1 else 'y'} before the accepted one, but "
            f"max_repairs is now {max_repairs}, so the step stops after {len(attempts)} "
            f"rejected; the last errors",
            errors=errors,
            edge=edge,
        ), notes

    if kind == SuspendKind.TEMPLATE:
        target = graph.edge(source, status)
        role = (target.role or "parallel") if target is not None else None
        edge = (source, status, role) if role is not None else None
        return Divergence(
            DivergenceKind.TEMPLATE,
            after,
            holds,
            role,
            f"step {after}: {suspension.reason}",
            edge=edge,
        ), notes

    if kind == SuspendKind.GRAPH and committed and graph.edge(source, status) is None:
        known = ", ".join(sorted(graph.graph.get(source, {}))) or "none"
        return Divergence(
            DivergenceKind.NO_EDGE,
            after,
            holds,
            None,
            f"step {after}: the recorded reply of step {k} ({source}) has status '{status}', "
            f"which no longer has an edge (edges of '{source}': {known})",
        ), notes

    if kind == SuspendKind.ROLE:
        s = suspension.step or after
        if s == len(recorded) and not expects_end:
            notes.append(f"the recording ends with a $SUSPEND reply at step {s}")
            return None, notes
        holds_here = recorded[s - 1].role if s <= len(recorded) else None
        return Divergence(
            DivergenceKind.SUSPENDED,
            s,
            holds_here,
            holds_here,
            f"step {s}: {suspension.reason}; the recording "
            + ("ends at $END" if expects_end else "goes on")
            + " there",
        ), notes

    return Divergence(
        DivergenceKind.STOPPED,
        after,
        holds,
        None,
        f"step {after}: the replay stopped: {suspension.reason}",
    ), notes


def _edge_of(start: StepView | None, target: str | None) -> tuple[str, str, str] | None:
    if start is None or target is None:
        return None
    return (start.source, start.edge_status, target)
