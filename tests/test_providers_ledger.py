"""A thread whose roles run on two providers: each step names the provider and model that
answered in the log, `threads show` (text and JSON, with the cost split by provider), the
recording and its replay, and OpenTelemetry; and a role's `fallback:` models, tried in order
when a provider keeps failing (docs/models.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from orchestrator import run_thread
from orchestrator.actors.base import ActorError
from orchestrator.actors.recording import parse_recording, recording_from_events
from orchestrator.actors.routing import ModelActor
from orchestrator.core.events import StepCommitted
from orchestrator.definition.models import Graph
from orchestrator.run.options import RunOptions
from orchestrator.store.sqlite import SqliteStore
from orchestrator.testing.fake_openai import ChatResponse
from orchestrator.views.story import story_json, story_text
from tests.anthropic_fixtures import READY, fake_server, make_request, make_role
from tests.openai_fixtures import local_provider
from tests.test_telemetry import exporter  # noqa: F401  (the fixture)

GRAPH = """
name: two-providers
description: A planner on a local model, a reviewer on Claude.
roles:
  planner:
    description: plans
    goal: You plan.
    model: local:qwen3-coder
    frontmatter:
      type: object
      properties: {$status: {const: ready}, plan: {type: string}}
      required: [$status, plan]
  reviewer:
    description: reviews
    goal: You review.
    model: sonnet
    frontmatter:
      type: object
      properties: {$status: {const: ready}, plan: {type: string}}
      required: [$status, plan]
graph:
  $START:
    _: {role: planner, prompt: "Plan {{{$inputs.task}}}"}
  planner:
    ready: {role: reviewer, prompt: "Review {{{plan}}}"}
  reviewer:
    ready: {role: $END, prompt: "Done: {{{plan}}}"}
"""


def test_every_step_names_its_provider_and_model(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    make_graph: Callable[..., Graph],
    exporter: InMemorySpanExporter,  # noqa: F811
) -> None:
    with fake_server(monkeypatch) as claude, local_provider(monkeypatch, tmp_path) as local:
        local.reply_text(READY)
        claude.reply_text(READY)
        store = SqliteStore(tmp_path / "store")
        result = run_thread(
            make_graph(GRAPH), {"task": "x"}, store=store, workspace=tmp_path,
            options=RunOptions(max_retries=0, timeout=10),
        )  # fmt: skip
    assert result.state == "completed", result.reason
    events = store.events(result.thread_id)
    steps = [e.event for e in events if isinstance(e.event, StepCommitted)]
    assert [s.model for s in steps] == ["local:qwen3-coder", "claude-sonnet-5-5"]

    row = store.thread(result.thread_id)
    text = story_text(row, events)
    assert "local:qwen3-coder" in text and "claude-sonnet-5-5" in text
    assert "cost by provider:" in text
    data = story_json(row, events)
    assert [s["provider"] for s in data["steps"]] == ["local", "anthropic"]
    assert set(data["ledger_by_provider"]) == {"local", "anthropic"}
    assert data["ledger_by_provider"]["local"]["models"] == ["local:qwen3-coder"]

    # The recording keeps each step's model, and a replay names it again.
    recording = recording_from_events([e.event for e in events])
    assert [s.model for s in recording.steps] == ["local:qwen3-coder", "claude-sonnet-5-5"]
    again = parse_recording(recording.to_dict(), "r.yaml")
    assert [s.model for s in again.steps] == ["local:qwen3-coder", "claude-sonnet-5-5"]

    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert spans["invoke_agent planner"].attributes["gen_ai.provider.name"] == "local"
    assert spans["chat local:qwen3-coder"].attributes["gen_ai.provider.name"] == "local"
    assert spans["invoke_agent reviewer"].attributes["gen_ai.provider.name"] == "anthropic"
    store.close()


def _play(role: Any, model: str, **kw: Any) -> Any:
    actor = ModelActor(max_retries=0, timeout=10.0, **kw)

    async def go() -> Any:
        try:
            return await actor.play(make_request(role, model=model))
        finally:
            await actor.aclose()

    return asyncio.run(go())


def test_a_fallback_answers_when_the_provider_keeps_failing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with fake_server(monkeypatch) as claude, local_provider(monkeypatch, tmp_path) as local:
        local.fail(status=503)
        claude.reply_text(READY)
        role = make_role(fallback=["haiku"])
        reply = _play(role, "local:qwen3-coder")
        assert reply.model == "claude-haiku-5-5"  # the step records which model answered
        assert len(local.chat_requests) == 1 and len(claude.message_requests) == 1

        # Both failing: the step fails with each one's reason.
        local.fail(status=503)
        claude.fail(status=529)
        with pytest.raises(ActorError) as caught:
            _play(role, "local:qwen3-coder")
        assert caught.value.message.startswith("every model of the role failed: local:")
        assert "claude-haiku-5-5: Anthropic API overloaded (529)" in caught.value.message


def test_a_reply_is_never_retried_elsewhere(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The control: a failure another provider would not fix (the tool loop) is not retried."""
    with fake_server(monkeypatch) as claude, local_provider(monkeypatch, tmp_path) as local:
        local.handler = lambda body: ChatResponse(tool_calls=[("search_files", {"pattern": "x"})])
        role = make_role(("read",), fallback=["haiku"])
        with pytest.raises(ActorError) as caught:
            _play(role, "local:qwen3-coder", max_tool_rounds=1)
        assert caught.value.kind == "tool-loop"
        assert claude.message_requests == []


def test_validate_checks_the_fallback_models(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from orchestrator.linter import lint_graph_file

    monkeypatch.delenv("ORCHESTRATOR_MODELS_FILE", raising=False)
    monkeypatch.setenv("ORCHESTRATOR_HOME", str(tmp_path))
    path = tmp_path / "g.yaml"
    path.write_text(GRAPH.replace("model: sonnet", "model: sonnet\n    fallback: [nowhere:x]"))
    found = [(p.code, p.message) for p in lint_graph_file(path) if p.code == "unknown-provider"]
    assert [code for code, _ in found] == ["unknown-provider", "unknown-provider"]
    assert any("'nowhere'" in message for _, message in found)


def test_run_asks_for_the_key_of_each_provider_its_roles_run_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, make_graph: Callable[..., Graph]
) -> None:
    from orchestrator.run.errors import SessionError
    from orchestrator.run.preflight import check_credentials

    models = tmp_path / "m.yaml"
    models.write_text(
        "providers: {local: {base_url: 'http://127.0.0.1:9/v1', api_key_env: LOCAL_LLM_KEY}}\n"
    )
    monkeypatch.setenv("ORCHESTRATOR_MODELS_FILE", str(models))
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "LOCAL_LLM_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    only_local = make_graph(GRAPH.replace("model: sonnet", "model: local:qwen3-coder"))
    with pytest.raises(SessionError, match="provider 'local': set LOCAL_LLM_KEY"):
        check_credentials(only_local)
    monkeypatch.setenv("LOCAL_LLM_KEY", "sk-local")
    check_credentials(only_local)  # no Anthropic key needed: no role runs on Claude
    with pytest.raises(SessionError, match="No Anthropic API key"):
        check_credentials(make_graph(GRAPH))
    with pytest.raises(SessionError, match="provider 'openai': set OPENAI_API_KEY"):
        check_credentials(only_local, "openai:gpt-5")  # --model for every role
