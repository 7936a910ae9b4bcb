"""A thread's single step runs in the thread's own task (no task of its own: two passes through
the event loop fewer per step); a cancel from elsewhere still stops it and is taken back, and a
cancel of the task itself still goes through."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.actors.base import ActReply, ActRequest
from orchestrator.definition.models import Graph
from orchestrator.run.options import RunOptions
from orchestrator.run.runner import advance
from orchestrator.run.session import Session
from orchestrator.store.memory import MemoryStore
from tests.graphs_for_tests import REVIEW_LOOP


@pytest.fixture
def loop(make_graph: Callable[..., Graph]) -> Graph:
    return make_graph(REVIEW_LOOP)


class Actor:
    """Drafts and approves at once, or (`hang`) waits until cancelled; notes its tasks."""

    def __init__(self, hang: bool = False) -> None:
        self.hang = hang
        self.tasks: list[asyncio.Task[object] | None] = []
        self.started = asyncio.Event()

    async def play(self, request: ActRequest) -> ActReply:
        self.tasks.append(asyncio.current_task())
        self.started.set()
        if self.hang:
            await asyncio.sleep(3600)
        if request.role_name == "writer":
            return ActReply(text="---\n$status: drafted\ndraft: d\n---\n")
        return ActReply(text="---\n$status: approved\ncomments: ok\n---\n")


def started(loop: Graph, tmp_path: Path) -> tuple[Session, str]:
    session = Session(MemoryStore())
    return session, session.start(loop, {"topic": "t"}, folder=tmp_path).thread_id


def test_each_step_runs_in_the_task_that_advances_the_thread(loop: Graph, tmp_path: Path) -> None:
    session, thread_id = started(loop, tmp_path)
    actor = Actor()

    async def main() -> tuple[str, asyncio.Task[object] | None]:
        result = await advance(loop, session.store, thread_id, actor_for=lambda n, r: actor)
        return result.state, asyncio.current_task()

    state, task = asyncio.run(main())
    assert state == "completed"
    assert len(actor.tasks) == 2 and all(t is task for t in actor.tasks)


def test_a_cancel_from_elsewhere_stops_the_step_and_is_taken_back(
    loop: Graph, tmp_path: Path
) -> None:
    session, thread_id = started(loop, tmp_path)
    actor = Actor(hang=True)

    async def main() -> tuple[str, int, bool]:
        async def cancel_when_started() -> None:
            await actor.started.wait()
            session.cancel(thread_id)  # as another process would: through the store

        canceller = asyncio.ensure_future(cancel_when_started())
        options = RunOptions(poll_seconds=0.01)
        result = await advance(
            loop, session.store, thread_id, actor_for=lambda n, r: actor, options=options
        )
        await canceller
        task = asyncio.current_task()
        assert task is not None
        await asyncio.sleep(0)  # the task goes on: no cancel left pending
        return result.state, task.cancelling(), actor.tasks[0] is task

    assert asyncio.run(main()) == ("cancelled", 0, True)


def test_a_cancel_of_the_task_itself_goes_through(loop: Graph, tmp_path: Path) -> None:
    # The control: the cancel taken back above is only the runner's own.
    session, thread_id = started(loop, tmp_path)
    actor = Actor(hang=True)

    async def main() -> bool:
        running = asyncio.ensure_future(
            advance(loop, session.store, thread_id, actor_for=lambda n, r: actor)
        )
        await actor.started.wait()
        running.cancel()
        try:
            await running
        except asyncio.CancelledError:
            return True
        return False

    assert asyncio.run(main())
    assert not session.state(thread_id).status.ended  # interrupted: left resumable
