"""The command and human actors, and model resolution, through real processes and the engine."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestrator.actors.base import ActorError, ActRequest, Attempt, HumanNeeded
from orchestrator.actors.command import CommandProcessActor, scrubbed_environment
from orchestrator.actors.human import HumanActor
from orchestrator.definition.model_config import resolve_model
from orchestrator.definition.models import Graph
from orchestrator.extract import extract_output
from orchestrator.run.actors import model_settings
from tests.graphs_for_tests import REVIEW_LOOP


@pytest.fixture
def loop(make_graph: Callable[..., Graph]) -> Graph:
    return make_graph(REVIEW_LOOP)


def request(graph: Graph, role: str, tmp_path: Path, **extra: object) -> ActRequest:
    return ActRequest(
        thread_id="T",
        step=1,
        role_name=role,
        role=graph.roles[role],
        prompt="Do the thing",
        inputs={"topic": "owls"},
        workspace=tmp_path,
        **extra,  # type: ignore[arg-type]
    )


def test_command_actor_gets_prompt_on_stdin_and_no_secrets(
    loop: Graph, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret-value")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret")
    script = tmp_path / "echo.py"
    script.write_text(
        "import os, sys\n"
        "data = sys.stdin.read()\n"
        "leak = [k for k in os.environ if 'KEY' in k or 'TOKEN' in k]\n"
        "print('---\\n$status: drafted\\ndraft: ' + repr(len(data)) + '\\n---')\n"
        "print('saw task' if 'Do the thing' in data else 'no task')\n"
        "print('leak ' + ','.join(leak) if leak else 'clean')\n"
        "print(os.getcwd())\n"
    )
    actor = CommandProcessActor([sys.executable, str(script)], timeout=30)
    reply = asyncio.run(actor.play(request(loop, "writer", tmp_path)))
    assert "saw task" in reply.text and "clean" in reply.text
    assert str(tmp_path) in reply.text  # it ran in the step's workspace
    assert "sk-secret-value" not in reply.message
    assert "ANTHROPIC_API_KEY" not in scrubbed_environment()


def test_command_actor_repair_prompt_carries_errors(loop: Graph, tmp_path: Path) -> None:
    script = tmp_path / "cat.py"
    script.write_text("import sys; sys.stdout.write(sys.stdin.read())")
    actor = CommandProcessActor([sys.executable, str(script)])
    attempt = Attempt("bad reply text", ("status 'drafted': field 'draft' is required",))
    reply = asyncio.run(actor.play(request(loop, "writer", tmp_path, attempts=(attempt,))))
    assert "bad reply text" in reply.text
    assert "field 'draft' is required" in reply.text


def test_command_actor_timeout_and_failure_are_actor_errors(loop: Graph, tmp_path: Path) -> None:
    slow = CommandProcessActor([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    with pytest.raises(ActorError) as err:
        asyncio.run(slow.play(request(loop, "writer", tmp_path)))
    assert err.value.kind == "timeout" and "0.5 s" in err.value.message
    failing = CommandProcessActor(
        [sys.executable, "-c", "import sys; sys.stderr.write('quota exceeded'); sys.exit(4)"]
    )
    with pytest.raises(ActorError) as err:
        asyncio.run(failing.play(request(loop, "writer", tmp_path)))
    assert err.value.kind == "process" and "status 4" in err.value.message
    assert "quota exceeded" in err.value.message
    missing = CommandProcessActor(["/nonexistent/agent"])
    with pytest.raises(ActorError, match="cannot start"):
        asyncio.run(missing.play(request(loop, "writer", tmp_path)))


def test_human_actor_without_terminal_waits(loop: Graph, tmp_path: Path) -> None:
    with pytest.raises(HumanNeeded):
        asyncio.run(HumanActor(interactive=False).play(request(loop, "reviewer", tmp_path)))


def test_human_actor_interview_builds_a_valid_reply(loop: Graph, tmp_path: Path) -> None:
    answers = iter(["maybe", "rejected", "needs more owls", "", "see notes"])
    shown: list[str] = []
    actor = HumanActor(ask=lambda prompt: next(answers), show=shown.append)
    reply = asyncio.run(actor.play(request(loop, "reviewer", tmp_path)))
    out = extract_output(reply.text, loop.roles["reviewer"])
    assert out.status == "rejected"
    assert out.frontmatter["comments"] == "needs more owls"
    assert "tags" not in out.frontmatter  # optional and skipped
    assert any("approved, rejected" in line for line in shown)


def test_model_resolution_order(loop: Graph, monkeypatch: pytest.MonkeyPatch) -> None:
    """--model, then the role's model, then the graph's defaults, then ORCHESTRATOR_MODEL."""

    def model(role: Any, override: str | None = None) -> str:
        return resolve_model(model_settings(loop, role, override).model)

    role = loop.roles["writer"]
    assert model_settings(loop, role).model is None
    assert model(role) == resolve_model("sonnet")
    monkeypatch.setenv("ORCHESTRATOR_MODEL", "haiku")
    assert model(role) == resolve_model("haiku")
    with_defaults = loop.model_copy(
        update={"defaults": loop.defaults.model_copy(update={"model": "opus"})}
    )
    assert resolve_model(model_settings(with_defaults, role).model) == resolve_model("opus")
    with_role_model = role.model_copy(update={"model": "opus"})
    assert model(with_role_model) == resolve_model("opus")
    assert model(with_role_model, "sonnet") == resolve_model("sonnet")


def test_human_interview_reads_typed_fields(
    make_graph: Callable[..., Graph], tmp_path: Path
) -> None:
    graph = make_graph(
        """
        name: typed
        description: d
        roles:
          boss:
            description: d
            goal: g
            actor: human
            frontmatter:
              type: object
              properties: { $status: { const: ok }, budget: { type: integer }, note: { type: string } }
              required: [$status, budget, note]
        graph:
          $START: { _: { role: boss, prompt: "decide" } }
          boss: { ok: { role: $END, prompt: "{{{budget}}}" } }
        """
    )
    answers = iter(["ok", "300", "42", ""])
    actor = HumanActor(ask=lambda prompt: next(answers), show=lambda line: None)
    reply = asyncio.run(actor.play(request(graph, "boss", tmp_path)))
    out = extract_output(reply.text, graph.roles["boss"])
    assert out.frontmatter == {"$status": "ok", "budget": 300, "note": "42"}
