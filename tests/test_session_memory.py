"""Bounded session memory: a role visited 200 times against the fake Messages API.

The real runner, AnthropicActor and SDK, a durable store. The role continues its conversation
(`memory: session`) with a small `memory_budget`: every request stays within it, the first kept
message says how many earlier visits were left out, and the cache breakpoints still sit on a
prefix that the next request reads from the cache.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator import run_thread
from orchestrator.core.events import StepCommitted
from orchestrator.run.memory import CHARS_PER_TOKEN
from orchestrator.run.options import RunOptions
from orchestrator.store.sqlite import SqliteStore
from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse
from tests.anthropic_fixtures import fake_server

VISITS = 200
BUDGET = 1500  # tokens of earlier visits

GRAPH = f"""
name: long-session
description: One role revisited many times with a bounded conversation.
limits: {{ max_steps: {VISITS + 5}, max_visits: {VISITS + 5} }}
defaults: {{ memory_budget: {BUDGET} }}
roles:
  worker:
    description: Works in rounds
    goal: You work in rounds and keep notes.
    frontmatter:
      type: object
      properties:
        $status: {{ enum: [again, done] }}
        note: {{ type: string }}
      required: [$status, note]
graph:
  $START:
    _: {{ role: worker, prompt: "Start {{{{{{$inputs.task}}}}}}" }}
  worker:
    again: {{ role: worker, prompt: "Round after {{{{{{note}}}}}}" }}
    done: {{ role: $END, prompt: "Finished: {{{{{{note}}}}}}" }}
"""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with fake_server(monkeypatch) as fake:
        yield fake


def test_a_role_visited_200_times_stays_within_its_budget(
    server: FakeAnthropic, tmp_path: Path, make_graph: Any
) -> None:
    visits = iter(range(1, VISITS + 1))

    def answer(body: dict[str, Any]) -> FakeResponse:
        n = next(visits)
        status = "done" if n == VISITS else "again"
        return FakeResponse.text(f"---\n$status: {status}\nnote: n{n}\n---\n" + "work " * 60)

    server.handler = answer
    store = SqliteStore(tmp_path / "store")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    result = run_thread(
        make_graph(GRAPH),
        {"task": "a long job"},
        store=store,
        workspace=workspace,
        options=RunOptions(max_retries=0, timeout=10),
    )
    assert result.state == "completed" and result.steps == VISITS

    bodies = server.message_requests
    assert len(bodies) == VISITS
    noted = 0
    for body in bodies:
        earlier = body["messages"][:-1]  # the role's earlier visits; the last is this visit
        chars = sum(len(_text(m["content"])) for m in earlier)
        assert chars <= BUDGET * CHARS_PER_TOKEN, chars
        if earlier and "earlier visits of yours in this thread are left out" in _text(
            earlier[0]["content"]
        ):
            noted += 1
    # the whole conversation no longer fits after a few dozen visits: from then on, the note
    assert noted > VISITS // 2
    last = bodies[-1]["messages"]
    assert "left out here to keep the conversation within its budget" in _text(last[0]["content"])

    # The window moves in jumps, so the prefix stays the same between them and is read from the
    # cache: most requests read the earlier visits from it.
    steps = [e.event for e in store.events(result.thread_id) if isinstance(e.event, StepCommitted)]
    reads = [s.usage.get("cache_read_input_tokens", 0) for s in steps[1:]]
    assert sum(1 for r in reads if r > 0) > 0.8 * len(reads)
    # and the breakpoints sit on the last two user turns, the previous one being the cached end
    marked = [
        i
        for i, m in enumerate(bodies[-1]["messages"])
        if m["role"] == "user"
        and isinstance(m["content"], list)
        and "cache_control" in m["content"][-1]
    ]
    assert marked == [len(bodies[-1]["messages"]) - 3, len(bodies[-1]["messages"]) - 1]
    store.close()


def test_prompt_too_long_shrinks_the_conversation_and_asks_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, make_graph: Any
) -> None:
    rounds = 30
    graph = GRAPH.replace(f"memory_budget: {BUDGET}", "memory_budget: 100000").replace(
        f"max_steps: {VISITS + 5}, max_visits: {VISITS + 5}", "max_steps: 40, max_visits: 40"
    )
    with fake_server(monkeypatch, max_prompt_tokens=2500) as server:
        visits = iter(range(1, rounds + 1))

        def answer(body: dict[str, Any]) -> FakeResponse:
            n = next(visits)
            status = "done" if n == rounds else "again"
            return FakeResponse.text(f"---\n$status: {status}\nnote: n{n}\n---\n" + "work " * 60)

        server.handler = answer
        store = SqliteStore(tmp_path / "store")
        workspace = tmp_path / "ws"
        workspace.mkdir()
        result = run_thread(
            make_graph(graph),
            {"task": "a long job"},
            store=store,
            workspace=workspace,
            options=RunOptions(max_retries=0, timeout=10),
        )
        # The budget (100,000 tokens) is larger than this model's window (2,500 here): the API
        # refuses the long prompts, the actor drops the older half of the visits and asks again.
        assert result.state == "completed" and result.steps == rounds, result.reason
        bodies = server.message_requests
        assert len(bodies) > rounds  # some were refused as too long, then sent shorter
        notes = [
            b
            for b in bodies
            if "conversation was too long for the model" in _text(b["messages"][0]["content"])
        ]
        assert notes
        store.close()
