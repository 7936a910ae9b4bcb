"""Replaying recordings through the current graph: "same route", or the first divergence.

Why this module exists
----------------------
A recording (FORMAT.md section 8) holds a thread's replies. Users keep recordings as tests of
their graphs: when they change a graph, they want to know whether the recorded threads would
still take the same route, and where they would not. Replaying runs the *real* engine (routing,
extraction, repairs, templates, guards) in an in-memory store, with a `ReplayActor` that feeds
step N's recorded replies when the engine asks for step N. Nothing here re-implements routing;
this module only reads the replayed thread's event log and compares it with the recording.

What "same route" means
-----------------------
A recording's steps are a prefix of a route. Its `state` says what came after the last step:

* `completed`, or no `state` at all (a hand-written recording, like FORMAT 8's example): the
  route ended at `$END` right after the last step.
* any other state (`suspended`, `waiting`, `running`, `failed`, `cancelled`): the recorded
  thread stopped mid-route, so the recording says nothing about what follows its last step.

A replay takes the *same route* when

1. the graph asked for every recorded step, in order, with the recorded role, and accepted that
   step's recorded reply (after its recorded rejected attempts, which must still be rejected);
2. and then ended where the recording ended: at `$END` for a completed recording; for one that
   stopped mid-route, by asking for a step the recording does not hold (or because the last
   recorded reply is a `$SUSPEND`), and never by reaching `$END` there.

Anything else is a divergence, and the first one is returned as data (`Divergence`), never
raised. A template that fails to render or a status without an edge is a divergence even at the
end of a recording that stopped mid-route: the graph is broken there whatever the recording
says. A limit (`max_visits`) reached during the replay is not a change of route; the replay
resumes past it, as the recorded thread's user did, and notes it. Statuses need no separate
check: a step's status is read from its recorded reply, so same reply, same status.

A thread continued after it completed (`$START.resume`) is exported without a mark of where it
continued, so its replay reports `ended-early` at the first step after its first `$END`.

The recording's `graph_hash` is compared with the graph's and the result is reported
(`same`, `changed`, `missing`); a difference never stops a replay, since a changed graph is
exactly what a replay is for.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .engine import (
    AttemptRejected,
    Event,
    StepCommitted,
    StepStarted,
    ThreadCompleted,
    ThreadSuspended,
    fold,
)
from .recording import Recording, ReplayActor, load_recording
from .runner import InputError, RunOptions, advance, start_thread
from .spec.loader import load_graph
from .spec.models import END, SINGLE_EXIT, START, Graph
from .store.memory import MemoryStore
from .testing import Trace, trace_from_store

ARROW = " → "

# Divergence kinds, stable identifiers (they appear in `replay --json`).
ROUTE = "route"  # the graph routes step N to another role than the recording holds
ENDED_EARLY = "ended-early"  # the graph reaches $END where the recording goes on
CONTINUES = "continues"  # the recording ended at $END; the graph asks for another step
REJECTED = "rejected"  # the recorded reply no longer satisfies the role's schema
REPAIRS = "repairs"  # max_repairs now ends the step before the recorded accepted reply
ATTEMPT_ACCEPTED = "attempt-accepted"  # a reply rejected when recorded is now accepted
NO_EDGE = "no-edge"  # a recorded status no longer has an edge
TEMPLATE = "template"  # an edge prompt no longer renders
INPUTS = "inputs"  # the recorded inputs no longer satisfy the graph's inputs schema
SUSPENDED = "suspended"  # a recorded `$SUSPEND` reply stops the thread where the route goes on
STOPPED = "stopped"  # the thread stopped for another reason (the message says which)


@dataclass(frozen=True)
class Divergence:
    """The first place where the graph no longer does what the recording did.

    `recorded_role` is the role the recording holds at `step`, `"$END"` when the recording
    ended there, or None when it holds nothing there (it stopped mid-route). `graph_role` is
    the role the graph now chooses for `step`, `"$END"`, or None when it could not choose.
    `edge` is the (source, status, target) the graph took or tried, when there is one.
    """

    kind: str
    step: int
    recorded_role: str | None
    graph_role: str | None
    message: str
    errors: tuple[str, ...] = ()
    edge: tuple[str, str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "step": self.step,
            "recorded_role": self.recorded_role,
            "graph_role": self.graph_role,
            "edge": (
                None
                if self.edge is None
                else {"source": self.edge[0], "status": self.edge[1], "target": self.edge[2]}
            ),
            "errors": list(self.errors),
            "message": self.message,
        }


@dataclass
class ReplayReport:
    """The outcome of replaying one recording through one graph."""

    recording: Recording
    graph: str
    graph_hash: str  # same | changed | missing: the recording's graph_hash against the graph's
    divergence: Divergence | None
    trace: Trace  # the replayed thread, for assertions on prompts and frontmatter
    notes: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list, repr=False)

    @property
    def same_route(self) -> bool:
        return self.divergence is None

    @property
    def name(self) -> str:
        return self.recording.path or f"<recording of {self.recording.graph or self.graph}>"

    @property
    def replayed(self) -> int:
        """How many recorded steps the graph took as recorded."""
        if self.divergence is None:
            return len(self.recording.steps)
        return min(self.divergence.step - 1, len(self.recording.steps))

    @property
    def path(self) -> list[str]:
        return list(self.trace.path)

    @property
    def statuses(self) -> list[str]:
        return self.trace.statuses

    def route_text(self, limit: int | None = None) -> str:
        """`writer(drafted) → reviewer(approved) → $END`, up to `limit` committed steps."""
        steps = [s for s in self.trace.steps if s.status is not None][:limit]
        parts = [s.role if s.status == SINGLE_EXIT else f"{s.role}({s.status})" for s in steps]
        if limit is None and self.trace.state == "completed":
            parts.append(END)
        return ARROW.join(parts) or "(no step)"

    def summary(self) -> str:
        """One line: `NAME: same route, 4 steps` or `NAME: diverges at step 3 (route)`."""
        if self.divergence is None:
            n = len(self.recording.steps)
            return f"{self.name}: same route, {n} step{'s' if n != 1 else ''}"
        return f"{self.name}: diverges at step {self.divergence.step} ({self.divergence.kind})"

    def describe(self) -> str:
        """Readable, several lines: the verdict, the divergence's details, the notes."""
        lines = [self.summary()]
        if self.divergence is None:
            lines.append(f"  route: {self.route_text()}")
        else:
            d = self.divergence
            lines.append(f"  {d.message}{':' if d.errors else ''}")
            lines.extend(f"    - {error}" for error in d.errors)
            lines.append(f"  replayed as recorded: {self.route_text(self.replayed)}")
        lines.extend(f"  note: {note}" for note in self.notes)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "recording": self.name,
            "graph": self.graph,
            "same_route": self.same_route,
            "steps": len(self.recording.steps),
            "replayed": self.replayed,
            "path": self.path,
            "statuses": self.statuses,
            "state": self.trace.state,
            "graph_hash": self.graph_hash,
            "divergence": None if self.divergence is None else self.divergence.to_dict(),
            "notes": list(self.notes),
        }


