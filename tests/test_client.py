"""The client of docs/format.md section 10b (docs/api.md), on local threads.

A real SQLite store, a Python actor from the graph's folder and a person's step: `Orchestrator`
and `AsyncOrchestrator` run, answer, resume, cancel, get and list threads; `events` follows a
thread while it runs (the person's wait, then the answer); nothing the client opened outlives
its `with` block (threads and file descriptors counted, with a control that shows the count
sees a store left open); the section 10 functions work inside a running event loop and leave
the caller's `RunOptions` as it was; mistakes raise the typed errors.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import orchestrator
from orchestrator import (
    AsyncOrchestrator,
    GraphError,
    HumanWaiting,
    InputError,
    MemoryStore,
    Orchestrator,
    Refused,
    RunOptions,
    SessionError,
    StepCommitted,
    StoredEvent,
    Thread,
    ThreadCompleted,
    ThreadStarted,
    ThreadStatus,
    answer_thread,
    resume_thread,
    run_thread,
)

ASK = """
name: ask
description: A drafter drafts, a person decides.
inputs:
  type: object
  properties:
    topic: { type: string }
  required: [topic]
roles:
  drafter:
    description: Drafts
    goal: You draft.
    actor: { python: "drafting:draft" }
    frontmatter:
      type: object
      properties:
        $status: { enum: [ready] }
        draft: { type: string }
      required: [$status, draft]
  person:
    description: Decides
    goal: You decide.
    actor: human
    frontmatter:
      type: object
      properties:
        $status: { enum: ["yes", "no"] }
        why: { type: string }
      required: [$status, why]
graph:
  $START:
    _: { role: drafter, prompt: "Draft {{{$inputs.topic}}}" }
    resume: { role: drafter, prompt: "Again: {{{$inputs.message}}}" }
  drafter:
    ready: { role: person, prompt: "Ship {{{draft}}}?" }
  person:
    "yes": { role: $END, prompt: "Shipped: {{{why}}}" }
    "no": { role: drafter, prompt: "Redo: {{{why}}}" }
"""

DRAFTING = """
from orchestrator.actors.python import ActorCall


def draft(call: ActorCall) -> dict:
    return {"$status": "ready", "draft": "a draft of " + call.inputs["topic"]}
