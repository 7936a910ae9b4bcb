"""run_batch keeps the collector's full passes off the heap that existed before the batch
(`gc.freeze`), collects young objects less often, and leaves the collector as it found it."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.actors.base import ActReply, ActRequest
from orchestrator.definition.models import Graph
from orchestrator.run.batch import GC_THRESHOLD, run_batch
from orchestrator.store.memory import MemoryStore
from tests.graphs_for_tests import REVIEW_LOOP


class Watching:
    """Drafts and approves; notes how many objects were frozen while each step ran."""

    def __init__(self) -> None:
        self.frozen: list[int] = []
        self.thresholds: list[int] = []

    async def play(self, request: ActRequest) -> ActReply:
        self.frozen.append(gc.get_freeze_count())
        self.thresholds.append(gc.get_threshold()[0])
        await asyncio.sleep(0)
        if request.role_name == "writer":
            return ActReply(text=f"---\n$status: drafted\ndraft: {request.inputs['topic']}\n---\n")
        return ActReply(text="---\n$status: approved\ncomments: ok\n---\n")


class Cycle:
    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def loop(make_graph: Callable[..., Graph]) -> Graph:
    return make_graph(REVIEW_LOOP)


def batch(loop: Graph, actor: Watching, tmp_path: Path) -> None:
    items = asyncio.run(
        run_batch(
            loop,
            [{"topic": f"t{i}"} for i in range(3)],
            MemoryStore(),
            concurrency=2,
            actor_for=lambda name, role: actor,
            workspace=tmp_path,
        )
    )
    assert all(item.result and item.result.state == "completed" for item in items)


def test_the_heap_before_the_batch_is_frozen_while_it_runs_and_collected_after(
    loop: Graph, tmp_path: Path
) -> None:
    assert gc.get_freeze_count() == 0
    threshold = gc.get_threshold()
    garbage = Cycle()
    gone = weakref.ref(garbage)
    del garbage  # a cycle: only the collector frees it
    actor = Watching()
    batch(loop, actor, tmp_path)
    assert actor.frozen and all(n > 0 for n in actor.frozen)  # every step ran frozen
    assert set(actor.thresholds) == {GC_THRESHOLD} != {threshold[0]}  # collected less often
    assert gc.get_freeze_count() == 0  # unfrozen when the batch ended
    assert gc.get_threshold() == threshold  # and the threshold as it was
    assert tracked(actor)  # and collectable again
    gc.collect()
    assert gone() is None  # the garbage from before the batch is collected after it


def tracked(thing: object) -> bool:
    """Is `thing` in a generation the collector walks (not frozen)?"""
    return any(each is thing for each in gc.get_objects())


def test_a_heap_the_process_froze_itself_stays_frozen(loop: Graph, tmp_path: Path) -> None:
    # The control: the caller's own freeze is not undone by the batch.
    mine: list[int] = [1]
    assert tracked(mine)
    gc.freeze()
    try:
        assert not tracked(mine)
        actor = Watching()
        batch(loop, actor, tmp_path)
        assert actor.frozen and all(n > 0 for n in actor.frozen)
        assert not tracked(mine)  # still frozen: the batch did not unfreeze the caller's heap
    finally:
        gc.unfreeze()
    assert tracked(mine)