# --------------------------------------------------------------------------- replay


def replay_recording(
    graph: Graph | str | Path,
    recording: Recording | str | Path,
    *,
    workspace: str | Path | None = None,
) -> ReplayReport:
    """Replay `recording` through `graph`; never raises for a divergence (see the module doc).

    `graph` and `recording` may be paths. Loading errors (GraphError, RecordingError) do raise.
    The thread runs in a throw-away temporary workspace unless `workspace` is given, so an edge
    `location:` creates no directories in the user's tree.
    """
    return asyncio.run(areplay_recording(graph, recording, workspace=workspace))


async def areplay_recording(
    graph: Graph | str | Path,
    recording: Recording | str | Path,
    *,
    workspace: str | Path | None = None,
) -> ReplayReport:
    """`replay_recording` for callers already inside an event loop."""
    graph = graph if isinstance(graph, Graph) else load_graph(graph)
    recording = recording if isinstance(recording, Recording) else load_recording(recording)
    hash_state, notes = _provenance(graph, recording)
    store = MemoryStore()
    actor = ReplayActor(recording)
    with tempfile.TemporaryDirectory(prefix="orchestrator-replay-") as tmp:
        try:
            thread_id = start_thread(
                graph, dict(recording.inputs), store, workspace=workspace or tmp
            )
        except InputError as exc:
            return _inputs_report(graph, recording, hash_state, notes, str(exc))
        # max_steps must not cut a long recording short: it is a guard, not a route.
        options = RunOptions(max_steps=max(graph.limits.max_steps, len(recording.steps) + 1))
        result = await advance(
            graph, store, thread_id, actor_for=lambda name, role: actor, options=options
        )
        # Each resume grants the limits anew, so every round commits at least one step; the
        # bound only guards against a graph whose limits trip before any step.
        for _ in range(len(recording.steps) + 1):
            suspension = _last(store.events(thread_id), ThreadSuspended)
            if result.state != "suspended" or suspension is None or suspension.kind != "limit":
                break
            notes.append(f"{suspension.reason.split(';')[0]}; the replay resumed past it")
            result = await advance(
                graph,
                store,
                thread_id,
                actor_for=lambda name, role: actor,
                options=options,
                resume=True,
            )
    events = [stored.event for stored in store.events(thread_id)]
    divergence, more = _first_divergence(graph, recording, events)
    notes.extend(more)
    return ReplayReport(
        recording=recording,
        graph=graph.name,
        graph_hash=hash_state,
        divergence=divergence,
        trace=trace_from_store(store, thread_id),
        notes=notes,
        events=events,
    )