"""


@pytest.fixture
def ask(write_graph: Callable[..., Path]) -> Path:
    path = write_graph(ASK)
    (path.parent / "drafting.py").write_text(DRAFTING)
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def open_fds() -> int:
    """The process's open file descriptors, once what earlier tests left unreferenced (sockets,
    files) is collected: otherwise a collection during the test lowers the count by itself."""
    gc.collect()
    return len(os.listdir("/proc/self/fd"))


def kinds(events: list[StoredEvent]) -> list[str]:
    return [type(s.event).__name__ for s in events]


# --------------------------------------------------------------------------- sync


def test_the_sync_client_runs_answers_and_reads_a_thread(
    ask: Path, workspace: Path, tmp_path: Path
) -> None:
    with Orchestrator(store=tmp_path / "store") as orch:
        t = orch.run(ask, {"topic": "the plan"}, workspace=workspace)
        assert isinstance(t, Thread)
        assert t.state == ThreadStatus.WAITING and t.graph == "ask"
        assert t.question is not None and t.question.role_name == "person"
        assert t.question.prompt == "Ship a draft of the plan?"
        assert orch.list(state="waiting")[0].id == t.id
        assert orch.list(graph="other") == []
        done = orch.answer(t.id, status="yes", fields={"why": "good"})
        assert done.state == ThreadStatus.COMPLETED
        assert done.final == "Shipped: good" and done.path == ("drafter", "person", "$END")
        got = orch.get(t.id[:8])  # a unique prefix, as on the command line
        assert got.id == t.id and got.state == "completed" and got.steps == 2
        assert got.final == done.final and got.path == done.path and got.question is None
        again = orch.resume(t.id, message="once more")
        assert again.state == ThreadStatus.WAITING and again.steps == 3
        cancelled = orch.cancel(t.id, reason="enough")
        assert cancelled.state == ThreadStatus.CANCELLED and cancelled.reason == "enough"
        assert kinds(list(orch.events(t.id)))[-1] == "ThreadCancelled"
        assert not hasattr(t, "status")  # one name for a thread's state


def test_events_follow_a_running_thread_through_a_wait_and_its_answer(
    ask: Path, workspace: Path, tmp_path: Path
) -> None:
    with Orchestrator(store=tmp_path / "store") as orch:
        t = orch.run(ask, {"topic": "x"}, workspace=workspace, wait=False)
        assert t.state == ThreadStatus.RUNNING  # it advances in the client's background
        seen: list[StoredEvent] = []
        for stored in orch.events(t.id, follow=True):
            seen.append(stored)
            if isinstance(stored.event, HumanWaiting):  # answered while the loop follows
                orch.answer(t.id, status="yes", fields={"why": "seen"})
        names = kinds(seen)
        assert names[0] == "ThreadStarted" and names[-1] == "ThreadCompleted"
        waited = names.index("HumanWaiting")
        person = [s.event for s in seen[waited:] if isinstance(s.event, StepCommitted)]
        assert [e.role for e in person] == ["person"] and person[0].status == "yes"
        assert [s.seq for s in seen] == list(range(1, len(seen) + 1))  # each once, in order
        assert isinstance(seen[0].event, ThreadStarted) and isinstance(
            seen[-1].event, ThreadCompleted
        )
        later = list(orch.events(t.id, after=waited + 1))
        assert [s.seq for s in later] == [s.seq for s in seen[waited + 1 :]]


def test_the_sync_client_works_inside_a_running_event_loop(
    ask: Path, workspace: Path, tmp_path: Path
) -> None:
    async def handler() -> Thread:  # as a web framework's request handler would call it
        asyncio.get_running_loop()
        with Orchestrator(store=tmp_path / "store") as orch:
            t = orch.run(ask, {"topic": "x"}, workspace=workspace)
            return orch.answer(t.id, status="yes", fields={"why": "in a loop"})

    assert asyncio.run(handler()).final == "Shipped: in a loop"


# --------------------------------------------------------------------------- async


def test_the_async_client_follows_events_while_a_person_answers(
    ask: Path, workspace: Path, tmp_path: Path
) -> None:
    async def main() -> tuple[list[StoredEvent], Thread, Thread]:
        async with AsyncOrchestrator(store=tmp_path / "store") as orch:
            t = await orch.run(ask, {"topic": "y"}, workspace=workspace, wait=False)
            waiting = asyncio.Event()

            async def follow() -> list[StoredEvent]:
                seen = []
                async for stored in orch.events(t.id, follow=True):
                    seen.append(stored)
                    if isinstance(stored.event, HumanWaiting):
                        waiting.set()
                return seen

            follower = asyncio.create_task(follow())
            await waiting.wait()
            asked = await orch.get(t.id)
            done = await orch.answer(t.id, status="yes", fields={"why": "async"})
            return await follower, asked, done

    seen, asked, done = asyncio.run(main())
    assert asked.state == ThreadStatus.WAITING and asked.question is not None
    assert done.state == ThreadStatus.COMPLETED and done.final == "Shipped: async"
    names = kinds(seen)
    assert names.index("HumanWaiting") < len(names) - 1 and names[-1] == "ThreadCompleted"


def test_the_two_clients_have_the_same_methods_and_explicit_keywords() -> None:
    for name in ("run", "answer", "resume", "cancel", "get", "list", "events"):
        sync = inspect.signature(getattr(Orchestrator, name))
        aio = inspect.signature(getattr(AsyncOrchestrator, name))
        assert list(sync.parameters) == list(aio.parameters), name
        kinds_ = {p.kind for p in sync.parameters.values()}
        assert inspect.Parameter.VAR_KEYWORD not in kinds_, name
        assert inspect.iscoroutinefunction(getattr(AsyncOrchestrator, name)) or name == "events"
    for name in ("Orchestrator", "AsyncOrchestrator", "Thread", "MemoryStore", "RunOptions"):
        assert name in orchestrator.__all__


def test_a_memory_store_passed_in_stays_the_callers(ask: Path, workspace: Path) -> None:
    store = MemoryStore()
    with Orchestrator(store=store) as orch:
        t = orch.run(ask, {"topic": "x"}, workspace=workspace)
    with Orchestrator(store=store) as orch:  # the store was not closed: the thread is there
        assert orch.get(t.id).state == ThreadStatus.WAITING


# --------------------------------------------------------------------------- leaks


def test_nothing_the_client_opened_outlives_its_with_block(
    ask: Path, workspace: Path, tmp_path: Path
) -> None:
    run_thread(ask, {"topic": "warm"}, workspace=workspace, store=tmp_path / "store")
    threads, fds = set(threading.enumerate()), open_fds()
    with Orchestrator(store=tmp_path / "store") as orch:
        t = orch.run(ask, {"topic": "x"}, workspace=workspace)
        assert set(threading.enumerate()) - threads  # the client's loop, the store's writer
        list(orch.events(t.id))
    for _ in range(5):  # section 10's functions open a client each time, and close it
        result = run_thread(ask, {"topic": "x"}, workspace=workspace, store=tmp_path / "store")
        answer_thread(result.thread_id, status="yes", fields={"why": "w"}, store=tmp_path / "store")

    async def in_a_loop() -> None:
        async with AsyncOrchestrator(store=tmp_path / "store") as orch:
            await orch.run(ask, {"topic": "x"}, workspace=workspace)

    asyncio.run(in_a_loop())
    # (A thread alive before may have ended since, a warm-up's import for one: none is new.)
    new = set(threading.enumerate()) - threads
    assert not new, [t.name for t in new]
    assert open_fds() <= fds


def test_control_the_count_sees_a_client_left_open(
    ask: Path, workspace: Path, tmp_path: Path
) -> None:
    run_thread(ask, {"topic": "warm"}, workspace=workspace, store=tmp_path / "store")
    threads, fds = set(threading.enumerate()), open_fds()
    orch = Orchestrator(store=tmp_path / "store")  # not closed, as run_thread's store was
    orch.run(ask, {"topic": "x"}, workspace=workspace)
    left = {t.name for t in set(threading.enumerate()) - threads}
    assert "orchestrator-client" in left  # its loop's thread
    assert open_fds() > fds  # the store's files
    orch.close()
    assert not set(threading.enumerate()) - threads and open_fds() <= fds


# --------------------------------------------------------------------------- section 10


def test_the_section_10_functions_work_inside_a_running_loop(
    ask: Path, workspace: Path, tmp_path: Path
) -> None:
    options = RunOptions(max_steps=50)

    async def main() -> tuple[Any, Any]:
        store = tmp_path / "store"
        result = run_thread(ask, {"topic": "x"}, workspace=workspace, store=store, options=options)
        done = answer_thread(result.thread_id, status="yes", fields={"why": "w"}, store=store)
        again = resume_thread(result.thread_id, message="more", store=store, model="haiku")
        return done, again

    done, again = asyncio.run(main())
    assert done.state == ThreadStatus.COMPLETED and again.state == ThreadStatus.WAITING
    assert options == RunOptions(max_steps=50)  # the caller's options, unchanged


# --------------------------------------------------------------------------- typed errors


def test_typed_errors_for_a_bad_graph_bad_inputs_a_refused_answer_and_an_unknown_id(
    ask: Path, workspace: Path, tmp_path: Path, write_graph: Callable[..., Path]
) -> None:
    broken = write_graph("name: broken\ndescription: d\nroles: [1, 2]\ngraph: {}\n")
    unlinted = write_graph(ASK.replace('"no": { role: drafter', '"no": { role: nobody'), "bad")
    with Orchestrator(store=tmp_path / "store") as orch:
        with pytest.raises(GraphError) as graph_error:
            orch.run(broken, {"topic": "x"}, workspace=workspace)
        assert graph_error.value.problems
        with pytest.raises(SessionError) as lint_error:
            orch.run(unlinted, {"topic": "x"}, workspace=workspace)
        assert any("nobody" in p.format() for p in lint_error.value.problems)
        with pytest.raises(InputError, match="topic"):
            orch.run(ask, {"subject": "x"}, workspace=workspace)
        assert orch.list() == []  # nothing was created by the refusals
        t = orch.run(ask, {"topic": "x"}, workspace=workspace)
        with pytest.raises(Refused) as refused:
            orch.answer(t.id, status="maybe", fields={"why": "w"})
        assert refused.value.errors and "maybe" in " ".join(refused.value.errors)
        assert orch.get(t.id).state == ThreadStatus.WAITING  # nothing was recorded
        with pytest.raises(SessionError, match="no thread 'nope'"):
            orch.get("nope")
        with pytest.raises(SessionError, match="no thread 'nope'"):
            list(orch.events("nope"))
        done = orch.answer(t.id, status="yes", fields={"why": "w"})
        with pytest.raises(Refused):  # a completed thread has nothing to answer
            orch.answer(done.id, status="yes", fields={"why": "again"})


# --------------------------------------------------------------------------- Ctrl-C

SLOW = """
import asyncio
from pathlib import Path

from orchestrator.actors.python import ActorCall


async def draft(call: ActorCall) -> dict:
    (call.workspace / "drafting").write_text("now")
    await asyncio.sleep(120)
    return {"$status": "ready", "draft": "late"}
"""

SCRIPT = """
import sys

from orchestrator import Orchestrator

with Orchestrator(store=sys.argv[1]) as orch:
    orch.run(sys.argv[2], {"topic": "x"}, workspace=sys.argv[3])
"""


def test_ctrl_c_during_a_sync_call_leaves_the_thread_resumable(
    ask: Path, workspace: Path, tmp_path: Path
) -> None:
    (ask.parent / "drafting.py").write_text(SLOW)
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    store = tmp_path / "store"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(store), str(ask), str(workspace)],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (workspace / "drafting").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert "KeyboardInterrupt" in err
    with Orchestrator(store=store) as orch:
        (thread,) = orch.list()
        assert thread.state == ThreadStatus.SUSPENDED, thread
        names = kinds(list(orch.events(thread.id)))
        assert names[-1] == "ThreadSuspended"
