"""What `orchestrator mcp` can do, as plain async methods over the session layer.

Each method takes JSON values and returns JSON values; what a caller did wrong (an unknown
thread, a graph with errors, inputs that do not fit, an answer the role would refuse) raises an
error of the family (`orchestrator.errors`), which the server words as the command line and the
web page word it (`word`) and returns as a tool error. The server keeps running whatever a call
does.
What may happen to a thread (which steps may be answered, resume and whether it needs a
message, cancel, the steps a fork may be made at) is `allowed()`'s answer (core/allowed.py): `thread_state` shows it, and a
request it refuses is refused with its reason before anything runs.

Threads run in this process, in the background: `start_thread`, `answer_thread`,
`resume_thread` and `fork_thread` wait up to `wait_seconds` for the thread to stop (complete, suspend, wait for a
person, fail) and otherwise answer `running`; `thread_state` tells later how it went. They live
in the same store as the command line's threads, so `orchestrator threads ...` sees them too.
When the server stops, a thread still running is interrupted and can be resumed.

Every graph, workspace and recording a caller names passes `Confinement` (confine.py) before
it is read: graphs come only from the graph folders, workspaces and recordings only from the
server's folder, and a graph with an unconfined role runs only where the server allows it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..actors.recording import RecordingError, load_recording
from ..core.allowed import Allowed
from ..core.events import ThreadStatus
from ..core.titles import ThreadQuery
from ..definition.loader import bundled_graphs_dir, load_graph
from ..definition.models import Graph
from ..definition.reserved import GRAPH_SUFFIXES
from ..errors import GraphError, Refused
from ..extract import format_reply
from ..linter import lint
from ..run.contract import ThreadSession
from ..run.options import RunOptions, ThreadResult
from ..run.session import Session, open_store
from ..views.story import story_json, story_text
from .confine import Confinement, inside

DEFAULT_WAIT = 60.0


class OperationFailed(Refused):
    """A request this server does not carry out (a thread it already runs, an answer the
    role would refuse); nothing was changed."""


class Operations:
    def __init__(
        self,
        store: str | os.PathLike[str] | None = None,
        cwd: Path | None = None,
        confinement: Confinement | None = None,
    ):
        self.store_dir = store
        self.cwd = (cwd or Path.cwd()).resolve()
        self.confine = confinement or Confinement.of(self.cwd)
        self.notes: list[str] = []
        self._session: ThreadSession | None = None  # held as the contract (run/contract.py)
        self._running: dict[str, asyncio.Task[ThreadResult]] = {}

    @property
    def session(self) -> ThreadSession:
        if self._session is None:
            self._session = Session(open_store(self.store_dir), notify=self.notes.append)
        return self._session

    # ------------------------------------------------------------------ graphs

    async def list_graphs(self) -> list[dict[str, Any]]:
        """The graphs in ./graphs of the server's folder, the bundled ones, then those of the
        folders `--allow-graphs` added."""
        found: dict[str, dict[str, Any]] = {}
        bundled = bundled_graphs_dir().resolve()
        project = (self.cwd / "graphs").resolve()
        for folder in self.confine.graph_folders:
            origin = (
                "project" if folder == project else "bundled" if folder == bundled else "allowed"
            )
            if not folder.is_dir():
                continue
            for path in sorted(folder.iterdir()):
                if path.suffix not in GRAPH_SUFFIXES or path.stem in found:
                    continue
                if not inside(path.resolve(), self.confine.graph_folders):  # a link out
                    continue
                entry: dict[str, Any] = {"name": path.stem, "path": str(path), "from": origin}
                try:
                    graph = load_graph(path)
                    entry["description"] = graph.description
                    entry["inputs"] = graph.input_schema
                except GraphError as exc:
                    entry["problems"] = len(exc.problems)
                found[path.stem] = entry
        return list(found.values())

    async def validate_graph(self, graph: str) -> dict[str, Any]:
        path = self.confine.graph_file(graph)  # refused before anything is read
        try:
            loaded = load_graph(path)
            self.confine.check_children(loaded)
            problems = lint(loaded)
        except GraphError as exc:
            problems = self.confine.redact(exc.problems)
        errors = sum(1 for p in problems if p.severity == "error")
        return {
            "graph": graph,
            "valid": errors == 0,
            "errors": errors,
            "problems": [p.to_dict() for p in problems],
        }

    # ------------------------------------------------------------------ a thread's life

    async def start_thread(
        self,
        graph: str,
        inputs: dict[str, Any] | None = None,
        workspace: str | None = None,
        replay: str | None = None,
        in_place: bool = False,
        model: str | None = None,
        wait_seconds: float = DEFAULT_WAIT,
        title: str | None = None,
        labels: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        loaded = self._load(graph)
        where = self.confine.work_path(workspace, "workspace") if workspace else self.cwd
        recording = None
        if replay is not None:
            try:
                recording = load_recording(self.confine.work_path(replay, "recording"))
            except OSError as exc:
                raise RecordingError(f"cannot read the recording {replay}: {exc}") from None
        values = dict(inputs or {})
        if recording is not None and not values:
            values = dict(recording.inputs)
        folder = self.session.preflight(
            loaded,
            workspace=where,
            replay=recording is not None,
            model=model,
        )
        started = self.session.start(
            loaded,
            values,
            folder=folder,
            in_place=in_place,
            replay=recording is not None,
            title=title,
            labels=labels,
        )
        options = RunOptions(model=model, interactive=False)
        return await self._run(
            started.thread_id,
            lambda: self.session.advance(
                loaded, started.thread_id, options=options, replay=recording
            ),
            wait_seconds,
        )

    async def thread_state(self, thread: str) -> dict[str, Any]:
        row = self.session.thread(thread)
        question = self.session.question(row.id)
        data = story_json(row, self.session.events(row.id), question)
        data["allowed"] = self.session.allowed(row.id).to_dict()
        data.pop("events", None)
        if row.id in self._running:
            data["running_here"] = True
        return data

    async def thread_story(self, thread: str, full: bool = False) -> str:
        row = self.session.thread(thread)
        question = self.session.question(row.id)
        return story_text(row, self.session.events(row.id), question=question, full=full)

    async def list_threads(
        self,
        state: str | None = None,
        graph: str | None = None,
        labels: dict[str, str] | None = None,
        search: str | None = None,
    ) -> list[dict[str, Any]]:
        query = ThreadQuery(state, graph, dict(labels or {}), search)
        return [row.to_dict() for row in self.session.threads(state, query)]

    async def answer_thread(
        self,
        thread: str,
        status: str | None = None,
        fields: dict[str, Any] | None = None,
        body: str = "",
        text: str | None = None,
        wait_seconds: float = DEFAULT_WAIT,
        step: int | None = None,
    ) -> dict[str, Any]:
        reply = text if text is not None else format_reply(status, dict(fields or {}), body)
        row = self.session.thread(thread)
        graph = self.session.graph_for(row)
        self.confine.check_sandboxed(graph)
        asked = self.session.allowed(row.id, graph)  # which steps may be answered
        if asked.answering(step) is None:
            raise OperationFailed(_no_answer(asked, step))
        errors = self.session.check_answer(graph, row.id, reply, step)
        if errors:
            raise OperationFailed("the answer was not taken", tuple(errors))
        return await self._run(
            row.id,
            lambda: self.session.answer(graph, row.id, reply, step=step, options=RunOptions()),
            wait_seconds,
        )

    async def resume_thread(
        self, thread: str, message: str | None = None, wait_seconds: float = DEFAULT_WAIT
    ) -> dict[str, Any]:
        row = self.session.thread(thread)
        graph = self.session.graph_for(row)
        self.confine.check_sandboxed(graph)
        resume = self.session.allowed(row.id, graph).resume
        if not resume.ok or (resume.needs_message and not (message or "").strip()):
            raise OperationFailed(resume.why)
        return await self._run(
            row.id,
            lambda: self.session.resume(graph, row.id, message=message, options=RunOptions()),
            wait_seconds,
        )

    async def fork_thread(
        self,
        thread: str,
        at: int | None = None,
        status: str | None = None,
        fields: dict[str, Any] | None = None,
        body: str = "",
        text: str | None = None,
        message: str | None = None,
        reuse: bool = False,
        wait_seconds: float = DEFAULT_WAIT,
    ) -> dict[str, Any]:
        """Fork the thread at step `at` and run the fork (docs/format.md section 20); which
        steps may be forked at is `allowed()`'s, the reply is judged as an answer is."""
        row = self.session.thread(thread)
        graph = self.session.graph_for(row)
        self.confine.check_sandboxed(graph)
        fork = self.session.allowed(row.id, graph)
        if not fork.fork.ok:
            raise OperationFailed(fork.fork.why)
        if at is not None and at not in fork.fork_steps:
            last = fork.fork_steps[-1]
            raise OperationFailed(f"thread {row.id} may be forked at steps 1 to {last}, not {at}")
        reply = text
        if reply is None and (status is not None or fields or body):
            reply = format_reply(status, dict(fields or {}), body)
        new_id = self.session.fork(
            row.id, at=at, reply=reply, message=message, reuse=reuse, graph=graph
        )
        data = await self._run(
            new_id, lambda: self.session.advance(graph, new_id, options=RunOptions()), wait_seconds
        )
        return {**data, "forked_from": {"thread": row.id, "step": at or fork.fork_steps[-1]}}

    async def cancel_thread(
        self, thread: str, reason: str = "cancelled by the user"
    ) -> dict[str, Any]:
        cancel = self.session.allowed(thread).cancel
        if not cancel.ok:
            raise OperationFailed(cancel.why)
        row = self.session.cancel(thread, reason)
        running = self._running.get(row.id)
        if running is not None:  # its runner notices the cancel and stops the step in flight
            await asyncio.wait({running}, timeout=30)
        return row.to_dict()

    async def close(self) -> None:
        """Interrupt the threads still running here (they stay resumable)."""
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._session is not None:  # its store's connections and writer thread
            self._session.close()
            self._session = None

    # ------------------------------------------------------------------ helpers

    async def _run(
        self, thread_id: str, advance: Callable[[], Awaitable[ThreadResult]], wait: float
    ) -> dict[str, Any]:
        if thread_id in self._running and not self._running[thread_id].done():
            raise OperationFailed(f"thread {thread_id} is already running in this server")
        self.notes.clear()
        task = asyncio.ensure_future(advance())
        self._running[thread_id] = task
        task.add_done_callback(lambda _: self._running.pop(thread_id, None))
        done, _ = await asyncio.wait({task}, timeout=max(0.0, wait))
        if not done:
            return {"thread": thread_id, "state": "running", "notes": list(self.notes)}
        result = task.result()
        data = result.to_dict()
        if result.state == ThreadStatus.WAITING:
            question = self.session.question(thread_id)
            if question is not None:
                data["waiting"] = question.to_dict()
        if self.notes:
            data["notes"] = list(self.notes)
        return data

    def _load(self, graph: str) -> Graph:
        """A graph a thread may start on: in the graph folders, free of errors, confined."""
        path = self.confine.graph_file(graph)
        try:
            loaded = load_graph(path)
        except GraphError as exc:  # told without the text of files outside the graph folders
            raise GraphError(self.confine.redact(exc.problems)) from None
        self.confine.check_children(loaded)
        problems = [p for p in lint(loaded) if p.severity == "error"]
        if problems:
            raise GraphError(problems)
        self.confine.check_sandboxed(loaded)
        return loaded


def _no_answer(asked: Allowed, step: int | None) -> str:
    if step is None or not asked.answers:
        return asked.why_no_answer
    steps = ", ".join(str(a.top_step) for a in asked.answers)
    return (
        f"step {step} of thread {asked.thread_id} does not wait for an answer (these do: {steps})"
    )
