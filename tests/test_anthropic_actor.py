"""The Anthropic actor with the real `anthropic` client against FakeAnthropic on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.actors.anthropic import AnthropicActor, with_breakpoints
from orchestrator.actors.base import ActorError, Attempt, Visit
from orchestrator.actors.prompting import system_prompt, visit_message
from orchestrator.definition.model_config import cost_usd
from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse
from tests.anthropic_fixtures import (
    READY,
    TEST_KEY,
    fake_server,
    fast_actor,
    make_request,
    make_role,
    play,
    tool_results,
)

EDITOR = "str_replace_based_edit_tool"
SECRET = "outside-secret-content-5150"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with fake_server(monkeypatch) as fake:
        yield fake


def breakpoints(body: dict[str, Any]) -> int:
    text = json.dumps(body)
    return text.count('"cache_control"')


# ---------------------------------------------------------------------- tools


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "json"])
def test_edits_a_file_with_the_text_editor(
    server: FakeAnthropic, tmp_path: Path, stream: bool
) -> None:
    (tmp_path / "app.py").write_text("def parse(text):\n    return text.split()\n")
    server.reply_tool_use(EDITOR, {"command": "view", "path": "app.py"})
    server.reply_tool_use(
        EDITOR,
        {
            "command": "str_replace",
            "path": "app.py",
            "old_str": "    return text.split()",
            "new_str": "    if not text:\n        return []\n    return text.split()",
        },
    )
    server.reply_tool_use(EDITOR, {"command": "create", "path": "NOTES.md", "file_text": "guard\n"})
    server.reply_text(READY)
    request = make_request(make_role(tools=("read", "edit")), workspace=tmp_path)
    reply = play(fast_actor(stream=stream), request)

    assert reply.text == READY
    assert reply.tool_calls == 3
    assert (tmp_path / "app.py").read_text().startswith("def parse(text):\n    if not text:")
    assert (tmp_path / "NOTES.md").read_text() == "guard\n"
    bodies = server.message_requests
    assert len(bodies) == 4 and all(b.get("stream", False) is stream for b in bodies)
    viewed = tool_results(bodies[1])[0]
    assert "     1\tdef parse(text):" in viewed["content"] and viewed["is_error"] is False
    assert bodies[1]["messages"][-2]["content"][0]["type"] == "tool_use"
    assert reply.message == visit_message(request)
    assert reply.usage.output_tokens > 0 and reply.usage.cache_read_input_tokens > 0
    assert reply.model == "claude-sonnet-5-5" and reply.cost_usd > 0


def test_paths_outside_the_workspace_are_refused(server: FakeAnthropic, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text(SECRET)
    (ws / "link.txt").symlink_to(outside)
    server.reply_tool_uses(
        [
            (EDITOR, {"command": "view", "path": "../outside.txt"}),
            (EDITOR, {"command": "view", "path": str(outside)}),
            (EDITOR, {"command": "view", "path": "link.txt"}),
            ("search_files", {"pattern": "outside-secret", "path": ".."}),
        ]
    )
    server.reply_text(READY)
    reply = play(fast_actor(), make_request(make_role(tools=("read",)), workspace=ws))
    assert reply.tool_calls == 4
    results = tool_results(server.message_requests[1])
    assert [r["is_error"] for r in results] == [True, True, True, True]
    assert all("outside the workspace" in r["content"] for r in results)
    for recorded in server.requests:
        assert SECRET.encode() not in recorded.raw


def test_read_only_role_cannot_edit(server: FakeAnthropic, tmp_path: Path) -> None:
    server.reply_tool_use(EDITOR, {"command": "create", "path": "x.txt", "file_text": "x"})
    server.reply_tool_use("bash", {"command": "touch y.txt"})
    server.reply_text(READY)
    play(fast_actor(), make_request(make_role(tools=("read",)), workspace=tmp_path))
    first, second = (tool_results(b)[0] for b in server.message_requests[1:3])
    assert first["is_error"] and "this role may only read files" in first["content"]
    assert second["is_error"] and "not available" in second["content"]
    assert not (tmp_path / "x.txt").exists() and not (tmp_path / "y.txt").exists()


def test_api_key_is_in_no_request_body_and_not_in_the_shell(
    server: FakeAnthropic, tmp_path: Path
) -> None:
    server.reply_tool_use("bash", {"command": "env; echo done"})
    server.reply_text(READY)
    role = make_role(tools=("shell",), goal=f"You plan. (not the key: {TEST_KEY[:6]})")
    play(fast_actor(), make_request(role, workspace=tmp_path))
    env_output = tool_results(server.message_requests[1])[0]["content"]
    assert "PATH=" in env_output and "done" in env_output
    assert "ANTHROPIC_API_KEY" not in env_output and TEST_KEY not in env_output
    for recorded in server.requests:
        assert TEST_KEY.encode() not in recorded.raw
    assert server.requests[0].headers["authorization"] == f"Bearer {TEST_KEY}"


def test_tool_loop_is_bounded(server: FakeAnthropic, tmp_path: Path) -> None:
    server.handler = lambda body: FakeResponse.tool_use(EDITOR, {"command": "view", "path": "."})
    with pytest.raises(ActorError) as info:
        play(
            fast_actor(max_tool_rounds=3),
            make_request(make_role(tools=("read",)), workspace=tmp_path),
        )
    assert info.value.kind == "tool-loop" and "3 rounds" in info.value.message
    assert len(server.message_requests) == 4


# ---------------------------------------------------------------------- conversation


def test_repair_sends_the_rejected_reply_and_the_errors(server: FakeAnthropic) -> None:
    server.reply_text(READY)
    rejected = "I think we should add a guard."
    request = make_request(
        attempts=(Attempt(rejected, ("no frontmatter block found", "ready: 'plan' is required")),)
    )
    reply = play(fast_actor(), request)
    assert reply.text == READY
    messages = server.message_requests[0]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[0]["content"][0]["text"] == visit_message(request)
    assert messages[1]["content"] == rejected
    repair = messages[2]["content"][0]["text"]
    assert "no frontmatter block found" in repair and "'plan' is required" in repair
    assert "`insufficient_info`" in repair and "begin with the frontmatter" in repair
    assert reply.message == visit_message(request)  # the visit message, not the repair


def test_second_visit_reuses_the_cached_prefix(server: FakeAnthropic, tmp_path: Path) -> None:
    role = make_role(tools=("read",), procedure="Think. " * 300)
    first_request = make_request(role, workspace=tmp_path)
    server.reply_text(READY)
    first = play(fast_actor(), first_request)
    assert first.usage.cache_read_input_tokens == 0
    assert first.usage.cache_creation_input_tokens > 0

    second_request = make_request(
        role,
        workspace=tmp_path,
        step=3,
        prompt="The reviewer asked for tests. Revise the plan.",
        previous_visits=(Visit(first.message, first.text),),
    )
    server.reply_text(READY)
    second = play(fast_actor(), second_request)

    one, two = server.message_requests
    assert one["system"] == two["system"]
    assert one["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert one["tools"] == two["tools"] and two["tools"][-1]["cache_control"] == {
        "type": "ephemeral"
    }
    assert two["system"][0]["text"] == system_prompt(role, "planner")
    assert [m["role"] for m in two["messages"]] == ["user", "assistant", "user"]
    assert two["messages"][0]["content"][0]["text"] == first.message
    assert two["messages"][1]["content"] == READY
    assert two["messages"][0]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert two["messages"][2]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert breakpoints(one) <= 4 and breakpoints(two) == 4
    # the whole first conversation prefix (tools, system, first message) is read from cache
    assert second.usage.cache_read_input_tokens >= first.usage.cache_creation_input_tokens
    assert second.usage.cache_read_input_tokens > 0


def test_breakpoints_never_exceed_four() -> None:
    conversation = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "c"}]},
        {"role": "assistant", "content": "d"},
        {"role": "user", "content": "e"},
    ]
    marked = with_breakpoints(conversation)
    assert breakpoints({"m": marked}) == 2
    assert "cache_control" in marked[2]["content"][0] and "cache_control" in marked[4]["content"][0]
    assert conversation[4]["content"] == "e"  # the input is not modified


def test_request_settings(server: FakeAnthropic) -> None:
    server.reply_text(READY)
    server.reply_text(READY)
    play(fast_actor(), make_request(model="haiku", temperature=0.2))
    play(fast_actor(), make_request(model="claude-opus-4-8", max_tokens=1234))
    one, two = server.message_requests
    assert one["model"] == "claude-haiku-5-5" and one["temperature"] == 0.2
    assert one["max_tokens"] == 8192 and "tools" not in one
    assert two["model"] == "claude-opus-4-8" and two["max_tokens"] == 1234
    assert "temperature" not in two


def test_usage_is_summed_over_tool_rounds(server: FakeAnthropic, tmp_path: Path) -> None:
    usage = {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_creation_input_tokens": 7,
        "cache_read_input_tokens": 3,
    }
    server.reply(
        FakeResponse(
            content=[
                {"type": "tool_use", "name": EDITOR, "input": {"command": "view", "path": "."}}
            ],
            stop_reason="tool_use",
            usage=usage,
        )
    )
    server.reply(FakeResponse.text(READY, usage=usage))
    reply = play(fast_actor(), make_request(make_role(tools=("read",)), workspace=tmp_path))
    assert reply.usage.to_dict() == {
        "input_tokens": 20,
        "output_tokens": 10,
        "cache_creation_input_tokens": 14,
        "cache_read_input_tokens": 6,
    }
    assert reply.cost_usd == pytest.approx(cost_usd("claude-sonnet-5-5", reply.usage))


# ---------------------------------------------------------------------- failures


def test_overloaded_beyond_retries_is_a_provider_error(server: FakeAnthropic) -> None:
    server.fail(status=529, times=3)
    server.reply_text(READY)  # would succeed on a 4th attempt, which must not happen
    with pytest.raises(ActorError) as info:
        play(fast_actor(max_retries=2), make_request())
    assert info.value.kind == "provider"
    assert info.value.message == "Anthropic API overloaded (529) after 3 attempts: Overloaded"
    assert len(server.requests) == 3 and server.pending == 1


def test_rate_limit_then_success(server: FakeAnthropic) -> None:
    server.fail(status=429, times=2).reply_text(READY)
    assert play(fast_actor(max_retries=2), make_request()).text == READY


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (500, "Anthropic API internal server error (500) after 2 attempts: Internal server error"),
        (429, "Anthropic API rate limit (429) after 2 attempts: Number of request tokens"),
        (401, "Anthropic API authentication failed (401): bad key (check ANTHROPIC_API_KEY)"),
        (400, "Anthropic API rejected the request (400): bad key"),
    ],
)
def test_status_errors_name_status_and_message(
    server: FakeAnthropic, status: int, expected: str
) -> None:
    message = "bad key" if status in (400, 401) else None
    server.fail(status=status, times=2, message=message)
    with pytest.raises(ActorError) as info:
        play(fast_actor(max_retries=1), make_request())
    # a rate limit has its own kind, so a batch can slow down for it instead of failing
    assert info.value.kind == ("rate-limit" if status == 429 else "provider")
    assert info.value.message.startswith(expected)


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "json"])
def test_malformed_json_is_a_provider_error(server: FakeAnthropic, stream: bool) -> None:
    server.malformed()
    with pytest.raises(ActorError) as info:
        play(fast_actor(stream=stream, max_retries=0), make_request())
    assert info.value.kind == "provider" and "malformed response" in info.value.message


def test_stream_cut_in_the_middle_is_a_provider_error(server: FakeAnthropic) -> None:
    server.cut_stream("---\n$status: ready\nplan: " + "a long plan " * 20)
    with pytest.raises(ActorError) as info:
        play(fast_actor(max_retries=0), make_request())
    assert info.value.kind == "provider"
    assert "broke off" in info.value.message or "ended before" in info.value.message


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "json"])
def test_empty_reply_is_a_provider_error(server: FakeAnthropic, stream: bool) -> None:
    server.empty()
    with pytest.raises(ActorError) as info:
        play(fast_actor(stream=stream), make_request())
    assert info.value.kind == "provider" and "empty reply" in info.value.message


def test_max_tokens_without_text_says_so(server: FakeAnthropic) -> None:
    server.reply(FakeResponse(content=[], stop_reason="max_tokens"))
    with pytest.raises(ActorError, match="raise max_tokens"):
        play(fast_actor(), make_request())


def test_timeout_is_an_actor_error_of_its_own_kind(server: FakeAnthropic) -> None:
    server.reply(FakeResponse.text(READY, delay=20))
    with pytest.raises(ActorError) as info:
        play(fast_actor(max_retries=0, timeout=0.3), make_request())
    assert info.value.kind == "timeout" and "timed out" in info.value.message


def test_a_step_failing_after_tool_rounds_keeps_what_it_spent(
    server: FakeAnthropic, tmp_path: Path
) -> None:
    server.reply_tool_use("str_replace_based_edit_tool", {"command": "view", "path": "."})
    server.fail(status=529, times=5)
    with pytest.raises(ActorError) as info:
        play(fast_actor(max_retries=0), make_request(make_role(tools=["read"]), workspace=tmp_path))
    spent = info.value.usage  # the first, successful call is counted
    assert spent.output_tokens > 0 and spent.input_tokens + spent.cache_creation_input_tokens > 0
    assert info.value.cost_usd > 0


def test_unreachable_server_is_a_provider_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeAnthropic() as fake:
        url = fake.url  # the port is closed once the server stops
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    with pytest.raises(ActorError) as info:
        play(fast_actor(max_retries=0), make_request())
    assert info.value.kind == "provider"
    assert "could not reach the Anthropic API" in info.value.message
    assert TEST_KEY not in info.value.message


def test_missing_key_is_a_clear_actor_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with pytest.raises(ActorError) as info:
        play(AnthropicActor(), make_request())
    assert "set ANTHROPIC_API_KEY" in info.value.message and "--replay" in info.value.message


# ---------------------------------------------------------------------- import cost


def test_importing_the_actor_does_not_import_the_sdk() -> None:
    code = (
        "import sys, orchestrator.actors.anthropic, orchestrator.actors.prompting, orchestrator.tools\n"
        "a = orchestrator.actors.anthropic.AnthropicActor(max_retries=1, timeout=5)\n"
        "print('anthropic' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_bad_models_file_is_a_config_error(
    server: FakeAnthropic, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "models.yaml"
    bad.write_text("aliases: [oops]\n")
    monkeypatch.setenv("ORCHESTRATOR_MODELS_FILE", str(bad))
    with pytest.raises(ActorError) as info:
        play(fast_actor(), make_request())
    assert info.value.kind == "config" and "models.yaml" in info.value.message
    assert server.requests == []


def test_a_stream_that_keeps_pinging_hits_the_call_deadline(server: FakeAnthropic) -> None:
    """Pings keep every read within the SDK's timeout; the call's own deadline ends it."""
    server.reply(FakeResponse.text("never finished", fault="pings"))
    started = time.monotonic()
    with pytest.raises(ActorError) as err:
        play(fast_actor(max_retries=0, timeout=1.0, deadline=1.5), make_request())
    assert err.value.kind == "timeout"
    assert "did not finish within 1.5 s" in err.value.message
    assert time.monotonic() - started < 30
