"""Many threads in one process, and rate limits that slow a batch down instead of failing it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.actors.base import ActorError, ActReply, ActRequest
from orchestrator.definition.models import Graph
from orchestrator.run.batch import BatchInputError, read_batch, run_batch
from orchestrator.store.sqlite import SqliteStore
from tests.graphs_for_tests import REVIEW_LOOP


@pytest.fixture
def loop(make_graph: Callable[..., Graph]) -> Graph:
    return make_graph(REVIEW_LOOP)


class Flaky:
    """Rate-limits the first `failures` calls, then drafts and approves; tracks concurrency."""

    def __init__(self, failures: int):
        self.failures = failures
        self.calls = 0
        self.active = 0
        self.peak = 0

    async def play(self, request: ActRequest) -> ActReply:
        self.calls += 1
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            await asyncio.sleep(0.01)
            if self.failures > 0:
                self.failures -= 1
                raise ActorError("Anthropic API rate limit (429): slow down", "rate-limit")
            if request.role_name == "writer":
                return ActReply(
                    text=f"---\n$status: drafted\ndraft: {request.inputs['topic']}\n---\n"
                )
            return ActReply(text="---\n$status: approved\ncomments: ok\n---\n")
        finally:
            self.active -= 1


def test_batch_completes_every_thread_despite_rate_limits(loop: Graph, tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "store")
    actor = Flaky(failures=3)
    batch = [{"topic": f"t{i}"} for i in range(8)]
    items = asyncio.run(
        run_batch(
            loop, batch, store, concurrency=3, actor_for=lambda n, r: actor, backoff_seconds=0.01
        )
    )
    assert [item.result.state for item in items if item.result] == ["completed"] * 8
    assert sum(item.rate_limited for item in items) == 3
    assert actor.peak <= 3
    finals = sorted(item.result.final or "" for item in items if item.result)
    assert finals[0].startswith("Approved: t0")
    # each thread is an ordinary, separately stored thread
    assert len(store.threads("completed")) == 8


def test_read_batch_validates_every_line_first(loop: Graph, tmp_path: Path) -> None:
    path = tmp_path / "batch.jsonl"
    path.write_text(
        json.dumps({"topic": "a"}) + "\n\n" + "not json\n" + json.dumps({"x": 1}) + "\n"
    )
    with pytest.raises(BatchInputError) as err:
        read_batch(path, loop)
    text = str(err.value)
    assert "batch.jsonl:3: not JSON" in text
    assert "batch.jsonl:4:" in text and "topic" in text
    path.write_text(json.dumps({"topic": "a"}) + "\n" + json.dumps({"topic": "b"}) + "\n")
    assert read_batch(path, loop) == [{"topic": "a"}, {"topic": "b"}]


def test_batch_command_runs_threads_and_prints_a_summary(tmp_path: Path) -> None:
    from tests.cli_helpers import LOOP_GRAPH, Project

    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    project.script(worker=["---\n$status: done\nnote: ok\n---\n"])
    batch = tmp_path / "batch.jsonl"
    batch.write_text("\n".join(json.dumps({"task": f"job {i}"}) for i in range(5)) + "\n")
    out = project.run("run", "loop", "--batch", "batch.jsonl", "--concurrency", "2")
    assert out.returncode == 0, out.stderr
    assert "5 of 5 completed" in out.stdout
    assert out.stderr.count("completed (1 step, ") == 5
    rows = project.threads()
    assert sorted(r["state"] for r in rows) == ["completed"] * 5

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task": "fine"}\n{"nope": 1}\n')
    out = project.run("run", "loop", "--batch", "bad.jsonl")
    assert out.returncode == 2
    assert "bad.jsonl:2:" in out.stderr and "batch not started" in out.stderr
    assert len(project.threads()) == 5  # nothing started


def test_batch_exit_code_when_a_thread_suspends(tmp_path: Path) -> None:
    from tests.cli_helpers import LOOP_GRAPH, Project

    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    project.script(worker=["not a valid reply"])  # every thread runs out of repairs
    batch = tmp_path / "batch.jsonl"
    batch.write_text('{"task": "a"}\n{"task": "b"}\n')
    out = project.run("run", "loop", "--batch", "batch.jsonl", "--json")
    assert out.returncode == 3
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert sorted(line["line"] for line in lines) == [1, 2]
    assert {line["state"] for line in lines} == {"suspended"}


def test_batch_lines_are_checked_with_the_i_values_merged(tmp_path: Path) -> None:
    """`-i` values apply to every line, so a line may leave out what `-i` gives."""
    from tests.cli_helpers import LOOP_GRAPH, Project

    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    project.script(worker=["---\n$status: done\nnote: ok\n---\n"])
    batch = tmp_path / "batch.jsonl"
    batch.write_text("{}\n{}\n")  # `task` is required and comes from -i
    out = project.run("run", "loop", "--batch", "batch.jsonl", "-i", "task=shared")
    assert out.returncode == 0, out.stderr
    assert "2 of 2 completed" in out.stdout
