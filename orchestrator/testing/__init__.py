"""Testing helpers: `simulate()` runs the real engine with given replies (docs/format.md section 10).

Routing, extraction, repairs, templates and guards are the real ones; only the actor is
scripted and the store lives in memory, so a routing test needs no network and no API key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..actors.scripted import ScriptedActor
from ..core.outcomes import ResumeRequested
from ..extract import format_reply
from ..recording import Recording
from ..replay import ReplayReport, replay_recording
from ..run.options import RunOptions
from ..run.session import Session
from ..spec.loader import load_graph
from ..spec.models import Graph
from ..store.memory import MemoryStore
from ..trace import Trace, TraceStep, trace_from_store
from .asserts import (
    assert_path,
    assert_prompt,
    assert_same_route,
    assert_state,
    assert_statuses,
    describe_trace,
    recording_files,
    recordings,
)


def simulate(
    graph: Graph | str | Path,
    outputs: Iterable[str] | Mapping[str, Iterable[str]],
    inputs: Mapping[str, Any] | None = None,
    *,
    max_steps: int | None = None,
    workspace: str | Path | None = None,
) -> Trace:
    """Run `graph` with scripted replies: a list in step order, or a list per role name."""
    if not isinstance(graph, Graph):
        graph = load_graph(graph)
    if inputs is None:
        inputs = {"task": "(simulated task)"} if graph.inputs is None else {}
    session = Session(MemoryStore())
    actor = ScriptedActor(outputs)
    folder = Path(workspace or Path.cwd()).resolve()
    thread_id = session.start(graph, dict(inputs), folder=folder).thread_id
    asyncio.run(
        session.advance(
            graph,
            thread_id,
            actor_for=lambda name, role: actor,
            options=RunOptions(max_steps=max_steps),
        )
    )
    return trace_from_store(session.store, thread_id)


def resume(
    trace: Trace,
    graph: Graph | str | Path,
    outputs: Iterable[str] | Mapping[str, Iterable[str]],
    *,
    message: str | None = None,
    max_steps: int | None = None,
) -> Trace:
    """Resume a simulated thread with more scripted replies."""
    if not isinstance(graph, Graph):
        graph = load_graph(graph)
    actor = ScriptedActor(outputs)
    asyncio.run(
        Session(trace.store).advance(
            graph,
            trace.thread_id,
            actor_for=lambda name, role: actor,
            options=RunOptions(max_steps=max_steps),
            first=ResumeRequested(message),
        )
    )
    return trace_from_store(trace.store, trace.thread_id)


def reply(status: str | None = None, body: str = "", **fields: Any) -> str:
    """Build a reply text from fields: `reply(status="ready", plan="...")`."""
    return format_reply(status, fields, body)


def replay(graph: Graph | str | Path, recording: Recording | str | Path) -> ReplayReport:
    """Replay a recording through a graph (`orchestrator.replay.replay_recording`): the report
    says "same route" or gives the first divergence; `.trace` is the replayed thread."""
    return replay_recording(graph, recording)


__all__ = [
    "Trace",
    "TraceStep",
    "assert_path",
    "assert_prompt",
    "assert_same_route",
    "assert_state",
    "assert_statuses",
    "describe_trace",
    "recording_files",
    "recordings",
    "replay",
    "reply",
    "resume",
    "simulate",
    "trace_from_store",
]
