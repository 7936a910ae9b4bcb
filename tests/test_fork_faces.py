"""Forks through the Python client (`Orchestrator.fork`, `AsyncOrchestrator.fork`) and the MCP
server's `fork_thread` (docs/format.md section 20), with the fork project's Python actors."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from orchestrator import AsyncOrchestrator, Orchestrator
from orchestrator.core.outcomes import Refused
from tests.fork_project import make_project


def test_the_client_forks_with_a_reply_and_with_a_message(tmp_path: Path) -> None:
    graph = make_project(tmp_path / "project")
    (tmp_path / "ws").mkdir()
    with Orchestrator(store=tmp_path / "store") as orch:
        original = orch.run(graph, {"task": "owls"}, workspace=tmp_path / "ws")
        assert original.state == "completed" and original.steps == 2
        fork = orch.fork(
            original.id, at=2, status="changes", fields={"notes": "shorter", "tone": "plain"}
        )
        assert (fork.state, fork.steps) == ("completed", 4)
        assert fork.id != original.id
        assert fork.forked_from == {"thread": original.id, "step": 2}
        assert orch.get(fork.id).forked_from == {"thread": original.id, "step": 2}
        assert orch.get(original.id).forked_from is None
        assert orch.session.state(fork.id).forked_from == {"thread": original.id, "step": 2}
        with pytest.raises(Refused) as caught:
            orch.fork(original.id, at=2, status="rejected")
        assert "step 2 (reviewer)" in caught.value.message
        assert len(orch.list()) == 2

    async def later() -> None:
        async with AsyncOrchestrator(store=tmp_path / "store") as aorch:
            again = await aorch.fork(original.id, at=2, message="be strict")
            assert again.steps == 4
            seen = (tmp_path / "ws" / "prompts.txt").read_text()
            assert "Message from the person who forked this thread: | be strict" in seen

    asyncio.run(later())


def test_mcp_fork_thread(tmp_path: Path) -> None:
    from tests.test_mcp_server import data_of, run_session, text_of  # why: needs the mcp extra

    seen: dict[str, Any] = {}

    async def script(session: Any, project: Path) -> None:
        make_project(project / "graphs")
        (project / "ws").mkdir()
        started = data_of(
            await session.call_tool(
                "start_thread",
                {"graph": "graphs/review.yaml", "inputs": {"task": "owls"}, "workspace": "ws"},
            )
        )
        seen["started"] = started
        seen["state"] = data_of(
            await session.call_tool("thread_state", {"thread": started["thread"]})
        )
        seen["fork"] = data_of(
            await session.call_tool(
                "fork_thread",
                {
                    "thread": started["thread"],
                    "at": 2,
                    "status": "changes",
                    "fields": {"notes": "shorter", "tone": "plain"},
                },
            )
        )
        seen["bad_step"] = await session.call_tool(
            "fork_thread", {"thread": started["thread"], "at": 7}
        )
        seen["bad_reply"] = await session.call_tool(
            "fork_thread", {"thread": started["thread"], "at": 2, "status": "rejected"}
        )
        seen["listed"] = data_of(await session.call_tool("list_threads", {}))

    run_session(tmp_path, script, "--allow-unsandboxed")  # Python actors of its folder
    original = seen["started"]["thread"]
    assert seen["started"]["state"] == "completed"
    assert seen["state"]["allowed"]["fork"] == {"ok": True, "steps": [1, 3]}
    fork = seen["fork"]
    assert fork["state"] == "completed" and fork["steps"] == 4
    assert fork["forked_from"] == {"thread": original, "step": 2}
    assert seen["bad_step"].is_error and "steps 1 to 3, not 7" in text_of(seen["bad_step"])
    assert seen["bad_reply"].is_error and "step 2 (reviewer)" in text_of(seen["bad_reply"])
    assert len(seen["listed"]) == 2  # nothing made by the refusals
