"""OpenTelemetry spans of a thread (the `otel` extra), with the SDK's in-memory exporter: the
span names, parents, GenAI attributes and token counts of a thread whose step calls a tool and
is repaired once, against the fake Messages API with the real `anthropic` client."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from orchestrator import get_thread, run_thread
from orchestrator.run import telemetry
from tests.anthropic_fixtures import fake_server
from tests.test_live_progress import GRAPH


def _require_extra() -> None:
    """Skip this module without the `otel` extra; in CI (.ci/run installs it) fail instead."""
    try:
        import opentelemetry.sdk  # noqa: F401  (only asks whether it is installed)
    except ImportError:
        missing = "the `otel` extra is not installed (pip install -e '.[otel]')"
        if os.environ.get("CI"):
            raise RuntimeError(f"{missing}; CI runs these tests, never skips them") from None
        pytest.skip(missing, allow_module_level=True)


_require_extra()

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402  (after the check above)
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    found = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(found))
    telemetry.use_provider(provider)
    try:
        yield found
    finally:
        telemetry.use_provider(None)


def test_a_thread_with_a_tool_call_and_a_repair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write_graph: Any, exporter: Any
) -> None:
    path = write_graph(GRAPH)
    (tmp_path / "NOTES.md").write_text("owls are birds\n")
    with fake_server(monkeypatch) as fake:
        fake.reply_tool_use("str_replace_based_edit_tool", {"command": "view", "path": "NOTES.md"})
        fake.reply_text("---\n$status: done\n---\nforgot the summary")
        fake.reply_text("---\n$status: done\nsummary: owls are birds\n---\n")
        result = run_thread(path, {"task": "x"}, store=tmp_path / "store", workspace=tmp_path)
        server = urlsplit(fake.url)
    assert result.state == "completed"
    spans = exporter.get_finished_spans()
    by_name: dict[str, list[Any]] = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    model = fake.message_requests[0]["model"]
    assert sorted(by_name) == [
        f"chat {model}",
        "execute_tool str_replace_based_edit_tool",
        "invoke_agent reader",
        "invoke_workflow reader",
    ]
    (root,) = by_name["invoke_workflow reader"]
    (step,) = by_name["invoke_agent reader"]
    chats = [s for s in spans if s.name.startswith("chat ")]
    (tool,) = by_name["execute_tool str_replace_based_edit_tool"]

    # One trace, the thread's: the trace id is the thread id's 128 bits.
    trace_id, parent_id = telemetry.trace_ids(result.thread_id)
    assert {s.context.trace_id for s in spans} == {trace_id}
    assert root.parent is not None and root.parent.span_id == parent_id
    assert step.parent.span_id == root.context.span_id
    assert len(chats) == 3  # the tool round, the rejected reply, the repair
    assert all(c.parent.span_id == step.context.span_id for c in chats)
    assert tool.parent.span_id == step.context.span_id
    assert chats[0].end_time <= tool.start_time and tool.end_time <= chats[1].start_time

    assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert root.attributes["gen_ai.workflow.name"] == "reader"
    assert root.attributes["gen_ai.conversation.id"] == result.thread_id
    assert root.attributes["orchestrator.thread.state"] == "completed"
    assert step.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert step.attributes["gen_ai.agent.name"] == "reader"
    assert step.attributes["gen_ai.provider.name"] == "anthropic"
    assert step.attributes["orchestrator.status"] == "done"
    assert step.attributes["orchestrator.repairs"] == 1
    (rejected,) = [e for e in step.events if e.name == "gen_ai.reply.rejected"]
    assert "summary" in " ".join(rejected.attributes["errors"])
    for chat in chats:
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.provider.name"] == "anthropic"
        assert chat.attributes["gen_ai.request.model"] == chat.attributes["gen_ai.response.model"]
        assert chat.attributes["gen_ai.response.id"].startswith("msg_")
    assert [c.attributes["gen_ai.response.finish_reasons"] for c in chats] == [
        ("tool_use",),
        ("end_turn",),
        ("end_turn",),
    ]
    # Where the call went and what it asked for (host and port only, never credentials).
    for chat in chats:
        assert chat.attributes["server.address"] == server.hostname
        assert chat.attributes["server.port"] == server.port
        assert chat.attributes["gen_ai.request.max_tokens"] == sent_max_tokens(fake)
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "str_replace_based_edit_tool"
    assert tool.attributes["gen_ai.tool.call.id"].startswith("toolu_")

    # Token counts: each call's as the API reported it; the step's is their sum, and the
    # thread's ledger (rejected reply included) says the same.
    sent = [r for r in fake.requests if r.path.startswith("/v1/messages")]
    assert len(sent) == 3
    for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"):
        assert all(c.attributes[key] > 0 for c in chats)
        assert step.attributes[key] == sum(c.attributes[key] for c in chats)
    usage = get_thread(result.thread_id, store=tmp_path / "store").steps[0].total_usage
    assert step.attributes["gen_ai.usage.output_tokens"] == usage["output_tokens"]
    assert step.attributes["gen_ai.usage.input_tokens"] == (
        usage["input_tokens"]
        + usage["cache_read_input_tokens"]
        + usage["cache_creation_input_tokens"]
    )


def test_nothing_is_imported_without_the_variables() -> None:
    code = textwrap.dedent(
        """
        import sys
        from orchestrator.testing import reply, simulate
        trace = simulate("solve-issue", [reply("blocked", reason="no")], {"issue": "x"})
        print(trace.state, any(m.startswith("opentelemetry") for m in sys.modules))
        """
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "False"


def test_the_console_exporter_from_the_standard_variables(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        from orchestrator.testing import reply, simulate
        simulate("solve-issue", [reply("ready", plan="p", files=[])], {"issue": "x"},
                 max_steps=1)
        """
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OTEL_TRACES_EXPORTER": "console"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert '"name": "invoke_agent planner"' in out.stderr
    assert '"name": "invoke_workflow solve-issue"' in out.stderr
    assert '"gen_ai.agent.name": "planner"' in out.stderr


