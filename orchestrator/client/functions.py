"""The functions of docs/format.md section 10: thin wrappers over the client (client/aio.py).

Each opens a client, does one thing and closes it (a store it opened is closed: no writer thread
or file handle outlives the call); the sync ones run on the client's own loop, so they work inside
a running event loop too. A `RunOptions` passed in is copied, never changed.

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

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..actors.recording import Recording
from ..core.steps import StepView, ThreadView, thread_view
from ..definition.models import Graph
from ..run.options import ActorFor, RunOptions, ThreadResult
from ..run.session import Session, open_store
from ..run.waiting import Question
from ..store.base import EventStore, StoredEvent, ThreadRow
from ..views.story import story_json
from .aio import AsyncOrchestrator
from .sync import Orchestrator
from .thread import Thread

StoreArg = EventStore | str | os.PathLike[str] | None

# What the command line prints as "note: ..." (a dirty checkout, a changed graph, a worktree
# that could not be committed) goes to this logger; with no logging set up, Python prints
# warnings on stderr.
log = logging.getLogger("orchestrator")


def _result(thread: Thread) -> ThreadResult:
    """The client's `Thread` as section 10's `ThreadResult` (the same facts)."""
    return ThreadResult(
        thread.id,
        thread.state,
        thread.final,
        thread.reason,
        thread.steps,
        thread.cost_usd,
        list(thread.path),
        thread.kind,
        ending=thread.ending,
        recovery=thread.recovery,
        worktree=dict(thread.worktree) if thread.worktree is not None else None,
    )


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
    title: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> ThreadResult:
    """Start a thread and advance it as far as it goes: `run_thread` inside an event loop.

    The parameters are `run_thread`'s: `graph`, `inputs`, `workspace`, `store`, `model`,
    `max_steps`, `in_place`, `replay`, `actor_for`, `options`, `title`, `labels`.
    """
    async with AsyncOrchestrator(store) as orch:
        thread = await orch.run(
            graph,
            inputs,
            workspace=workspace,
            in_place=in_place,
            model=model,
            max_steps=max_steps,
            replay=replay,
            actor_for=actor_for,
            options=options,
            title=title,
            labels=labels,
        )
    return _result(thread)


def run_thread(
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
    title: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> ThreadResult:
    """Start a thread of `graph` and advance it.

    Returns when the thread completes, suspends, waits for a person, fails or is cancelled:
    `result.thread_id`, `result.state`, `result.final`, `result.reason`.

    - `graph`: a Graph, a graph file's path, or a graph name (looked up as `orchestrator run`
      does).
    - `inputs`: the thread's inputs (the graph's `inputs` schema; `{"task": ...}` without one).
    - `workspace`: the folder the thread works in (default: the current directory).
    - `store`: where the thread lives: an `EventStore`, a folder, or None for
      `$ORCHESTRATOR_HOME` else `./.orchestrator/` (`MemoryStore()` for memory only).
    - `model`: a model alias or id for every role (as `--model`).
    - `max_steps`: at most this many steps in this run (as `--max-steps`).
    - `in_place`: work in `workspace` itself, not in a git worktree of its own.
    - `replay`: a `Recording` or a recording file: its replies stand in for the actors.
    - `actor_for`: `(role name, Role) -> actor`, who plays each role (default: the role's own
      `actor:`).
    - `options`: a `RunOptions` (callbacks, timeouts, ...); `model` and `max_steps` given here
      win over its own, in a copy: the object passed is not changed.
    - `title`: what the thread is for, in a line (default: the first line of the task or of
      the first text input); `labels`: `key: value` pairs to find it by (docs/threads.md).
    """
    with Orchestrator(store) as orch:
        thread = orch.run(
            graph,
            inputs,
            workspace=workspace,
            in_place=in_place,
            model=model,
            max_steps=max_steps,
            replay=replay,
            actor_for=actor_for,
            options=options,
            title=title,
            labels=labels,
        )
    return _result(thread)


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
    """Continue a suspended, interrupted or completed thread, with an optional message.

    - `thread_id`: an id, or a unique prefix or suffix of one.
    - `message`: added to the pending prompt (a completed thread continues through
      `$START.resume` with it).
    - `store`: where the thread lives (as `run_thread`).
    - `graph`: the graph to continue with, if not the one the thread started with.
    - `model`, `max_steps`, `actor_for`, `options`: as `run_thread` (the `options` passed are
      not changed).
    """
    with Orchestrator(store) as orch:
        thread = orch.resume(
            thread_id,
            message=message,
            graph=graph,
            model=model,
            max_steps=max_steps,
            actor_for=actor_for,
            options=options,
        )
    return _result(thread)


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

    - `thread_id`: an id, or a unique prefix or suffix of one.
    - `status`, `fields`, `body`: the answer's status, frontmatter fields and body; or
    - `text`: the whole reply (frontmatter and body), instead of those three.
    - `store`, `graph`, `actor_for`, `options`: as `resume_thread`.
    """
    with Orchestrator(store) as orch:
        thread = orch.answer(
            thread_id,
            status=status,
            fields=fields,
            body=body,
            text=text,
            graph=graph,
            actor_for=actor_for,
            options=options,
        )
    return _result(thread)


def cancel_thread(
    thread_id: str, *, store: StoreArg = None, reason: str = "cancelled by the user"
) -> ThreadInfo:
    """Cancel a thread for good; a process running it stops its step in flight."""
    with Session(open_store(store), notify=log.warning) as session:
        row = session.cancel(thread_id, reason)
        return ThreadInfo(row, session.events(row.id))


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
    with Session(open_store(store, readonly=True)) as session:
        row = session.thread(thread_id)
        return ThreadInfo(row, session.events(row.id), session.question(row.id))


__all__ = [
    "ThreadInfo",
    "answer_thread",
    "arun_thread",
    "cancel_thread",
    "get_thread",
    "resume_thread",
    "run_thread",
]
