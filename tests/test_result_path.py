"""A thread's result path, kept by the runner as events are applied, is the store's own.

`LocalExecutor.result()` once read the roles of the committed steps back from SQLite
(`committed_roles`, a query per thread); it now keeps them as it applies events (its own steps,
and what `catch_up` reads of the log). These tests run real threads (the real runner, SDK and
durable store, against the fake Messages API) and compare the path with the store's answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator import run_thread
from orchestrator.run.options import RunOptions
from orchestrator.run.runner import LocalExecutor
from orchestrator.store.sqlite import SqliteStore
from orchestrator.testing.fake_anthropic import FakeAnthropic
from tests.anthropic_fixtures import fake_server

GRAPH = """
name: review-loop
description: A developer and a reviewer who may send the work back.
inputs:
  type: object
  properties: { issue: { type: string } }
  required: [issue]
limits: { max_steps: 10 }
roles:
  developer:
    description: Implements
    goal: You implement.
    frontmatter:
      type: object
      properties: { $status: { enum: [done] }, summary: { type: string } }
      required: [$status, summary]
  reviewer:
    description: Reviews
    goal: You review.
    frontmatter:
      type: object
      properties: { $status: { enum: [approved, again] }, verdict: { type: string } }
      required: [$status, verdict]
graph:
  $START:
    _: { role: developer, prompt: "Fix {{{$inputs.issue}}}" }
  developer:
    done: { role: reviewer, prompt: "Review {{{summary}}}" }
  reviewer:
    again: { role: developer, prompt: "Again: {{{verdict}}}" }
    approved: { role: $END, prompt: "Approved: {{{verdict}}}" }
"""


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with fake_server(monkeypatch) as fake:
        yield fake


def _run(server: FakeAnthropic, store: SqliteStore, folder: Path, graph: Any, rounds: int) -> Any:
    """A thread whose reviewer sends the work back `rounds - 1` times."""
    for n in range(rounds):
        server.reply_text(f"---\n$status: done\nsummary: s{n}\n---\nok")
        status = "approved" if n == rounds - 1 else "again"
        server.reply_text(f"---\n$status: {status}\nverdict: v{n}\n---\nok")
    return run_thread(
        graph, {"issue": "x"}, store=store, workspace=folder, options=RunOptions(max_retries=0)
    )


@pytest.mark.parametrize("rounds", [1, 3])
def test_the_path_kept_in_memory_is_the_stores(
    server: FakeAnthropic, tmp_path: Path, make_graph: Any, rounds: int
) -> None:
    store = SqliteStore(tmp_path / "store")
    result = _run(server, store, tmp_path, make_graph(GRAPH), rounds)
    assert result.state == "completed", result
    # The slow path: the store's own query over the committed log.
    assert result.path == [*store.committed_roles(result.thread_id), "$END"]
    # Control: the comparison is not vacuous; the path follows what the replies did.
    assert result.path == ["developer", "reviewer"] * rounds + ["$END"]
    store.close()


def test_an_executor_caught_up_from_the_log_gives_the_same_path(
    server: FakeAnthropic, tmp_path: Path, make_graph: Any
) -> None:
    """The roles come from every event applied, those read back by `catch_up` too (a resume,
    or a ThreadBusy that starts the state over from the store), not only from steps run."""
    graph = make_graph(GRAPH)
    store = SqliteStore(tmp_path / "store")
    result = _run(server, store, tmp_path, graph, 2)

    async def caught_up() -> list[str]:
        executor = LocalExecutor(graph, store, result.thread_id, RunOptions())
        return list(executor.result().path)

    path = asyncio.run(caught_up())
    assert path == result.path == [*store.committed_roles(result.thread_id), "$END"]
    store.close()
