"""`orchestrator mcp` driven by the `mcp` package's own client, the server a real subprocess.

One server serves the whole module's calls in order: it lists the graphs, validates one, starts
a replayed solve-issue thread (the shipped examples' recording) and reads its story, answers a
person a second thread waits for, cancels a third, and answers every mistake with a tool error
while it keeps serving.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from tests.mcp_helpers import require_mcp

require_mcp()

import anyio  # noqa: E402  (after the check: the extra brings anyio)
import pytest  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RECORDING = REPO / "examples" / "solve-issue.recording.yaml"
SAMPLE = REPO / "examples" / "sample-repo"

ASK = """\
name: ask
description: A person approves a plan.
roles:
  approver:
    description: Approves or rejects
    goal: Approve the plan or say why not.
    actor: human
    frontmatter:
      oneOf:
        - type: object
          properties:
            $status: { const: approved }
            note: { type: string }
          required: [$status, note]
        - type: object
          properties:
            $status: { const: rejected }
            why: { type: string }
          required: [$status, why]
graph:
  $START:
    _: { role: approver, prompt: "Approve: {{{$inputs.task}}}" }
  approver:
    approved: { role: $END, prompt: "Approved: {{{note}}}" }
    rejected: { role: $END, prompt: "Rejected: {{{why}}}", outcome: failure }
"""

BROKEN = """\
name: broken
description: An edge to a role that does not exist.
roles:
  only:
    description: Only
    goal: Be.
    frontmatter: { type: object, properties: { x: { type: string } }, required: [x] }
graph:
  $START:
    _: { role: only, prompt: go }
  only:
    _: { role: nobody, prompt: "{{x}}" }
"""


FLAKY = """\
name: flaky
description: A Python step that fails while a file says so.
roles:
  checker:
    description: Checks
    goal: Check.
    actor: { python: "flaky:check" }
    frontmatter: { type: object, properties: { ok: { type: boolean } }, required: [ok] }
graph:
  $START:
    _: { role: checker, prompt: go }
  checker:
    _: { role: $END, prompt: "ok={{ok}}" }
"""

FLAKY_PY = """\
def check(call):
    if (call.workspace / "broken").exists():
        raise RuntimeError("the workspace is broken")
    return {"ok": True}
