"""The fake Messages API: wire shapes (checked with the real SDK), faults, caching, concurrency."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from typing import Any

import anthropic
import pytest

from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse

KEY = "sk-test-not-a-real-key"


def post(
    server: FakeAnthropic, body: dict[str, Any], key: str | None = KEY
) -> tuple[int, dict[str, str], bytes]:
    headers = {"content-type": "application/json"}
    if key:
        headers["x-api-key"] = key
    request = urllib.request.Request(
        server.url + "/v1/messages", data=json.dumps(body).encode(), headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def body(text: str = "hello", **kw: Any) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-5-5",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": text}],
        **kw,
    }


def client(server: FakeAnthropic, retries: int = 0) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key=KEY, base_url=server.url, max_retries=retries, timeout=10)


# ---------------------------------------------------------------------- shapes


def test_plain_json_message_parses_with_the_sdk() -> None:
    with FakeAnthropic() as server:
        server.reply_text("Hi there")
        server.reply_tool_use("bash", {"command": "ls"}, text="Let me look.")
        with client(server) as c:
            first = c.messages.create(**body())
            second = c.messages.create(**body())
    assert first.content[0].type == "text" and first.content[0].text == "Hi there"
    assert first.stop_reason == "end_turn" and first.model == "claude-sonnet-5-5"
    assert first.usage.input_tokens >= 1 and first.usage.output_tokens >= 1
    assert [b.type for b in second.content] == ["text", "tool_use"]
    tool = second.content[1]
    assert tool.type == "tool_use" and tool.name == "bash" and tool.input == {"command": "ls"}
    assert tool.id.startswith("toolu_") and second.stop_reason == "tool_use"


def test_sse_stream_has_the_real_event_sequence() -> None:
    with FakeAnthropic(chunk_size=5) as server:
        server.reply(FakeResponse.tool_use("bash", {"command": "echo hi"}, text="Running it"))
        status, headers, raw = post(server, body(stream=True))
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    events = [
        (chunk.split("\n")[0].removeprefix("event: "), json.loads(chunk.split("data: ", 1)[1]))
        for chunk in raw.decode().strip().split("\n\n")
    ]
    names = [name for name, _ in events]
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert names[-2:] == ["message_delta", "message_stop"]
    assert all(data["type"] == name for name, data in events)
    text = "".join(
        d["delta"]["text"] for n, d in events if d.get("delta", {}).get("type") == "text_delta"
    )
    assert text == "Running it"
    partial = "".join(
        d["delta"]["partial_json"]
        for n, d in events
        if d.get("delta", {}).get("type") == "input_json_delta"
    )
    assert json.loads(partial) == {"command": "echo hi"}
    start = events[0][1]["message"]
    assert start["content"] == [] and start["stop_reason"] is None
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == "tool_use"
    assert set(delta["usage"]) >= {"input_tokens", "output_tokens", "cache_read_input_tokens"}


def test_sdk_stream_helper_accumulates_the_fake_stream() -> None:
    with FakeAnthropic(chunk_size=3) as server:
        server.reply(FakeResponse.tool_use("search_files", {"pattern": "def \\w+"}, text="ok"))
        with client(server) as c, c.messages.stream(**body()) as stream:
            message = stream.get_final_message()
    assert message.stop_reason == "tool_use"
    assert message.content[0].type == "text" and message.content[0].text == "ok"
    assert message.content[1].type == "tool_use" and message.content[1].input == {
        "pattern": "def \\w+"
    }


# ---------------------------------------------------------------------- errors and faults


@pytest.mark.parametrize(
    ("status", "kind", "error_class"),
    [
        (429, "rate_limit_error", anthropic.RateLimitError),
        (529, "overloaded_error", anthropic.OverloadedError),
        (500, "api_error", anthropic.InternalServerError),
    ],
)
def test_error_statuses_have_api_bodies_and_retry_headers(
    status: int, kind: str, error_class: type[Exception]
) -> None:
    with FakeAnthropic() as server:
        server.fail(status=status, times=2)
        code, headers, raw = post(server, body())
        assert code == status and headers["retry-after-ms"] == "1"
        assert json.loads(raw) == {
            "type": "error",
            "error": {"type": kind, "message": json.loads(raw)["error"]["message"]},
        }
        with client(server) as c, pytest.raises(error_class):
            c.messages.create(**body())


def test_sdk_retries_then_succeeds() -> None:
    with FakeAnthropic() as server:
        server.fail(529, times=2).reply_text("finally")
        with client(server, retries=2) as c:
            message = c.messages.create(**body())
    assert message.content[0].text == "finally"  # type: ignore[union-attr]
    assert len(server.requests) == 3
    assert [r.headers.get("x-stainless-retry-count") for r in server.requests] == ["0", "1", "2"]


def test_missing_key_unknown_path_and_exhausted_script() -> None:
    with FakeAnthropic() as server:
        assert post(server, body(), key=None)[0] == 401
        request = urllib.request.Request(
            server.url + "/v1/nothing", data=b"{}", headers={"x-api-key": KEY}
        )
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=10)
        assert info.value.code == 404
        code, headers, raw = post(server, body())
        assert code == 400 and headers["x-should-retry"] == "false"
        assert "no scripted response left" in json.loads(raw)["error"]["message"]


def test_malformed_and_cut_responses() -> None:
    with FakeAnthropic() as server:
        server.malformed()
        code, _, raw = post(server, body())
        assert code == 200
        with pytest.raises(ValueError):
            json.loads(raw)
        server.cut_stream("abcdefghijklmnopqrstuvwxyz" * 4)
        with (
            client(server) as c,
            pytest.raises(Exception) as info,
            c.messages.stream(**body()) as s,
        ):
            s.get_final_message()
        assert "incomplete" in str(info.value) or "closed" in str(info.value)


def test_empty_content() -> None:
    with FakeAnthropic() as server:
        server.empty()
        with client(server) as c:
            message = c.messages.create(**body())
    assert message.content == [] and message.stop_reason == "end_turn"


def test_handler_and_recorded_requests() -> None:
    seen: list[str] = []

    def handler(request: dict[str, Any]) -> FakeResponse:
        seen.append(request["messages"][-1]["content"])
        return FakeResponse.text("echo: " + request["messages"][-1]["content"])

    with FakeAnthropic(handler) as server:
        server.reply_text("queued first")
        with client(server) as c:
            a = c.messages.create(**body("one"))
            b = c.messages.create(**body("two"))
    assert a.content[0].text == "queued first"  # type: ignore[union-attr]
    assert b.content[0].text == "echo: two"  # type: ignore[union-attr]
    assert seen == ["two"]
    assert [r.body["messages"][0]["content"] for r in server.requests] == ["one", "two"]
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert server.message_requests[1]["model"] == "claude-sonnet-5-5"


# ---------------------------------------------------------------------- caching


def cached_body(user: str) -> dict[str, Any]:
    eph = {"type": "ephemeral"}
    return {
        "model": "claude-sonnet-5-5",
        "max_tokens": 100,
        "system": [{"type": "text", "text": "S" * 4000, "cache_control": eph}],
        "tools": [{"type": "bash_20250124", "name": "bash", "cache_control": eph}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": user, "cache_control": eph}]}
        ],
    }


def test_prompt_cache_simulation() -> None:
    with FakeAnthropic() as server:
        first = server.usage_for(cached_body("U" * 400), "out")
        second = server.usage_for(cached_body("U" * 400), "out")
        other = server.usage_for(cached_body("V" * 400), "out")
        plain = server.usage_for(body("x" * 400), "out")
        other_model = server.usage_for({**cached_body("U" * 400), "model": "claude-opus-5-5"}, "o")
    assert first["cache_read_input_tokens"] == 0 and first["cache_creation_input_tokens"] > 1000
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    assert second["cache_creation_input_tokens"] == 0
    # a different last message still reads the shared prefix (tools + system)
    assert 1000 <= other["cache_read_input_tokens"] < first["cache_creation_input_tokens"]
    assert other["cache_creation_input_tokens"] == 100
    assert plain["cache_read_input_tokens"] == plain["cache_creation_input_tokens"] == 0
    assert plain["input_tokens"] == 100
    assert other_model["cache_read_input_tokens"] == 0  # caches are per model


def test_min_cache_tokens() -> None:
    with FakeAnthropic(min_cache_tokens=100_000) as server:
        server.usage_for(cached_body("U"), "x")
        again = server.usage_for(cached_body("U"), "x")
    assert again["cache_read_input_tokens"] == again["cache_creation_input_tokens"] == 0


# ---------------------------------------------------------------------- concurrency


def test_serves_requests_concurrently() -> None:
    """Four requests meet at a barrier inside the handler: only a concurrent server passes."""
    barrier = threading.Barrier(4, timeout=10)

    def handler(request: dict[str, Any]) -> FakeResponse:
        barrier.wait()
        return FakeResponse.text("together")

    results: list[int] = []
    with FakeAnthropic(handler) as server:
        threads = [
            threading.Thread(target=lambda: results.append(post(server, body())[0]))
            for _ in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=15)
    assert results == [200, 200, 200, 200]


def test_stop_is_prompt_even_with_a_slow_response_pending() -> None:
    server = FakeAnthropic().start()
    server.reply(FakeResponse.text("late", delay=30))
    outcome: list[str] = []

    def call() -> None:
        try:
            post(server, body())
        except OSError as exc:  # http.client.RemoteDisconnected is a ConnectionResetError
            outcome.append(type(exc).__name__)

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    while not server.requests:  # the request has arrived and the handler is waiting
        caller.join(timeout=0.01)
    server.stop()
    caller.join(timeout=10)
    assert not caller.is_alive() and outcome == ["RemoteDisconnected"]
