"""The MCP server's operations ask `allowed()`: `thread_state` shows what may happen, an
answer names any waiting branch's step, and a request the moderator would refuse is refused
with its reason before anything runs. Real threads of human roles in a real SQLite store."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from orchestrator.mcp_server.operations import OperationFailed, Operations
from tests.test_answer_cli import TWO_PEOPLE


def test_two_waiting_branches_through_the_operations(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "graphs").mkdir(parents=True)
    (project / "graphs" / "two.yaml").write_text(TWO_PEOPLE)

    async def script() -> None:
        ops = Operations(store=tmp_path / "store", cwd=project)
        started = await ops.start_thread("graphs/two.yaml", {"task": "owls"}, wait_seconds=30)
        thread = started["thread"]
        assert started["state"] == "waiting", started
        allowed = (await ops.thread_state(thread))["allowed"]
        assert [(a["step"], a["role"]) for a in allowed["answer"]] == [(1, "boss"), (2, "chief")]
        assert allowed["answer"][1]["statuses"] == ["yes"]
        assert not allowed["resume"]["ok"] and "threads answer" in allowed["resume"]["why"]
        assert allowed["cancel"] == {"ok": True} and not allowed["fork"]["ok"]

        with pytest.raises(OperationFailed, match=r"step 9 .* \(these do: 1, 2\)"):
            await ops.answer_thread(thread, fields={"budget": 5}, step=9)
        second = await ops.answer_thread(thread, "yes", {"note": "go"}, step=2, wait_seconds=30)
        assert second["state"] == "waiting" and second["waiting"]["step"] == 1
        done = await ops.answer_thread(thread, fields={"budget": 5}, wait_seconds=30)
        assert done["state"] == "completed" and done["final"] == "go with 5"

        after = (await ops.thread_state(thread))["allowed"]
        assert after["answer"] == [] and after["fork"] == {"ok": True, "steps": [1, 3]}
        with pytest.raises(OperationFailed, match=r"no `\$START.resume` edge"):
            await ops.resume_thread(thread)
        with pytest.raises(OperationFailed, match="already completed"):
            await ops.cancel_thread(thread)
        await ops.close()

    asyncio.run(script())
