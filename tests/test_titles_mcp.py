"""Titles, labels and list filters through `orchestrator mcp` (a real server subprocess, the
`mcp` package's own client): `start_thread` takes `title` and `labels`, `list_threads` filters
by state, graph, labels and a search, and shows each thread's title and labels."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.mcp_helpers import require_mcp

require_mcp()

from mcp import ClientSession  # noqa: E402  (after the check above)

from tests.test_mcp_server import data_of, run_session, text_of  # noqa: E402

HOSTILE = "\x1b]0;owned\x07hostile \x1b[31mred\u202e title " + "A" * 60_000


def test_mcp_starts_titled_threads_and_lists_them_by_filters(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    async def script(session: ClientSession, project: Path) -> None:
        async def start(**args: Any) -> Any:
            args = {"graph": "ask", "workspace": str(tmp_path), **args}
            return data_of(await session.call_tool("start_thread", args))

        async def listed(**args: Any) -> list[str]:
            rows = data_of(await session.call_tool("list_threads", args))
            seen.setdefault("rows", rows)
            return sorted(r["title"] for r in rows)

        await start(inputs={"task": "Fix the login bug\nsoon"}, labels={"team": "auth"})
        await start(inputs={"task": "x"}, title="Quarterly audit", labels={"team": "audit"})
        seen["all"] = await listed()
        seen["auth"] = await listed(labels={"team": "auth"})
        seen["search"] = await listed(search="LOGIN")
        seen["quote"] = await listed(search='"NEAR( *')  # only text to find: nothing, no error
        seen["graph"] = await listed(graph="broken")
        seen["state"] = await listed(state="waiting", labels={"team": "audit"})
        bad = await session.call_tool(
            "start_thread", {"graph": "ask", "inputs": {"task": "t"}, "labels": {"a b": "c"}}
        )
        seen["bad"] = (bad.is_error, text_of(bad))
        seen["after"] = await listed()
        await start(inputs={"task": "t"}, title=HOSTILE, labels={"k": HOSTILE})
        rows = data_of(await session.call_tool("list_threads", {"search": "hostile"}))
        seen["hostile"] = rows

    run_session(tmp_path, script, "--allow-workspace", str(tmp_path))
    assert seen["all"] == ["Fix the login bug", "Quarterly audit"]
    assert seen["auth"] == ["Fix the login bug"]
    assert seen["search"] == ["Fix the login bug"]
    assert seen["quote"] == [] and seen["graph"] == []
    assert seen["state"] == ["Quarterly audit"]
    assert {"title", "labels"} <= set(seen["rows"][0])
    is_error, text = seen["bad"]
    assert is_error and "is not a name" in text and "Traceback" not in text
    assert seen["after"] == seen["all"]  # the refused start made no thread
    # A hostile title and label: one short line of text, no escape, no override.
    [row] = seen["hostile"]
    assert row["title"].startswith("hostile red title") and len(row["title"]) <= 80
    for text in (row["title"], row["labels"]["k"]):
        assert "\x1b" not in text and "\u202e" not in text and len(text) <= 200
