"""Shared helpers for the tests that run the real `anthropic` client against FakeAnthropic.

Test modules wrap `fake_server()` in a local fixture; no test needs the internet or a real key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from orchestrator.actors.anthropic import AnthropicActor
from orchestrator.actors.base import ActReply, ActRequest, Attempt, HistoryItem, Visit
from orchestrator.definition.models import Role
from orchestrator.testing.fake_anthropic import FakeAnthropic

TEST_KEY = "sk-test-not-a-real-key-7f3a9c"

PLANNER_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {
            "type": "object",
            "properties": {
                "$status": {"const": "ready"},
                "plan": {"type": "string", "description": "The plan, step by step"},
                "risk": {"enum": ["low", "medium", "high"]},
            },
            "required": ["$status", "plan"],
        },
        {
            "type": "object",
            "properties": {
                "$status": {"const": "insufficient_info"},
                "question": {"type": "string", "description": "What is missing"},
            },
            "required": ["$status", "question"],
        },
    ]
}

READY = "---\n$status: ready\nplan: add a guard\n---\nDone."


@contextmanager
def fake_server(monkeypatch: pytest.MonkeyPatch, **kw: Any) -> Iterator[FakeAnthropic]:
    """A started fake with the environment pointing the SDK at it (and no real credentials)."""
    with FakeAnthropic(**kw) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
        for name in ("ANTHROPIC_AUTH_TOKEN", "ORCHESTRATOR_MODEL", "ORCHESTRATOR_MODELS_FILE"):
            monkeypatch.delenv(name, raising=False)
        yield server


def make_role(tools: tuple[str, ...] = (), **fields: Any) -> Role:
    data: dict[str, Any] = {
        "description": "Plans a fix",
        "goal": "You are a careful planner.",
        "frontmatter": PLANNER_SCHEMA,
        "tools": list(tools),
    }
    data.update(fields)
    return Role(**data)


def make_request(
    role: Role | None = None,
    *,
    workspace: Path | None = None,
    prompt: str = "Plan a fix for the crash.",
    inputs: dict[str, Any] | None = None,
    history: tuple[HistoryItem, ...] = (),
    previous_visits: tuple[Visit, ...] = (),
    attempts: tuple[Attempt, ...] = (),
    **kw: Any,
) -> ActRequest:
    return ActRequest(
        thread_id="t-1",
        step=kw.pop("step", 1),
        role_name=kw.pop("role_name", "planner"),
        role=role or make_role(),
        prompt=prompt,
        inputs={"task": "parse() crashes on empty input"} if inputs is None else inputs,
        history=history,
        previous_visits=previous_visits,
        attempts=attempts,
        workspace=workspace or Path("."),
        **kw,
    )


def play(actor: AnthropicActor, request: ActRequest) -> ActReply:
    """Run one step on a fresh event loop and close the client afterwards."""

    async def go() -> ActReply:
        try:
            return await actor.play(request)
        finally:
            await actor.aclose()

    return asyncio.run(go())


def fast_actor(**kw: Any) -> AnthropicActor:
    """An actor for tests: few retries, short timeouts."""
    kw.setdefault("max_retries", 2)
    kw.setdefault("timeout", 10.0)
    return AnthropicActor(**kw)


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of a request's last user message."""
    last = body["messages"][-1]
    assert last["role"] == "user"
    return [b for b in last["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