"""


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def data_of(result: Any) -> Any:
    assert not result.is_error, text_of(result)
    structured = result.structured_content
    if structured is not None:
        return structured.get("result", structured)
    return json.loads(text_of(result))


def run_session(tmp_path: Path, script: Any, *flags: str) -> Any:
    """`script(session, project)` against a server started in `project` with `flags`."""
    project = tmp_path / "project"
    (project / "graphs").mkdir(parents=True, exist_ok=True)
    (project / "graphs" / "ask.yaml").write_text(ASK)
    (project / "graphs" / "broken.yaml").write_text(BROKEN)
    (project / "graphs" / "flaky.yaml").write_text(FLAKY)
    (project / "graphs" / "flaky.py").write_text(FLAKY_PY)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "orchestrator", "mcp", "--store", str(tmp_path / "store"), *flags],
        cwd=str(project),
        env={"ANTHROPIC_API_KEY": "sk-test-not-a-real-key", "PYTHONPATH": str(REPO)},
    )

    async def main() -> Any:
        with (tmp_path / "server.err").open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await script(session, project)

    return anyio.run(main)


def test_a_client_drives_threads_through_the_server(tmp_path: Path) -> None:
    workspace = tmp_path / "sample-repo"
    shutil.copytree(SAMPLE, workspace)
    recording = tmp_path / RECORDING.name  # workspaces and recordings: in an allowed folder
    shutil.copy(RECORDING, recording)
    seen: dict[str, Any] = {}

    async def script(session: ClientSession, project: Path) -> None:
        tools = {t.name for t in (await session.list_tools()).tools}
        seen["tools"] = tools

        graphs = data_of(await session.call_tool("list_graphs", {}))
        seen["graphs"] = {g["name"]: g for g in graphs}

        seen["invalid"] = data_of(
            await session.call_tool("validate_graph", {"graph": "graphs/broken.yaml"})
        )

        solved = data_of(
            await session.call_tool(
                "start_thread",
                {"graph": "solve-issue", "workspace": str(workspace), "replay": str(recording)},
            )
        )
        seen["solved"] = solved
        seen["story"] = text_of(
            await session.call_tool("thread_story", {"thread": solved["thread"]})
        )

        waiting = data_of(
            await session.call_tool(
                "start_thread",
                {"graph": "ask", "inputs": {"task": "ship it"}, "workspace": str(tmp_path)},
            )
        )
        seen["waiting"] = waiting
        seen["refused"] = await session.call_tool(
            "answer_thread",
            {"thread": waiting["thread"], "status": "approved", "fields": {"nothing": 1}},
        )
        seen["answered"] = data_of(
            await session.call_tool(
                "answer_thread",
                {"thread": waiting["thread"], "status": "approved", "fields": {"note": "go"}},
            )
        )
        seen["state"] = data_of(
            await session.call_tool("thread_state", {"thread": waiting["thread"][-8:]})
        )

        other = data_of(
            await session.call_tool(
                "start_thread",
                {"graph": "ask", "inputs": {"task": "later"}, "workspace": str(tmp_path)},
            )
        )
        seen["cancelled"] = data_of(
            await session.call_tool("cancel_thread", {"thread": other["thread"]})
        )
        seen["resume_cancelled"] = await session.call_tool(
            "resume_thread", {"thread": other["thread"]}
        )
        flaky_ws = tmp_path / "flaky-ws"
        flaky_ws.mkdir()
        (flaky_ws / "broken").write_text("")
        seen["flaky"] = data_of(
            await session.call_tool(
                "start_thread",
                {"graph": "flaky", "inputs": {"task": "check"}, "workspace": str(flaky_ws)},
            )
        )
        (flaky_ws / "broken").unlink()
        seen["resumed"] = data_of(
            await session.call_tool(
                "resume_thread", {"thread": seen["flaky"]["thread"], "message": "fixed"}
            )
        )
        background = data_of(
            await session.call_tool(
                "start_thread",
                {
                    "graph": "flaky",
                    "inputs": {"task": "later"},
                    "workspace": str(flaky_ws),
                    "wait_seconds": 0,
                },
            )
        )
        seen["background"] = background
        for _ in range(200):  # it runs on in the server; ask until it has stopped
            state = data_of(
                await session.call_tool("thread_state", {"thread": background["thread"]})
            )
            if state["state"] != "running":
                break
            await anyio.sleep(0.05)
        seen["background_done"] = state
        seen["unknown_thread"] = await session.call_tool("thread_state", {"thread": "nope"})
        seen["unknown_graph"] = await session.call_tool("start_thread", {"graph": "no-such"})
        seen["bad_inputs"] = await session.call_tool(
            "start_thread", {"graph": "ask", "inputs": {"tsak": "x"}, "workspace": str(tmp_path)}
        )
        seen["listed"] = data_of(await session.call_tool("list_threads", {}))

    # `flaky` runs a Python actor of the graph folder: in the server's process, so allowed only
    # with --allow-unsandboxed (tests/security/test_attacks_second_pass.py).
    run_session(tmp_path, script, "--allow-workspace", str(tmp_path), "--allow-unsandboxed")

    assert {
        "list_graphs",
        "validate_graph",
        "start_thread",
        "thread_state",
        "thread_story",
        "answer_thread",
        "resume_thread",
        "cancel_thread",
    } <= seen["tools"]
    assert seen["graphs"]["solve-issue"]["from"] == "bundled"
    assert seen["graphs"]["ask"]["from"] == "project"
    assert seen["graphs"]["ask"]["description"] == "A person approves a plan."

    invalid = seen["invalid"]
    assert not invalid["valid"]
    unknown = [p for p in invalid["problems"] if p["code"] == "unknown-role"]
    assert unknown and unknown[0]["line"] == 12

    solved = seen["solved"]
    assert solved["state"] == "completed" and solved["steps"] == 6
    assert "Solved: median()" in solved["final"]
    assert "reviewer → rejected" in seen["story"] and solved["thread"] in seen["story"]

    waiting = seen["waiting"]
    assert waiting["state"] == "waiting"
    answers = {a["status"]: a["required"] for a in waiting["waiting"]["answers"]}
    assert answers == {"approved": ["note"], "rejected": ["why"]}
    refused = seen["refused"]
    assert refused.is_error and "note" in text_of(refused)
    assert seen["answered"]["state"] == "completed"
    assert seen["answered"]["final"] == "Approved: go"
    assert seen["state"]["state"] == "completed" and seen["state"]["id"] == waiting["thread"]

    assert seen["cancelled"]["state"] == "cancelled"
    for key in ("resume_cancelled", "unknown_thread", "unknown_graph", "bad_inputs"):
        assert seen[key].is_error, key
    assert "no thread 'nope'" in text_of(seen["unknown_thread"])
    assert "no graph named 'no-such'" in text_of(seen["unknown_graph"])
    assert "tsak" in text_of(seen["bad_inputs"])
    assert seen["flaky"]["state"] == "suspended"
    assert "flaky:check raised RuntimeError: the workspace is broken" in seen["flaky"]["reason"]
    assert (seen["resumed"]["state"], seen["resumed"]["final"]) == ("completed", "ok=true")
    assert seen["background"]["state"] == "running"
    assert seen["background_done"]["state"] == "completed"
    assert len(seen["listed"]) == 5


def test_orchestrator_mcp_help_needs_no_server() -> None:
    import subprocess  # why: only this test runs the command line

    out = subprocess.run(
        [sys.executable, "-m", "orchestrator", "mcp", "--help"], capture_output=True, text=True
    )
    assert out.returncode == 0 and "start_thread" in out.stdout


@pytest.fixture(autouse=True)
def _no_recording_change() -> Any:
    before = RECORDING.read_bytes()
    yield
    assert RECORDING.read_bytes() == before


READ_ONLY = {"list_graphs", "validate_graph", "thread_state", "thread_story", "list_threads"}


def test_the_tools_describe_themselves_and_their_arguments(tmp_path: Path) -> None:
    """Each argument has a description of its own, each tool says whether it reads or
    destroys, the server names its version, and a missing or wrong argument is told plainly."""
    import importlib.metadata  # why: only this test asks the installed version

    seen: dict[str, Any] = {}

    async def script(session: ClientSession, project: Path) -> None:
        seen["init"] = await session.initialize()  # the handshake's answer, kept by the client
        seen["tools"] = (await session.list_tools()).tools
        seen["missing"] = await session.call_tool("start_thread", {})
        seen["wrong"] = await session.call_tool("thread_story", {"thread": "x", "full": "maybe"})

    run_session(tmp_path, script)
    assert seen["init"].server_info.version == importlib.metadata.version("orchestrator")
    tools = {t.name: t for t in seen["tools"]}
    for tool in tools.values():
        for name, schema in tool.input_schema.get("properties", {}).items():
            assert schema.get("description"), f"{tool.name}({name}) has no description"
        assert "Args:" not in (tool.description or ""), tool.name
        assert tool.annotations is not None, tool.name
    for name in READ_ONLY:
        assert tools[name].annotations.read_only_hint is True, name
    for name in set(tools) - READ_ONLY:
        assert tools[name].annotations.read_only_hint is False, name
    assert tools["cancel_thread"].annotations.destructive_hint is True
    assert tools["start_thread"].annotations.destructive_hint is False

    missing = text_of(seen["missing"])
    assert seen["missing"].is_error
    assert "start_thread needs the argument 'graph'" in missing, missing
    assert "validation error" not in missing and "pydantic" not in missing
    wrong = text_of(seen["wrong"])
    assert seen["wrong"].is_error and "thread_story: the argument 'full'" in wrong, wrong
    assert "pydantic" not in wrong
