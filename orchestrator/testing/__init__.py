"""Testing helpers: `simulate()` runs the real engine with given replies (FORMAT.md section 10).

Routing, extraction, repairs, templates and guards are the real ones; only the actor is
scripted and the store lives in memory, so a routing test needs no network and no API key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..actors.scripted import ScriptedActor
from ..engine import AttemptRejected, StepCommitted, StepStarted
from ..runner import RunOptions, advance, start_thread
from ..spec.loader import load_graph
from ..spec.models import Graph
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

if TYPE_CHECKING:
    from ..recording import Recording
    from ..replay import ReplayReport


@dataclass(frozen=True)
class TraceStep:
    step: int
    role: str
    prompt: str
    status: str | None  # None when the step never committed
    frontmatter: dict[str, Any]
    body: str
    attempts: tuple[tuple[str, tuple[str, ...]], ...] = ()  # rejected replies and their errors


@dataclass
class Trace:
    thread_id: str
    state: str  # completed | suspended | waiting | failed | ...
    path: list[str]  # the roles in step order, then "$END" when completed
    steps: list[TraceStep]
    final: str | None
    reason: str | None
    store: MemoryStore = field(repr=False)

    @property
    def statuses(self) -> list[str]:
        return [s.status for s in self.steps if s.status is not None]

    @property
    def prompts(self) -> list[str]:
        return [s.prompt for s in self.steps]


def trace_from_store(store: Any, thread_id: str) -> Trace:
    """Read a thread's events back into a Trace."""
    from ..engine import fold

    stored = store.events(thread_id)
    events = [s.event for s in stored]
    steps: list[TraceStep] = []
    pending: dict[int, dict[str, Any]] = {}
    for event in events:
        if isinstance(event, StepStarted):
            pending[event.step] = {"role": event.role, "prompt": event.prompt, "attempts": []}
        elif isinstance(event, AttemptRejected) and event.step in pending:
            pending[event.step]["attempts"].append((event.reply, tuple(event.errors)))
        elif isinstance(event, StepCommitted):
            info = pending.pop(event.step, {"role": event.role, "prompt": "", "attempts": []})
            steps.append(
                TraceStep(
                    event.step,
                    event.role,
                    info["prompt"],
                    event.status,
                    dict(event.frontmatter),
                    event.body,
                    tuple(info["attempts"]),
                )
            )
    for number, info in sorted(pending.items()):
        steps.append(
            TraceStep(number, info["role"], info["prompt"], None, {}, "", tuple(info["attempts"]))
        )
    state = fold(events)
    return Trace(thread_id, state.status, state.path, steps, state.final, state.reason, store)


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
    store = MemoryStore()
    actor = ScriptedActor(outputs)
    thread_id = start_thread(graph, dict(inputs), store, workspace=workspace or Path.cwd())
    asyncio.run(
        advance(
            graph,
            store,
            thread_id,
            actor_for=lambda name, role: actor,
            options=RunOptions(max_steps=max_steps),
        )
    )
    return trace_from_store(store, thread_id)


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
        advance(
            graph,
            trace.store,
            trace.thread_id,
            actor_for=lambda name, role: actor,
            options=RunOptions(max_steps=max_steps),
            resume=True,
            message=message,
        )
    )
    return trace_from_store(trace.store, trace.thread_id)


def reply(status: str | None = None, body: str = "", **fields: Any) -> str:
    """Build a reply text from fields: `reply(status="ready", plan="...")`."""
    from ..extract import format_reply

    return format_reply(status, fields, body)


def replay(graph: Graph | str | Path, recording: Recording | str | Path) -> ReplayReport:
    """Replay a recording through a graph (`orchestrator.replay.replay_recording`): the report
    says "same route" or gives the first divergence; `.trace` is the replayed thread."""
    from ..replay import replay_recording

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