def _provenance(graph: Graph, recording: Recording) -> tuple[str, list[str]]:
    """Is the recording of this graph, and of this version of it? Reported, never refused."""
    notes: list[str] = []
    if recording.graph and recording.graph != graph.name:
        notes.append(
            f"the recording is of graph '{recording.graph}', replayed through '{graph.name}'"
        )
    if not recording.graph_hash:
        notes.append("the recording has no graph_hash; replayed against the current graph")
        return "missing", notes
    if recording.graph_hash != graph.hash:
        notes.append("the graph changed since the recording was made (graph_hash differs)")
        return "changed", notes
    return "same", notes


def _inputs_report(
    graph: Graph, recording: Recording, hash_state: str, notes: list[str], error: str
) -> ReplayReport:
    first = recording.steps[0].role if recording.steps else END
    divergence = Divergence(
        INPUTS,
        1,
        first,
        None,
        f"the recorded inputs no longer satisfy the graph's inputs, so no thread can start: {error}",
    )
    empty = Trace("", "new", [], [], None, error, MemoryStore())
    return ReplayReport(recording, graph.name, hash_state, divergence, empty, notes)


# --------------------------------------------------------------------------- the comparison


def _last(items: Iterable[Any], cls: type[Any]) -> Any:
    found = None
    for item in items:
        event = getattr(item, "event", item)
        if isinstance(event, cls):
            found = event
    return found


def _label(edge: tuple[str, str, str]) -> str:
    return f"{edge[0]} --{edge[1]}--> {edge[2]}"


