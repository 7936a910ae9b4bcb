"""`--reuse` with models (docs/format.md section 20): the fork project's roles played by the
real `anthropic` client against the fake Messages API. After the fork point, the original's
replies are taken while the steps are asked the same thing: the fake API is sent a request only
from the first step that differs, counted on the server."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.core.events import StepCommitted
from orchestrator.definition.loader import load_graph
from orchestrator.run.options import RunOptions
from orchestrator.run.session import Session
from orchestrator.store.sqlite import SqliteStore
from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse
from tests.anthropic_fixtures import fake_server
from tests.fork_project import GRAPH

# The fork project's graph, its roles played by the default model instead of Python functions.
MODEL_GRAPH = re.sub(r"\n    actor: \{ python: \"roles:\w+\" \}", "", GRAPH)


def role_of(body: dict[str, Any]) -> str:
    return str(body["system"][0]["text"].split("\n", 1)[0].removeprefix("# Role: "))


def script(body: dict[str, Any]) -> FakeResponse:
    """The model: the writer drafts, the editor edits, the reviewer asks for changes on its
    first look at a draft and approves an edit."""
    role = role_of(body)
    asked = body["messages"][-1]["content"][0]["text"]
    if role == "writer":
        return FakeResponse.text("---\n$status: drafted\ndraft: draft v1\n---\n")
    if role == "editor":
        return FakeResponse.text("---\nedit: made it shorter\n---\n")
    if "Review: draft v1" in asked:
        return FakeResponse.text("---\n$status: changes\nnotes: shorter\ntone: plain\n---\n")
    return FakeResponse.text("---\n$status: approved\ntone: plain\n---\n")


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with fake_server(monkeypatch) as fake:
        fake.handler = script
        yield fake


def messages(server: FakeAnthropic) -> list[str]:
    """The roles the fake API was asked for, in order."""
    return [role_of(r.body) for r in server.requests if r.path.startswith("/v1/messages")]


def test_reuse_sends_requests_only_from_the_first_changed_step(
    server: FakeAnthropic, tmp_path: Path
) -> None:
    path = tmp_path / "review.yaml"
    path.write_text(MODEL_GRAPH)
    graph = load_graph(path)
    (tmp_path / "ws").mkdir()
    options = RunOptions(max_retries=0, timeout=10)
    with Session(SqliteStore(tmp_path / "store")) as session:
        started = session.start(graph, {"task": "owls"}, folder=tmp_path / "ws")
        original = started.thread_id
        asyncio.run(session.advance(graph, original, options=options))
        assert session.view(original).path == ("writer", "reviewer", "editor", "reviewer", "$END")
        assert messages(server) == ["writer", "reviewer", "editor", "reviewer"]

        # Step 2's reply as the original's, but another tone: step 3 (the editor, asked the
        # same) is the original's reply, step 4 (the reviewer, now asked otherwise) is not.
        reply = {"notes": "shorter", "tone": "gentle"}
        fork = session.fork(original, at=2, status="changes", set=reply, reuse=True)
        asyncio.run(session.advance(graph, fork, options=options))
        assert messages(server)[4:] == ["reviewer"]  # one request: the editor was not asked
        steps = [e.event for e in session.events(fork) if isinstance(e.event, StepCommitted)]
        assert [(s.role, s.actor) for s in steps] == [
            ("writer", "anthropic"),
            ("reviewer", "fork"),
            ("editor", "reuse"),
            ("reviewer", "anthropic"),
        ]
        assert steps[2].cost_usd == 0 and steps[3].cost_usd > 0

        # control: the same fork without --reuse asks the editor too
        control = session.fork(original, at=2, status="changes", set=reply)
        asyncio.run(session.advance(graph, control, options=options))
        assert messages(server)[5:] == ["editor", "reviewer"]
