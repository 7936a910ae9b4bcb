"""Whole threads through the runner with the Anthropic actor, the real SDK and FakeAnthropic.

A planner, a developer with editor and shell tools, and a reviewer that sends the work back
once: the developer's second visit continues its own conversation from the prompt cache, the
workspace really changes, an invalid reply is repaired, a provider outage suspends the thread
resumably, and the API key ends up in no file of the store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator import run_thread
from orchestrator.core.events import AttemptRejected, StepCommitted
from orchestrator.core.outcomes import ResumeRequested
from orchestrator.definition.models import Graph
from orchestrator.run.options import RunOptions
from orchestrator.run.runner import advance
from orchestrator.store.sqlite import SqliteStore
from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse
from tests.anthropic_fixtures import TEST_KEY, fake_server

GRAPH = """
name: fix-issue
description: Plan, implement and review a fix.
inputs:
  type: object
  properties:
    issue: { type: string }
  required: [issue]
roles:
  planner:
    description: Plans the fix
    goal: You plan fixes.
    tools: [read]
    frontmatter:
      type: object
      properties:
        $status: { enum: [ready] }
        plan: { type: string }
      required: [$status, plan]
  developer:
    description: Implements the plan
    goal: You implement plans.
    tools: [read, edit, shell]
    frontmatter:
      type: object
      properties:
        $status: { enum: [done] }
        summary: { type: string }
      required: [$status, summary]
  reviewer:
    description: Reviews the change
    goal: You review changes.
    tools: [read]
    frontmatter:
      type: object
      properties:
        $status: { enum: [approved, rejected] }
        comments: { type: string }
      required: [$status, comments]
graph:
  $START:
    _: { role: planner, prompt: "Plan a fix for: {{{$inputs.issue}}}" }
  planner:
    ready: { role: developer, prompt: "Implement: {{{plan}}}" }
  developer:
    done: { role: reviewer, prompt: "Review: {{{summary}}}" }
  reviewer:
    approved: { role: $END, prompt: "Fixed: {{{comments}}}" }
    rejected: { role: developer, prompt: "Address: {{{comments}}}" }
