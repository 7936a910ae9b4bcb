"""Replaying a recording through a graph: the real engine, a replay actor, an in-memory store."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from ..actors.recording import Recording, load_recording
from ..core.events import SuspendKind, ThreadStatus
from ..core.outcomes import ResumeRequested
from ..definition.loader import load_graph
from ..definition.models import END, Graph
from ..run.options import RunOptions
from ..run.preflight import InputError
from ..run.session import Session
from ..store.memory import MemoryStore
from .compare import first_divergence
from .report import Divergence, DivergenceKind, ReplayReport
from .trace import Trace, trace_from_store

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
    session = Session(MemoryStore())
    store = session.store
    with tempfile.TemporaryDirectory(prefix="orchestrator-replay-") as tmp:
        folder = Path(workspace or tmp).resolve()
        try:
            thread_id = session.start(graph, dict(recording.inputs), folder=folder).thread_id
        except InputError as exc:
            return _inputs_report(graph, recording, hash_state, notes, str(exc))
        # max_steps must not cut a long recording short: it is a guard, not a route.
        options = RunOptions(max_steps=max(graph.limits.max_steps, len(recording.steps) + 1))
        result = await session.advance(graph, thread_id, options=options, replay=recording)
        # Each resume grants the limits anew, so every round commits at least one step; the
        # bound only guards against a graph whose limits trip before any step.
        for _ in range(len(recording.steps) + len(recording.resumed) + 1):
            mark = recording.resume_at(result.steps, result.ending)
            if result.state == ThreadStatus.SUSPENDED and result.kind == SuspendKind.LIMIT:
                notes.append(f"{(result.reason or '').split(';')[0]}; the replay resumed past it")
                message = None
            elif mark is not None:
                # The recorded thread ended here too, and its user continued it: so does the
                # replay, with the recorded message (whether the endings match: compare).
                message = mark.message
                notes.append(
                    f"the recorded thread ended after step {mark.after} and was resumed "
                    + (f"with message {mark.message!r}" if mark.message else "without a message")
                    + "; so was the replay"
                )
            else:
                break
            result = await session.advance(
                graph,
                thread_id,
                options=options,
                replay=recording,
                first=ResumeRequested(message),
            )
    events = [stored.event for stored in store.events(thread_id)]
    divergence, more = first_divergence(graph, recording, events)
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
        DivergenceKind.INPUTS,
        1,
        first,
        None,
        f"the recorded inputs no longer satisfy the graph's inputs, so no thread can start: {error}",
    )
    empty = Trace("", ThreadStatus.NEW, [], [], None, error, MemoryStore())
    return ReplayReport(recording, graph.name, hash_state, divergence, empty, notes)
