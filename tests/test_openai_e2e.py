"""Whole threads through the runner with the OpenAI-style actor, the real `openai` package and
FakeOpenAI: tools that change the workspace, a repair in the same conversation, a `memory:
session` role continuing its conversation (its prefix read from the provider's cache), the
provider's own cost, a failure that suspends and a resume that continues, and the keys in no
file of the store and no request the model receives (docs/models.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator import run_thread
from orchestrator.actors.recording import recording_from_events
from orchestrator.core.events import AttemptRejected, StepCommitted
from orchestrator.core.outcomes import ResumeRequested
from orchestrator.definition.models import Graph
from orchestrator.run.options import RunOptions
from orchestrator.run.runner import advance
from orchestrator.store.sqlite import SqliteStore
from orchestrator.testing.fake_openai import ChatResponse, FakeOpenAI
from tests.openai_fixtures import LOCAL_KEY, local_provider, role_of
from tests.test_anthropic_e2e import GRAPH as CLAUDE_GRAPH

GRAPH = CLAUDE_GRAPH.replace("roles:\n", "defaults: {model: 'local:qwen3-coder'}\nroles:\n", 1)
EDITOR = "str_replace_based_edit_tool"


class Script:
    """The fake model: answers by role and by how many times each role was asked."""

    def __init__(self) -> None:
        self.turns: dict[str, int] = {}
        self.bodies: dict[str, list[dict[str, Any]]] = {}

    def __call__(self, body: dict[str, Any]) -> ChatResponse:
        role = role_of(body)
        self.bodies.setdefault(role, []).append(body)
        n = self.turns[role] = self.turns.get(role, 0) + 1
        answer: ChatResponse = getattr(self, role)(n)
        return answer

    def planner(self, n: int) -> ChatResponse:
        if n == 1:
            return ChatResponse(tool_calls=[(EDITOR, {"command": "view", "path": "calc.py"})])
        return ChatResponse("---\n$status: ready\nplan: guard against division by zero\n---\n")

    def developer(self, n: int) -> ChatResponse:
        edit = {
            "command": "str_replace",
            "path": "calc.py",
            "old_str": "    return a / b",
            "new_str": "    if b == 0:\n        return None\n    return a / b",
        }
        steps = {
            1: ChatResponse(tool_calls=[(EDITOR, edit), ("bash", '{"command": "env; cat calc')]),
            2: ChatResponse(tool_calls=[("bash", {"command": "env; python3 calc.py"})]),
            3: ChatResponse("---\n$status: done\nsummary: guarded b == 0\n---\nDone."),
            4: ChatResponse(
                tool_calls=[(EDITOR, {"command": "create", "path": "t.py", "file_text": "x\n"})]
            ),
            5: ChatResponse("---\n$status: done\nsummary: added a test\n---\n"),
        }
        return steps[n]

    def reviewer(self, n: int) -> ChatResponse:
        if n == 1:
            return ChatResponse("Looks fine but where is the test?")  # invalid: repaired
        if n == 2:
            return ChatResponse("---\n$status: rejected\ncomments: add a test\n---\n")
        return ChatResponse("---\n$status: approved\ncomments: good\n---\n")


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeOpenAI]:
    with local_provider(monkeypatch, tmp_path, cost_per_token=0.000001) as fake:
        yield fake


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text("def div(a, b):\n    return a / b\n")
    return ws


def committed(store: SqliteStore, thread_id: str) -> list[StepCommitted]:
    return [e.event for e in store.events(thread_id) if isinstance(e.event, StepCommitted)]


def test_three_roles_on_an_openai_compatible_server(
    server: FakeOpenAI, workspace: Path, tmp_path: Path, make_graph: Callable[..., Graph]
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
    assert (result.state, result.final) == ("completed", "Fixed: good"), result.reason
    assert result.path == ["planner", "developer", "reviewer", "developer", "reviewer", "$END"]
    assert "if b == 0:" in (workspace / "calc.py").read_text()
    assert (workspace / "t.py").exists()

    steps = committed(store, result.thread_id)
    assert [s.tool_calls for s in steps] == [1, 3, 0, 1, 0]
    assert {s.model for s in steps} == {"local:qwen3-coder"}
    # The provider reports its cost: that figure is the ledger's, not the price table's.
    for step in steps:
        tokens = step.usage["input_tokens"] + step.usage["output_tokens"]
        tokens += step.usage["cache_read_input_tokens"]
        assert step.cost_usd == pytest.approx(tokens * 0.000001)

    # The tools went as function tools; a call with arguments that are not JSON went back as a
    # tool error in the same round, and the model went on.
    first = script.bodies["developer"][0]
    assert [t["function"]["name"] for t in first["tools"]] == [EDITOR, "search_files", "bash"]
    round_one = script.bodies["developer"][1]["messages"]
    assert [m["role"] for m in round_one[-3:]] == ["assistant", "tool", "tool"]
    assert round_one[-2]["content"].startswith("Replaced") or "calc.py" in round_one[-2]["content"]
    assert round_one[-1]["content"].startswith("[tool error] the arguments of bash are not valid")

    # The developer's second visit continues its conversation, its prefix cached.
    revisit = script.bodies["developer"][3]["messages"]
    assert revisit[0] == first["messages"][0]  # the same system prompt
    assert revisit[1]["content"] == steps[1].message and revisit[2]["content"] == steps[1].reply
    assert steps[3].usage["cache_read_input_tokens"] > 0

    # The reviewer's invalid reply went back with its errors, in the same conversation.
    rejected = [
        e.event for e in store.events(result.thread_id) if isinstance(e.event, AttemptRejected)
    ]
    assert [r.reply for r in rejected] == ["Looks fine but where is the test?"]
    repair = script.bodies["reviewer"][1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": "Looks fine but where is the test?"}
    assert "Your reply could not be accepted" in repair[-1]["content"]

    # The shell ran without the key; the key is in no file of the store and in no request body.
    env_result = script.bodies["developer"][2]["messages"][-1]["content"]
    assert "PATH=" in env_result and LOCAL_KEY not in env_result
    recording = recording_from_events([e.event for e in store.events(result.thread_id)])
    assert LOCAL_KEY not in recording.dump()
    assert {s.model for s in recording.steps} == {"local:qwen3-coder"}
    store.close()
    for path in (tmp_path / "store").rglob("*"):
        if path.is_file():
            assert LOCAL_KEY.encode() not in path.read_bytes(), path
    for recorded in server.requests:
        assert LOCAL_KEY.encode() not in recorded.raw
        assert recorded.headers["authorization"] == f"Bearer {LOCAL_KEY}"  # the control


def test_an_outage_suspends_and_resume_continues(
    server: FakeOpenAI, workspace: Path, tmp_path: Path, make_graph: Callable[..., Graph]
) -> None:
    graph = make_graph(GRAPH)
    server.handler = Script()
    server.fail(status=500, times=2)
    store = SqliteStore(tmp_path / "store")
    options = RunOptions(max_retries=1, timeout=10)
    result = run_thread(
        graph, {"issue": "crash"}, store=store, workspace=workspace, options=options
    )
    assert result.state == "suspended"
    assert result.reason is not None
    assert "the provider 'local' internal server error (500) after 2 attempts" in result.reason
    assert getattr(store.events(result.thread_id)[-1].event, "kind", None) == "provider"

    resumed = asyncio.run(
        advance(graph, store, result.thread_id, options=options, first=ResumeRequested())
    )
    assert resumed.state == "completed" and resumed.path[-1] == "$END"
    store.close()


def test_a_rate_limit_is_retried_with_backoff(
    server: FakeOpenAI, workspace: Path, tmp_path: Path, make_graph: Callable[..., Graph]
) -> None:
    server.handler = Script()
    server.fail(status=429, times=2)
    result = run_thread(
        make_graph(GRAPH),
        {"issue": "crash"},
        store=SqliteStore(tmp_path / "store"),
        workspace=workspace,
        options=RunOptions(max_retries=2, timeout=10),
    )
    assert result.state == "completed", result.reason
    assert len(server.chat_requests) == 2 + 10  # two refused, then the whole thread


def test_python_and_mcp_tools_as_function_tools(server: FakeOpenAI, tmp_path: Path) -> None:
    """A role's Python function and MCP server tools are offered as function tools with their
    schemas, run by the same tool layer, and their results go back as tool messages."""
    import sys

    from tests.tool_project import graph, make_project

    project = make_project(tmp_path)
    server.reply(
        ChatResponse(tool_calls=[("count_words", {"path": "notes.txt", "minimum": 2})]),
        ChatResponse(tool_calls=[("notes__count", {"text": "one two three"})]),
        ChatResponse("---\nwords: 3\n---\nCounted."),
    )
    command = f"[{sys.executable}, {project / 'notes_server.py'}]"
    tools = f'[read, {{python: "wordtools:count_words"}}, {{mcp: {{command: {command}}}}}]'
    path = graph(project, tools)
    path.write_text(
        path.read_text().replace("roles:\n", "defaults: {model: 'local:qwen3-coder'}\nroles:\n")
    )
    result = run_thread(
        path,
        {"task": "count"},
        store=SqliteStore(tmp_path / "store"),
        workspace=tmp_path / "ws",
        options=RunOptions(max_retries=0, timeout=10),
    )
    assert (result.state, result.final) == ("completed", "3 words"), result.reason
    first, second, third = server.chat_requests
    offered = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert {"count_words", "notes__count"} <= set(offered)
    assert set(offered["count_words"]["parameters"]["properties"]) == {"path", "minimum"}
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": second["messages"][-2]["tool_calls"][0]["id"],
        "content": '{"words": 4}',
    }
    assert "3" in third["messages"][-1]["content"]