def _first_divergence(
    graph: Graph, recording: Recording, events: list[Event]
) -> tuple[Divergence | None, list[str]]:
    """Compare the replayed thread's events with the recording (rules in the module doc)."""
    recorded = recording.steps
    expects_end = recording.state in (None, "completed")
    notes: list[str] = []
    started: dict[int, StepStarted] = {}
    rejected: dict[int, list[AttemptRejected]] = {}
    committed: list[StepCommitted] = []
    for event in events:
        if isinstance(event, StepStarted):
            started[event.step] = event
            rejected[event.step] = []
        elif isinstance(event, AttemptRejected):
            rejected.setdefault(event.step, []).append(event)
        elif isinstance(event, StepCommitted):
            committed.append(event)

    # 1. Every committed step played the recorded role (the replay actor refuses any other);
    #    it must also have accepted the recorded reply, not an attempt rejected when recorded.
    for event in committed:
        step = recorded[event.step - 1]
        if event.reply != step.output:
            edge = _edge_of(started.get(event.step), event.role)
            return Divergence(
                ATTEMPT_ACCEPTED,
                event.step,
                step.role,
                event.role,
                f"step {event.step} ({step.role}): a reply that was rejected when recorded is "
                f"now accepted (status '{event.status}'), so the recorded reply is never used; "
                f"remove the attempt from the recording if the looser schema is intended",
                edge=edge,
            ), notes

    state = fold(events)
    k = len(committed)
    after = k + 1  # the step the graph was deciding when it stopped
    holds = recorded[k].role if k < len(recorded) else (END if expects_end else None)
    source, status = (committed[-1].role, committed[-1].status) if committed else (START, "_")

    if state.status == "completed":
        completed_edge = (source, status, END)
        if k < len(recorded):
            return Divergence(
                ENDED_EARLY,
                after,
                holds,
                END,
                f"step {after}: the recording holds '{holds}', but the graph now ends at $END "
                f"(edge {_label(completed_edge)})",
                edge=completed_edge,
            ), notes
        if not expects_end:
            return Divergence(
                ENDED_EARLY,
                after,
                None,
                END,
                f"step {after}: the recorded thread did not end after step {k} (it was "
                f"{recording.state}), but the graph now ends at $END (edge {_label(completed_edge)})",
                edge=completed_edge,
            ), notes
        return None, notes

    suspension = _last(events, ThreadSuspended)
    if state.status != "suspended" or suspension is None:
        return Divergence(
            STOPPED, after, holds, None, f"the replayed thread is {state.status}: {state.reason}"
        ), notes

    kind = suspension.kind
    if kind == "replay-divergence":
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
                CONTINUES,
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
                ROUTE,
                s,
                holds,
                graph_role,
                f"step {s}: the recording holds '{holds}', but the graph now routes to "
                f"'{graph_role}'{via}",
                edge=edge,
            ), notes
        errors = tuple(rejected[s][-1].errors) if rejected.get(s) else ()
        return Divergence(
            REJECTED,
            s,
            holds,
            graph_role,
            f"step {s} ({holds}): the recorded reply is now rejected by the role's schema",
            errors=errors,
            edge=edge,
        ), notes

    if kind == "repairs":
        s = suspension.step or after
        step = recorded[s - 1]
        attempts = rejected.get(s, [])
        errors = tuple(attempts[-1].errors) if attempts else ()
        edge = _edge_of(started.get(s), step.role)
        if attempts and attempts[-1].reply == step.output:
            return Divergence(
                REJECTED,
                s,
                step.role,
                step.role,
                f"step {s} ({step.role}): the recorded reply is now rejected by the role's schema",
                errors=errors,
                edge=edge,
            ), notes
        max_repairs = graph.roles[step.role].max_repairs
        return Divergence(
            REPAIRS,
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

    if kind == "template":
        target = graph.edge(source, status)
        edge = (source, status, target.role) if target is not None else None
        return Divergence(
            TEMPLATE,
            after,
            holds,
            target.role if target is not None else None,
            f"step {after}: {suspension.reason}",
            edge=edge,
        ), notes

    if kind == "graph" and committed and graph.edge(source, status) is None:
        known = ", ".join(sorted(graph.graph.get(source, {}))) or "none"
        return Divergence(
            NO_EDGE,
            after,
            holds,
            None,
            f"step {after}: the recorded reply of step {k} ({source}) has status '{status}', "
            f"which no longer has an edge (edges of '{source}': {known})",
        ), notes

    if kind == "role":
        s = suspension.step or after
        if s == len(recorded) and not expects_end:
            notes.append(f"the recording ends with a $SUSPEND reply at step {s}")
            return None, notes
        holds_here = recorded[s - 1].role if s <= len(recorded) else None
        return Divergence(
            SUSPENDED,
            s,
            holds_here,
            holds_here,
            f"step {s}: {suspension.reason}; the recording "
            + ("ends at $END" if expects_end else "goes on")
            + " there",
        ), notes

    return Divergence(
        STOPPED, after, holds, None, f"step {after}: the replay stopped: {suspension.reason}"
    ), notes


def _edge_of(start: StepStarted | None, target: str | None) -> tuple[str, str, str] | None:
    if start is None or target is None:
        return None
    return (start.source, start.status, target)


# --------------------------------------------------------------------------- edge coverage


@dataclass(frozen=True)
class EdgeCount:
    """One edge of the graph and how often the recordings take it."""

    source: str
    status: str
    target: str
    recordings: int  # how many recordings take it at least once
    traversals: int  # how many times in all

    @property
    def label(self) -> str:
        return _label((self.source, self.status, self.target))

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "status": self.status,
            "target": self.target,
            "recordings": self.recordings,
            "traversals": self.traversals,
        }


