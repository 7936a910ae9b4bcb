"""The client of docs/format.md section 10b (docs/api.md), on threads on Temporal.

A dev server on 127.0.0.1 and a worker process (tests/temporal_helpers.py) run the threads;
the roles are command actors (tests/cli_helpers.py) and a person. The same client lines as on a
local store: `Orchestrator(temporal=...)` and `AsyncOrchestrator(temporal=...)` run, answer,
get, list and cancel; `events` follows a thread while the workers run it (the person's wait, then
the answer); the sync client works inside a running loop; closing the client leaves no thread
and no file descriptor; mistakes raise the typed errors.
"""

from __future__ import annotations

import asyncio
import gc
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.temporal_helpers import require_extra

require_extra()

from orchestrator import (  # noqa: E402  (after the check above)
    AsyncOrchestrator,
    GraphError,
    HumanWaiting,
    InputError,
    Orchestrator,
    Refused,
    SessionError,
    StoredEvent,
    Thread,
    ThreadStatus,
)
from tests.cli_helpers import Project  # noqa: E402
from tests.temporal_helpers import (  # noqa: E402, F401  (a fixture, used by name)
    WorkerProcess,
    new_queue,
    temporal_address,
)
from tests.test_temporal import ASK, FIX  # noqa: E402

SCRIPT = {
    "1": "---\n$status: ask\nnote: the plan\n---\n",
    "3": "---\n$status: done\nnote: shipped\n---\n",
}


class Place:
    def __init__(self, address: str, project: Project, queue: str) -> None:
        self.address, self.project, self.queue = address, project, queue
        self.ask = project.root / "graphs" / "ask.yaml"
        self.fix = project.root / "graphs" / "fix.yaml"

    def client(self) -> Orchestrator:
        return Orchestrator(temporal=self.address, task_queue=self.queue)

    def aclient(self) -> AsyncOrchestrator:
        return AsyncOrchestrator(temporal=self.address, task_queue=self.queue)


@pytest.fixture
def place(tmp_path: Path, temporal_address: str) -> Iterator[Place]:  # noqa: F811
    project = Project(tmp_path)
    project.graph(ASK, "ask")
    project.graph(FIX, "fix")
    project.script(worker=SCRIPT)
    queue = new_queue()
    worker = WorkerProcess(temporal_address, queue, project.env(), tmp_path, tmp_path / "w.log")
    try:
        yield Place(temporal_address, project, queue)
    finally:
        worker.stop()


def kinds(events: list[StoredEvent]) -> list[str]:
    return [type(s.event).__name__ for s in events]


def test_the_sync_client_runs_answers_and_reads_a_thread_on_temporal(place: Place) -> None:
    root = place.project.root
    with place.client() as orch:
        t = orch.run(place.ask, {"task": "go"}, workspace=root)
        assert isinstance(t, Thread) and t.state == ThreadStatus.WAITING
        assert t.question is not None and t.question.prompt == "Decide on the plan"
        assert t.id in [x.id for x in orch.list(state="waiting", graph="ask")]
        done = orch.answer(t.id, status="yes", fields={"why": "good"})
        assert done.state == ThreadStatus.COMPLETED and done.final == "Finished: shipped"
        assert done.path == ("worker", "person", "worker", "$END")
        got = orch.get(t.id)
        assert (got.state, got.final, got.path, got.steps) == (
            "completed",
            done.final,
            done.path,
            3,
        )
        names = kinds(list(orch.events(t.id)))
        assert names[0] == "ThreadStarted" and names[-1] == "ThreadCompleted"
        other = orch.run(place.ask, {"task": "again"}, workspace=root)
        cancelled = orch.cancel(other.id, reason="not needed")
        assert cancelled.state == ThreadStatus.CANCELLED


