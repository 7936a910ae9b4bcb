"""Testing helpers: `simulate()` runs the real engine with given replies (docs/format.md section 10).

Routing, extraction, repairs, templates and guards are the real ones; the actors are scripted
and the store lives in memory, so a routing test needs no network and no API key. With replies
per role, a role the script does not name whose actor is a Python function
(`actor: {python: ...}`) runs that function, as a real run would: a graph's own code plays beside
the scripted roles. Every other role takes scripted replies only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..actors.python import PythonActor
from ..actors.recording import Recording
from ..actors.scripted import ScriptedActor
from ..core.outcomes import ResumeRequested
from ..definition.loader import load_graph
from ..definition.models import Graph, Role
from ..extract import format_reply
from ..replay import ReplayReport, replay_recording
from ..replay.trace import Trace, TraceStep, trace_from_store
from ..run.options import RunOptions
from ..run.session import Session
from ..store.memory import MemoryStore
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
    actor_for = _actors(outputs)
    folder = Path(workspace or Path.cwd()).resolve()
    thread_id = session.start(graph, dict(inputs), folder=folder).thread_id
    asyncio.run(
        session.advance(
            graph,
            thread_id,
            actor_for=actor_for,
            options=RunOptions(max_steps=max_steps),
        )
    )
    return trace_from_store(session.store, thread_id)


def _actors(outputs: Iterable[str] | Mapping[str, Iterable[str]]) -> Callable[[str, Role], Any]:
    """Who plays each role in a simulation: the script, except a Python actor's role that a
    script per role does not name (a list of replies scripts every step, so every role)."""
    scripted = ScriptedActor(outputs)
    named = set(outputs) if isinstance(outputs, Mapping) else None

    def actor_for(name: str, role: Role) -> Any:
        if named is not None and name not in named and role.python_ref is not None:
            return PythonActor(role.python_ref, role.folder)
        return scripted

    return actor_for


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
    asyncio.run(
        Session(trace.store).advance(
            graph,
            trace.thread_id,
            actor_for=_actors(outputs),
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