@dataclass
class CoverageReport:
    """Every edge of a graph with the number of recordings taking it."""

    graph: str
    edges: list[EdgeCount]
    reports: list[ReplayReport]

    @property
    def uncovered(self) -> list[EdgeCount]:
        return [e for e in self.edges if e.recordings == 0]

    @property
    def covered(self) -> int:
        return len(self.edges) - len(self.uncovered)

    @property
    def diverging(self) -> list[ReplayReport]:
        return [r for r in self.reports if not r.same_route]

    def to_dict(self) -> dict[str, Any]:
        return {
            "graph": self.graph,
            "recordings": [
                {
                    "recording": r.name,
                    "same_route": r.same_route,
                    "divergence": None if r.divergence is None else r.divergence.to_dict(),
                }
                for r in self.reports
            ],
            "edges": [e.to_dict() for e in self.edges],
            "covered": self.covered,
            "total": len(self.edges),
            "uncovered": [e.to_dict() for e in self.uncovered],
        }

    def describe(self) -> str:
        n = len(self.reports)
        lines = [
            f"edge coverage of '{self.graph}' by {n} recording{'s' if n != 1 else ''} "
            "(how many take each edge):"
        ]
        w_src = max((len(e.source) for e in self.edges), default=0)
        w_mid = max((len(f"--{e.status}-->") for e in self.edges), default=0)
        w_dst = max((len(e.target) for e in self.edges), default=0)
        for e in self.edges:
            arrow = f"--{e.status}-->"
            mark = "   not covered" if e.recordings == 0 else ""
            line = f"  {e.recordings:>3}  {e.source:<{w_src}} {arrow:<{w_mid}} {e.target:<{w_dst}}"
            lines.append((line + mark).rstrip())
        total = len(self.edges)
        percent = f" ({100 * self.covered // total}%)" if total else ""
        lines.append(f"{self.covered} of {total} edges covered{percent}")
        if self.uncovered:
            lines.append("not covered:")
            lines.extend(f"  {e.label}" for e in self.uncovered)
        for r in self.diverging:
            lines.append(
                f"note: {r.summary()}; its edges count only up to the divergence "
                f"(run `orchestrator replay` on it for details)"
            )
        return "\n".join(lines)


def edges_taken(events: list[Event]) -> list[tuple[str, str, str]]:
    """The edges a replayed thread took, in order: into each committed step, then into $END."""
    started: dict[int, StepStarted] = {}
    taken: list[tuple[str, str, str]] = []
    source, status = START, "_"
    for event in events:
        if isinstance(event, StepStarted):
            started[event.step] = event
        elif isinstance(event, StepCommitted):
            start = started.get(event.step)
            if start is not None:
                taken.append((start.source, start.status, event.role))
            source, status = event.role, event.status
        elif isinstance(event, ThreadCompleted):
            taken.append((source, status, END))
    return taken


def coverage(
    graph: Graph | str | Path, recordings: Iterable[Recording | str | Path]
) -> CoverageReport:
    """Replay every recording through `graph` and count the edges they take.

    Only edges the recordings back count: the edges into committed steps and into `$END`.
    A recording that diverges counts up to its divergence. The `$START.resume` edge is only
    taken by a thread continued after it completed, which a recording does not mark, so it
    shows as not covered.
    """
    graph = graph if isinstance(graph, Graph) else load_graph(graph)
    reports = [replay_recording(graph, r) for r in recordings]
    counts: dict[tuple[str, str, str], list[int]] = {}
    for report in reports:
        taken = edges_taken(report.events)
        for key in set(taken):
            counts.setdefault(key, [0, 0])[0] += 1
        for key in taken:
            counts.setdefault(key, [0, 0])[1] += 1
    edges = [
        EdgeCount(source, status, edge.role, *counts.get((source, status, edge.role), [0, 0]))
        for source, by_status in graph.graph.items()
        for status, edge in by_status.items()
    ]
    return CoverageReport(graph.name, edges, reports)


__all__ = [
    "CoverageReport",
    "Divergence",
    "EdgeCount",
    "ReplayReport",
    "areplay_recording",
    "coverage",
    "edges_taken",
    "replay_recording",
]