"""

EDITOR = "str_replace_based_edit_tool"


def role_of(body: dict[str, Any]) -> str:
    return body["system"][0]["text"].split("\n", 1)[0].removeprefix("# Role: ")


def last_is_tool_result(body: dict[str, Any]) -> bool:
    content = body["messages"][-1]["content"]
    return isinstance(content, list) and content[0].get("type") == "tool_result"


class Script:
    """The fake model: answers by role and by how many times each role was asked."""

    def __init__(self) -> None:
        self.turns: dict[str, int] = {}
        self.bodies: dict[str, list[dict[str, Any]]] = {}

    def __call__(self, body: dict[str, Any]) -> FakeResponse:
        role = role_of(body)
        self.bodies.setdefault(role, []).append(body)
        n = self.turns[role] = self.turns.get(role, 0) + 1
        return getattr(self, role)(body, n)

    def planner(self, body: dict[str, Any], n: int) -> FakeResponse:
        if n == 1:
            return FakeResponse.tool_use(EDITOR, {"command": "view", "path": "calc.py"})
        return FakeResponse.text("---\n$status: ready\nplan: guard against division by zero\n---\n")

    def developer(self, body: dict[str, Any], n: int) -> FakeResponse:
        steps = {
            1: FakeResponse.tool_use(
                EDITOR,
                {
                    "command": "str_replace",
                    "path": "calc.py",
                    "old_str": "    return a / b",
                    "new_str": "    if b == 0:\n        return None\n    return a / b",
                },
            ),
            2: FakeResponse.tool_use("bash", {"command": "env; python3 calc.py"}),
            3: FakeResponse.text("---\n$status: done\nsummary: guarded b == 0\n---\nDone."),
            4: FakeResponse.tool_use(
                EDITOR,
                {"command": "create", "path": "test_calc.py", "file_text": "assert True\n"},
            ),
            5: FakeResponse.text("---\n$status: done\nsummary: added a test\n---\n"),
        }
        return steps[n]

    def reviewer(self, body: dict[str, Any], n: int) -> FakeResponse:
        if n == 1:
            return FakeResponse.text("Looks fine but where is the test?")  # invalid: repaired
        if n == 2:
            return FakeResponse.text("---\n$status: rejected\ncomments: add a test\n---\n")
        return FakeResponse.text("---\n$status: approved\ncomments: good\n---\n")


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with fake_server(monkeypatch) as fake:
        yield fake


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text("def div(a, b):\n    return a / b\n")
    return ws


def committed(store: SqliteStore, thread_id: str) -> list[StepCommitted]:
    return [e.event for e in store.events(thread_id) if isinstance(e.event, StepCommitted)]


def test_three_roles_end_to_end(
    server: FakeAnthropic,
    workspace: Path,
    tmp_path: Path,
    make_graph: Callable[..., Graph],
) -> None:
    script = Script()
    server.handler = script
    store = SqliteStore(tmp_path / "store")
    result = run_thread(
        make_graph(GRAPH),
        {"issue": "div() crashes when b is 0"},
        store=store,
        workspace=workspace,
        options=RunOptions(max_retries=0, timeout=10),
    )
    assert (result.state, result.final) == ("completed", "Fixed: good")
    assert result.path == ["planner", "developer", "reviewer", "developer", "reviewer", "$END"]
    assert "if b == 0:" in (workspace / "calc.py").read_text()
    assert (workspace / "test_calc.py").exists()

    steps = committed(store, result.thread_id)
    assert [s.role for s in steps] == ["planner", "developer", "reviewer", "developer", "reviewer"]
    assert [s.tool_calls for s in steps] == [1, 2, 0, 1, 0]
    assert {s.actor for s in steps} == {"anthropic"} and steps[0].model == "claude-sonnet-5-5"
    assert all(s.cost_usd > 0 for s in steps) and result.cost_usd > 0

    # the developer's second visit continues its conversation, read from the prompt cache
    revisit = script.bodies["developer"][3]
    assert revisit["messages"][0]["content"][0]["text"] == steps[1].message
    assert revisit["messages"][1]["content"] == steps[1].reply
    assert revisit["system"] == script.bodies["developer"][0]["system"]
    assert steps[3].usage["cache_read_input_tokens"] > 0

    # the reviewer's invalid first reply was sent back with its errors, then accepted
    rejected = [
        e.event for e in store.events(result.thread_id) if isinstance(e.event, AttemptRejected)
    ]
    assert len(rejected) == 1 and rejected[0].reply == "Looks fine but where is the test?"
    repair = script.bodies["reviewer"][1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": "Looks fine but where is the test?"}
    assert "Your reply could not be accepted" in repair[-1]["content"][0]["text"]

    # the reviewer saw what happened since it last spoke (the developer's revision)
    second_review = script.bodies["reviewer"][2]["messages"][-1]["content"][0]["text"]
    assert "Step 4: developer → done" in second_review and "added a test" in second_review

    # the shell ran without the key, and the key is in no file of the store
    env_result = script.bodies["developer"][2]["messages"][-1]["content"][0]["content"]
    assert "PATH=" in env_result and TEST_KEY not in env_result
    store.close()
    for path in (tmp_path / "store").rglob("*"):
        if path.is_file():
            assert TEST_KEY.encode() not in path.read_bytes(), path
    for recorded in server.requests:
        assert TEST_KEY.encode() not in recorded.raw


def test_provider_outage_suspends_and_resume_continues(
    server: FakeAnthropic,
    workspace: Path,
    tmp_path: Path,
    make_graph: Callable[..., Graph],
) -> None:
    graph = make_graph(GRAPH)
    script = Script()
    server.handler = script
    server.fail(status=529, times=2)
    store = SqliteStore(tmp_path / "store")
    options = RunOptions(max_retries=1, timeout=10)
    result = run_thread(
        graph, {"issue": "crash"}, store=store, workspace=workspace, options=options
    )
    assert result.state == "suspended"
    assert result.reason is not None
    assert "Anthropic API overloaded (529) after 2 attempts: Overloaded" in result.reason
    events = store.events(result.thread_id)
    assert getattr(events[-1].event, "kind", None) == "provider"

    resumed = asyncio.run(
        advance(graph, store, result.thread_id, options=options, first=ResumeRequested())
    )
    assert resumed.state == "completed"
    assert resumed.path[-1] == "$END"
    store.close()
