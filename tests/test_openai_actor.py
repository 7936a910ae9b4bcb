"""The OpenAI-style actor against FakeOpenAI, one step at a time: streaming and plain JSON, the
wire's faults, the price table when the provider reports no cost, a context window, the
`openai` provider's own settings (docs/models.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.actors.base import ActorError, ActReply, ActRequest, Visit
from orchestrator.actors.openai_chat import OpenAIActor
from orchestrator.testing.fake_openai import ChatResponse, FakeOpenAI
from tests.anthropic_fixtures import READY, make_request, make_role
from tests.openai_fixtures import OPENAI_KEY, local_provider


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeOpenAI]:
    with local_provider(monkeypatch, tmp_path) as fake:
        yield fake


def play(actor: OpenAIActor, request: ActRequest) -> ActReply:
    async def go() -> ActReply:
        try:
            return await actor.play(request)
        finally:
            await actor.aclose()

    return asyncio.run(go())


def local(**kw: object) -> OpenAIActor:
    kw.setdefault("max_retries", 0)
    kw.setdefault("timeout", 10.0)
    return OpenAIActor("local", **kw)  # type: ignore[arg-type]


REQUEST = {"model": "local:qwen3-coder"}


@pytest.mark.parametrize("stream", [True, False])
def test_a_reply_streamed_or_not(server: FakeOpenAI, stream: bool) -> None:
    server.reply_text(READY)
    reply = play(local(stream=stream), make_request(**REQUEST))
    assert reply.text == READY and reply.model == "local:qwen3-coder"
    body = server.chat_requests[0]
    assert body.get("stream", False) is stream
    assert body["model"] == "qwen3-coder" and body["max_tokens"] == 8192
    # No cost reported: the price table's (input 1.0, output 2.0 per million).
    usage = reply.usage
    assert reply.cost_usd == pytest.approx(
        (usage.input_tokens * 1.0 + usage.output_tokens * 2.0) / 1e6
    )


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("fault", ["malformed", "cut"])
def test_a_broken_reply_is_a_provider_error(server: FakeOpenAI, stream: bool, fault: str) -> None:
    server.reply(ChatResponse(text="---\n$status: ready\nplan: half of it", fault=fault))  # type: ignore[arg-type]
    with pytest.raises(ActorError) as caught:
        play(local(stream=stream), make_request(**REQUEST))
    assert caught.value.kind == "provider"
    assert "the provider 'local'" in caught.value.message


def test_an_empty_reply_says_why(server: FakeOpenAI) -> None:
    server.reply(ChatResponse(text="", finish_reason="length"))
    with pytest.raises(ActorError, match="used its whole max_tokens"):
        play(local(), make_request(**REQUEST))


def test_a_rate_limit_left_after_the_retries_is_its_own_kind(server: FakeOpenAI) -> None:
    server.fail(status=429, times=2)
    with pytest.raises(ActorError) as caught:
        play(local(max_retries=1), make_request(**REQUEST))
    assert caught.value.kind == "rate-limit"
    assert "rate limit (429) after 2 attempts" in caught.value.message


def test_a_prompt_over_the_context_window_drops_older_visits(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with local_provider(monkeypatch, tmp_path, context_tokens=3000) as server:
        server.reply_text(READY)
        visits = tuple(Visit("x" * 4000, f"reply {i}") for i in range(4))
        reply = play(local(), make_request(previous_visits=visits, **REQUEST))
    assert reply.text == READY
    kept = server.chat_requests[-1]["messages"]
    assert "earlier visits in this thread are left out" in kept[1]["content"]


def test_the_tool_rounds_are_limited(server: FakeOpenAI, tmp_path: Path) -> None:
    server.handler = lambda body: ChatResponse(tool_calls=[("search_files", {"pattern": "x"})])
    with pytest.raises(ActorError) as caught:
        play(
            local(max_tool_rounds=2),
            make_request(make_role(("read",)), workspace=tmp_path, **REQUEST),
        )
    assert caught.value.kind == "tool-loop"
    assert caught.value.usage.output_tokens > 0  # what the failed step spent is kept


def test_a_provider_without_tool_calls_refuses_a_role_with_tools(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    models = tmp_path / "m.yaml"
    models.write_text("providers: {plain: {base_url: 'http://127.0.0.1:9/v1', tools: false}}\n")
    monkeypatch.setenv("ORCHESTRATOR_MODELS_FILE", str(models))
    with pytest.raises(ActorError) as caught:
        play(OpenAIActor("plain"), make_request(make_role(("read",)), model="plain:tiny"))
    assert caught.value.kind == "config"
    assert "'plain:tiny' takes no tool calls" in caught.value.message


def test_the_openai_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(api_key=OPENAI_KEY) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
        monkeypatch.delenv("ORCHESTRATOR_MODELS_FILE", raising=False)
        server.reply_text(READY)
        reply = play(OpenAIActor("openai", max_retries=0), make_request(model="openai:gpt-5"))
        assert reply.model == "openai:gpt-5"
        body = server.chat_requests[0]
        assert body["model"] == "gpt-5" and body["max_completion_tokens"] == 8192
        assert "max_tokens" not in body
        monkeypatch.delenv("OPENAI_API_KEY")
        with pytest.raises(ActorError, match="no key for the OpenAI API: set OPENAI_API_KEY"):
            play(OpenAIActor("openai"), make_request(model="openai:gpt-5"))


def test_a_call_that_never_finishes_meets_the_deadline(server: FakeOpenAI) -> None:
    server.reply(ChatResponse(text=READY, delay=30))  # the SDK's own read timeout is 10 s
    with pytest.raises(ActorError) as caught:
        play(local(deadline=0.5), make_request(**REQUEST))
    assert caught.value.kind == "timeout"
    assert "did not finish within 0.5 s" in caught.value.message
