"""The bundled solve-issue graph end to end with its roles on three providers at once: the
planner on an `openai-compatible` server, the developer (and tester) on Anthropic, the reviewer
on `openai`, each against its own fake and through its real client. The words are the scripted
scenario's (tests/solve_issue_scenario.py); the tools, the worktree and the commit are real."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from orchestrator.cli import cli
from orchestrator.core.events import StepCommitted
from orchestrator.store.sqlite import SqliteStore
from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse
from orchestrator.testing.fake_openai import ChatResponse, FakeOpenAI
from orchestrator.views.story import story_json
from tests.openai_fixtures import LOCAL_KEY, OPENAI_KEY
from tests.solve_issue_scenario import REPO, Script, sample_repo
from tests.test_solve_issue_e2e import git

ANTHROPIC_KEY = "sk-ant-test-not-a-real-key-3p"
MODELS = {"planner": "local:qwen3-coder-30b", "developer": "sonnet", "reviewer": "openai:gpt-5"}


def graph_on_three_providers(folder: Path) -> Path:
    """The bundled graph, with a `model:` for the planner, the developer and the reviewer."""
    text = (REPO / "graphs" / "solve-issue.yaml").read_text()
    for role, model in MODELS.items():
        text, n = re.subn(
            rf"^  {role}:\n    extends: {role}\n",
            f"  {role}:\n    extends: {role}\n    model: {model}\n",
            text,
            flags=re.MULTILINE,
        )
        assert n == 1, role
    path = folder / "solve-issue.yaml"
    path.write_text(text)
    return path


def chat_handler(script: Script) -> Callable[[dict[str, Any]], ChatResponse]:
    """The scenario's script behind an OpenAI-style endpoint: the request as the script reads
    a Messages API one (the system prompt, the tool results just sent back), the answer as a
    chat completion."""

    def handle(body: dict[str, Any]) -> ChatResponse:
        messages = body["messages"]
        results = []
        for message in reversed(messages):
            if message["role"] != "tool":
                break
            results.insert(0, {"type": "tool_result", "content": message["content"]})
        asked = {
            "system": [{"type": "text", "text": messages[0]["content"]}],
            "messages": [{"role": "user", "content": results}] if results else [],
        }
        answer: FakeResponse = script(asked)
        if answer.status >= 400:
            return ChatResponse(status=answer.status, error_message=answer.error_message)
        text = "".join(b["text"] for b in answer.content if b["type"] == "text")
        calls = [(b["name"], b["input"]) for b in answer.content if b["type"] == "tool_use"]
        return ChatResponse(text=text, tool_calls=calls)

    return handle


def test_solve_issue_with_roles_on_three_providers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = Script()
    repo = sample_repo(tmp_path / "statskit")
    graph = graph_on_three_providers(tmp_path)
    store = tmp_path / "store"
    with (
        FakeAnthropic(script) as claude,
        FakeOpenAI(chat_handler(script), api_key=LOCAL_KEY, cost_per_token=1e-7) as local,
        FakeOpenAI(chat_handler(script), api_key=OPENAI_KEY) as openai,
    ):
        models = tmp_path / "models.yaml"
        models.write_text(
            "providers:\n"
            f"  local: {{kind: openai-compatible, base_url: '{local.url}', "
            "api_key_env: LOCAL_LLM_KEY}\n"
            "prices:\n  openai:gpt-5: {input: 1.25, output: 10.0, cache_read: 0.125}\n"
            "  local:qwen3-coder-30b: {input: 0, output: 0}\n"
        )
        for name, value in {
            "ANTHROPIC_BASE_URL": claude.url,
            "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
            "OPENAI_BASE_URL": openai.url,
            "OPENAI_API_KEY": OPENAI_KEY,
            "LOCAL_LLM_KEY": LOCAL_KEY,
            "ORCHESTRATOR_MODELS_FILE": str(models),
        }.items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("ORCHESTRATOR_MODEL", raising=False)
        monkeypatch.chdir(repo)
        result = CliRunner().invoke(
            cli,
            ["run", str(graph), "-i", "issue=@ISSUE.md", "--store", str(store)],
            catch_exceptions=False,
        )
    assert result.exit_code == 0, result.stderr + result.stdout
    assert script.finished, {role: len(turns) for role, turns in script.turns.items()}

    db = SqliteStore(store)
    (row,) = db.threads()
    events = db.events(row.id)
    steps = [e.event for e in events if isinstance(e.event, StepCommitted)]
    assert [(s.role, s.status, s.model) for s in steps] == [
        ("planner", "ready", "local:qwen3-coder-30b"),
        ("developer", "done", "claude-sonnet-5-5"),
        ("reviewer", "rejected", "openai:gpt-5"),
        ("developer", "done", "claude-sonnet-5-5"),
        ("reviewer", "approved", "openai:gpt-5"),
        ("tester", "passed", "claude-sonnet-5-5"),
    ]
    # Each provider got its own roles' requests, with its own key.
    assert {r.headers["authorization"] for r in local.requests} == {f"Bearer {LOCAL_KEY}"}
    assert {r.headers["authorization"] for r in openai.requests} == {f"Bearer {OPENAI_KEY}"}
    assert {r.body["model"] for r in openai.requests} == {"gpt-5"}
    # The ledger, split by provider.
    book = story_json(row, events)["ledger_by_provider"]
    assert {name: entry["steps"] for name, entry in book.items()} == {
        "local": 1,
        "anthropic": 3,
        "openai": 2,
    }
    assert all(entry["cost_usd"] > 0 for entry in book.values())
    shown = CliRunner().invoke(cli, ["threads", "show", row.id, "--store", str(store)])
    assert "cost by provider:" in shown.stdout and "openai:gpt-5" in shown.stdout
    db.close()
    # The fix is committed on the thread's branch.
    fixed = git(repo, "show", f"orchestrator/{row.id}:statskit/stats.py")
    assert "return (ordered[middle - 1] + ordered[middle]) / 2\n" in fixed + "\n"
    # No key in the store.
    for path in store.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for key in (LOCAL_KEY, OPENAI_KEY, ANTHROPIC_KEY):
                assert key.encode() not in data, (path, key)
    assert json.loads(json.dumps(book))  # plain JSON
