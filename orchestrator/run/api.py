"""The Python API of a thread's life (docs/format.md section 10), through the session layer.

Threads are durable by default: they live in the same store the command line uses
(`store=` a folder, else `$ORCHESTRATOR_HOME`, else `./.orchestrator/`), so a thread started
here can be answered, resumed, cancelled or shown from another process or from the command
line, and the other way round. Pass `store=MemoryStore()` for a thread that lives in memory only.

Errors raise: `SessionError` (a request that cannot be carried out: no such thread, a broken
graph, no credentials), `InputError` (inputs that do not fit the graph), `Refused` (a request
the thread's state does not allow, or a person's answer that is invalid: `.errors` says why),
`GraphError` (a graph that cannot be loaded), `ThreadBusy` (another process runs the thread),
`StoreError` (a full disk, a damaged or read-only store: the message names the file).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from ..core.steps import StepView, ThreadView, thread_view
from ..extract import format_reply
from ..recording import Recording, load_recording
from ..spec.loader import load_graph
from ..spec.models import Graph
from ..store.base import EventStore, StoredEvent, ThreadRow
from ..story import story_json
from .options import ActorFor, RunOptions, ThreadResult
from .session import Session, open_store
from .waiting import Question

StoreArg = EventStore | str | os.PathLike[str] | None

# What the command line prints as "note: ..." (a dirty checkout, a changed graph, a worktree
# that could not be committed) goes to this logger; with no logging set up, Python prints
# warnings on stderr.
log = logging.getLogger("orchestrator")


def _session(store: StoreArg) -> Session:
    return Session(open_store(store), notify=log.warning)


def _graph(graph: Graph | str | os.PathLike[str]) -> Graph:
    return graph if isinstance(graph, Graph) else load_graph(graph)


def _options(options: RunOptions | None, model: str | None, max_steps: int | None) -> RunOptions:
    options = options or RunOptions()
    options.model = model or options.model
    options.max_steps = max_steps or options.max_steps
    return options


async def arun_thread(
    graph: Graph | str | os.PathLike[str],
    inputs: Mapping[str, Any] | None = None,
    *,
    workspace: str | os.PathLike[str] | None = None,
    store: StoreArg = None,
    model: str | None = None,
    max_steps: int | None = None,
    in_place: bool = False,
    replay: Recording | str | os.PathLike[str] | None = None,
    actor_for: ActorFor | None = None,
    options: RunOptions | None = None,
) -> ThreadResult:
    """Start a thread and advance it as far as it goes (see `run_thread`)."""
    graph = _graph(graph)
    recording = replay if isinstance(replay, Recording | None) else load_recording(Path(replay))
    session = _session(store)
    folder = session.preflight(
        graph,
        workspace=workspace,
        replay=recording is not None or actor_for is not None,
        model=model or (options.model if options is not None else None),
    )
    values = dict(inputs or {})
    if recording is not None and not values:
        values = dict(recording.inputs)
    started = session.start(
        graph, values, folder=folder, in_place=in_place, replay=recording is not None
    )
    return await session.advance(
        graph,
        started.thread_id,
        options=_options(options, model, max_steps),
        actor_for=actor_for,
        replay=recording,
    )


def run_thread(
    graph: Graph | str | os.PathLike[str],
    inputs: Mapping[str, Any] | None = None,
    **kw: Any,
) -> ThreadResult:
    """Start a thread of `graph` (a Graph, a path, or a graph name) and advance it.

    Returns when the thread completes, suspends, waits for a person, fails or is cancelled:
    `result.thread_id`, `result.state`, `result.final`, `result.reason`. Keywords: `workspace`,
    `store`, `model`, `max_steps`, `in_place`, `replay` (a recording), `actor_for`, `options`.
    """
    return asyncio.run(arun_thread(graph, inputs, **kw))


def resume_thread(
    thread_id: str,
    *,
    message: str | None = None,
    store: StoreArg = None,
    graph: Graph | str | os.PathLike[str] | None = None,
    model: str | None = None,
    max_steps: int | None = None,
    actor_for: ActorFor | None = None,
    options: RunOptions | None = None,
) -> ThreadResult:
    """Continue a suspended, interrupted or completed thread, with an optional message."""
    session = _session(store)
    row = session.thread(thread_id)
    loaded = _graph(graph) if graph is not None else session.graph_for(row)
    return asyncio.run(
        session.resume(
            loaded,
            row.id,
            message=message,
            options=_options(options, model, max_steps),
            actor_for=actor_for,
        )
    )


def answer_thread(
    thread_id: str,
    *,
    status: str | None = None,
    fields: Mapping[str, Any] | None = None,
    body: str = "",
    text: str | None = None,
    store: StoreArg = None,
    graph: Graph | str | os.PathLike[str] | None = None,
    actor_for: ActorFor | None = None,
    options: RunOptions | None = None,
) -> ThreadResult:
    """Answer for the person a waiting thread waits for, then continue the thread.

    Give `status` and `fields` (and an optional `body`), or the whole reply as `text`.
    """
    session = _session(store)
    row = session.thread(thread_id)
    loaded = _graph(graph) if graph is not None else session.graph_for(row)
    reply = text if text is not None else format_reply(status, dict(fields or {}), body)
    return asyncio.run(
        session.answer(loaded, row.id, reply, options=options or RunOptions(), actor_for=actor_for)
    )


def cancel_thread(
    thread_id: str, *, store: StoreArg = None, reason: str = "cancelled by the user"
) -> ThreadInfo:
    """Cancel a thread for good; a process running it stops its step in flight."""
    session = _session(store)
    row = session.cancel(thread_id, reason)
    return ThreadInfo(row, session.store.events(row.id))


@dataclass(frozen=True)
class ThreadInfo:
    """What `threads show` shows: the summary row, the log and its typed view."""

    row: ThreadRow
    events: list[StoredEvent]
    question: Question | None = None  # what a waiting thread asks, and the answers it takes

    @cached_property
    def view(self) -> ThreadView:
        return thread_view([s.event for s in self.events])

    @property
    def id(self) -> str:
        return self.row.id

    @property
    def state(self) -> str:
        return self.view.state.status

    @property
    def steps(self) -> tuple[StepView, ...]:
        return self.view.steps

    @property
    def cost_usd(self) -> float:
        return self.view.state.cost_usd

    @property
    def final(self) -> str | None:
        return self.view.state.final

    @property
    def reason(self) -> str | None:
        return self.view.state.reason

    def to_dict(self) -> dict[str, Any]:
        return story_json(self.row, self.events, self.question)


def get_thread(thread_id: str, *, store: StoreArg = None) -> ThreadInfo:
    """A thread's state, steps and cost (an id, or a unique prefix or suffix of one); for a
    thread waiting for a person, `.question` (the prompt, the statuses and fields it takes)."""
    session = Session(open_store(store, readonly=True))
    row = session.thread(thread_id)
    return ThreadInfo(row, session.store.events(row.id), session.question(row.id))


__all__ = [
    "ThreadInfo",
    "answer_thread",
    "arun_thread",
    "cancel_thread",
    "get_thread",
    "resume_thread",
    "run_thread",
]
