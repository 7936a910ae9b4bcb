"""The batch asks the moderator whether a thread may be retried only when it did not complete;
a rate-limited thread is still retried (the control)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestrator.definition.models import Graph
from orchestrator.run.batch import run_batch
from orchestrator.run.session import Session
from orchestrator.store.memory import MemoryStore
from tests.graphs_for_tests import REVIEW_LOOP
from tests.test_batch import Flaky


class Counting(Session):
    def __init__(self) -> None:
        super().__init__(MemoryStore())
        self.asked: list[str] = []

    def allowed(self, thread_id: str, graph: Graph | None = None) -> Any:
        self.asked.append(thread_id)
        return super().allowed(thread_id, graph)


@pytest.fixture
def loop(make_graph: Callable[..., Graph]) -> Graph:
    return make_graph(REVIEW_LOOP)


def run(loop: Graph, actor: Flaky, tmp_path: Path) -> tuple[Counting, list[Any]]:
    session = Counting()
    items = asyncio.run(
        run_batch(
            loop,
            [{"topic": f"t{i}"} for i in range(3)],
            session,
            concurrency=3,
            actor_for=lambda name, role: actor,
            workspace=tmp_path,
            backoff_seconds=0.0,
        )
    )
    assert all(item.result and item.result.state == "completed" for item in items)
    return session, items


def test_completed_threads_are_not_asked_about(loop: Graph, tmp_path: Path) -> None:
    session, _ = run(loop, Flaky(failures=0), tmp_path)
    assert session.asked == []


def test_a_rate_limited_thread_is_asked_about_and_retried(loop: Graph, tmp_path: Path) -> None:
    session, items = run(loop, Flaky(failures=2), tmp_path)
    assert len(session.asked) == 2  # once per suspended advance
    assert sum(item.rate_limited for item in items) == 2