def sent_max_tokens(fake: Any) -> int:
    (value,) = {r["max_tokens"] for r in fake.message_requests}
    return int(value)


def _simulate_with(
    env: dict[str, str], tmp_path: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    code = textwrap.dedent(
        """
        from orchestrator.testing import reply, simulate
        simulate("solve-issue", [reply("ready", plan="p", files=[])], {"issue": "x"},
                 max_steps=1)
        print("the program's own output")
        """
    )
    full = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **env}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=full, capture_output=True, text=True
    )


def test_console_spans_go_to_stderr_never_into_stdout(tmp_path: Path) -> None:
    out = _simulate_with({"OTEL_TRACES_EXPORTER": "console"}, tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "the program's own output\n"  # `run --json` stays JSON lines
    assert '"name": "invoke_agent planner"' in out.stderr


def test_the_service_name_of_the_variables_wins(tmp_path: Path) -> None:
    named = _simulate_with(
        {"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "triage-bot"}, tmp_path
    )
    assert '"service.name": "triage-bot"' in named.stderr
    default = _simulate_with({"OTEL_TRACES_EXPORTER": "console"}, tmp_path)
    assert '"service.name": "orchestrator"' in default.stderr


def test_grpc_without_its_exporter_says_so(tmp_path: Path) -> None:
    out = _simulate_with(
        {
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
        },
        tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "opentelemetry-exporter-otlp-proto-grpc" in out.stderr


def test_a_python_actor_step_is_named_python(
    tmp_path: Path, write_graph: Any, exporter: Any
) -> None:
    (tmp_path / "graphs").mkdir(exist_ok=True)
    (tmp_path / "graphs" / "stepper.py").write_text(
        "def done(call):\n    return {'$status': 'done'}\n"
    )
    path = write_graph(
        """
        name: py
        description: One Python step
        roles:
          stepper:
            description: d
            goal: g
            actor: {python: "stepper:done"}
            frontmatter: {type: object, properties: {$status: {const: done}}, required: [$status]}
        graph:
          $START: {_: {role: stepper, prompt: go}}
          stepper: {done: {role: $END, prompt: end}}
        """
    )
    result = run_thread(path, {"task": "x"}, store=tmp_path / "store", workspace=tmp_path)
    assert result.state == "completed"
    (step,) = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent stepper"]
    assert step.attributes["orchestrator.actor"] == "python"