def test_events_follow_a_thread_the_workers_run_through_a_wait_and_its_answer(
    place: Place,
) -> None:
    root = place.project.root

    async def main() -> tuple[list[StoredEvent], Thread]:
        async with place.aclient() as orch:
            t = await orch.run(place.ask, {"task": "go"}, workspace=root, wait=False)
            assert t.state == ThreadStatus.RUNNING
            waiting = asyncio.Event()

            async def follow() -> list[StoredEvent]:
                seen = []
                async for stored in orch.events(t.id, follow=True):
                    seen.append(stored)
                    if isinstance(stored.event, HumanWaiting):
                        waiting.set()
                return seen

            follower = asyncio.create_task(follow())
            await asyncio.wait_for(waiting.wait(), 120)
            done = await orch.answer(t.id, status="yes", fields={"why": "seen"})
            return await asyncio.wait_for(follower, 120), done

    seen, done = asyncio.run(main())
    assert done.state == ThreadStatus.COMPLETED
    names = kinds(seen)
    assert names[0] == "ThreadStarted" and names[-1] == "ThreadCompleted"
    waited = names.index("HumanWaiting")
    assert "StepCommitted" in names[waited:]  # the person's answer, then the worker's step
    assert [s.seq for s in seen] == list(range(1, len(seen) + 1))


def test_the_sync_client_works_inside_a_running_loop_on_temporal(place: Place) -> None:
    async def handler() -> Thread:
        asyncio.get_running_loop()
        with place.client() as orch:
            t = orch.run(place.ask, {"task": "go"}, workspace=place.project.root)
            return orch.answer(t.id, status="no", fields={"why": "in a loop"})

    done = asyncio.run(handler())
    assert done.final == "Stopped: in a loop"


def open_fds() -> int:
    """The process's open file descriptors once what is unreferenced is collected: a socket
    an earlier test (or this one) left in a reference cycle is closed by the collector at a
    moment of its own, which would move the count by itself (as in tests/test_client.py)."""
    gc.collect()
    return len(os.listdir("/proc/self/fd"))


def test_closing_the_client_leaves_no_thread_nor_file_handle(place: Place) -> None:
    with place.client() as orch:  # the first client starts Temporal's runtime, once a process
        orch.list()
    threads, fds = set(threading.enumerate()), open_fds()
    with place.client() as orch:
        t = orch.run(place.ask, {"task": "go"}, workspace=place.project.root)
        assert set(threading.enumerate()) - threads  # the client's own loop thread
        orch.get(t.id)
        list(orch.events(t.id))

    async def in_a_loop() -> None:
        async with place.aclient() as orch:
            await orch.get(t.id)

    asyncio.run(in_a_loop())
    new = set(threading.enumerate()) - threads
    assert not new, [x.name for x in new]
    assert open_fds() <= fds


def test_typed_errors_on_temporal(place: Place) -> None:
    root = place.project.root
    broken = place.project.root / "graphs" / "broken.yaml"
    broken.write_text("name: broken\ndescription: d\nroles: [1]\ngraph: {}\n")
    unlinted = place.project.graph(ASK.replace('"no": { role: $END', '"no": { role: x'), "bad")
    with place.client() as orch:
        with pytest.raises(GraphError):
            orch.run(broken, {"task": "go"}, workspace=root)
        with pytest.raises(SessionError) as lint_error:
            orch.run(unlinted, {"task": "go"}, workspace=root)
        assert lint_error.value.problems
        with pytest.raises(InputError, match="issue"):
            orch.run(place.fix, {"bug": "x"}, workspace=root)
        with pytest.raises(SessionError, match="no thread 'nope'"):
            orch.get("nope")
        t = orch.run(place.ask, {"task": "go"}, workspace=root)
        with pytest.raises(Refused) as refused:
            orch.answer(t.id, status="maybe", fields={"why": "x"})
        assert refused.value.errors
        assert orch.get(t.id).state == ThreadStatus.WAITING
        orch.cancel(t.id)


def test_a_temporal_sessions_sync_reads_work_inside_a_running_loop(place: Place) -> None:
    from orchestrator.temporal.session import TemporalSession

    with place.client() as orch:
        t = orch.run(place.ask, {"task": "go"}, workspace=place.project.root)

    async def handler() -> tuple[str, int]:  # what `asyncio.run` inside a loop used to refuse
        with TemporalSession(place.address, task_queue=place.queue) as session:
            return str(session.thread(t.id).state), len(session.events(t.id, after=1))

    assert asyncio.run(handler()) == ("waiting", len(kinds_of(place, t.id)) - 1)


def kinds_of(place: Place, thread_id: str) -> list[str]:
    with place.client() as orch:
        return kinds(list(orch.events(thread_id)))
