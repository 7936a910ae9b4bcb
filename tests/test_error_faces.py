"""One error, three faces, one wording: the command line, the web page (its JSON errors and its
page) and the MCP server say the same words for the same refused request (`errors.word`).

Each face runs for real: `orchestrator threads ...` as a process, `orchestrator serve` as a
process asked over HTTP, `orchestrator mcp` as a process driven by the `mcp` package's client.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2 as httpx  # the HTTP client the anthropic SDK brings (httpx itself is not a dependency)

from orchestrator.errors import Refused, ThreadNotFound, word
from tests.test_mcp_server import ASK, run_session, text_of
from tests.web_helpers import served

REPO = Path(__file__).resolve().parents[1]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def test_the_cli_the_web_and_mcp_word_the_same_error_the_same_way(tmp_path: Path) -> None:
    store = tmp_path / "store"  # the MCP helper's server uses this store too
    project = tmp_path / "project"
    (project / "graphs").mkdir(parents=True)
    (project / "graphs" / "ask.yaml").write_text(ASK)
    started = cli(
        "run", "graphs/ask.yaml", "-i", "task=x", "--store", str(store), "--json", cwd=project
    )
    thread_id = json.loads(started.stdout.splitlines()[-1])["thread"]
    assert cli("threads", "cancel", thread_id, "--store", str(store), cwd=project).returncode == 0

    # What the family says, without any face: the expected words.
    unknown = word(
        ThreadNotFound(
            "nope", f"no thread 'nope' in {store}", hint="see `orchestrator threads list`"
        )
    )
    ended = word(Refused(f"thread {thread_id} is already cancelled"))

    # The command line: `error: ` and the wording, exit 2 (the request was wrong).
    shown = cli("threads", "show", "nope", "--store", str(store), cwd=project)
    again = cli("threads", "cancel", thread_id, "--store", str(store), cwd=project)
    assert (shown.returncode, again.returncode) == (2, 2)
    assert shown.stderr == f"error: {unknown.text()}\n"
    assert again.stderr == f"error: {ended.text()}\n"

    # The web page: its JSON errors are the wording's fields; its page shows the same text.
    with served(store) as server:
        asks_json = server.headers(accept="application/json")
        missing = httpx.get(server.base + "threads/nope", headers=asks_json)
        cancel = httpx.post(server.base + f"threads/{thread_id}/cancel", headers=asks_json)
        page = httpx.get(server.base + "threads/nope", headers=server.headers(accept="text/html"))
    assert missing.status_code == 404 and missing.json() == unknown.to_dict()
    assert cancel.status_code == 409 and cancel.json() == ended.to_dict()
    banner = re.search(r'<div class="banner error">(.*?)</div>', page.text, re.S)
    assert page.status_code == 404 and banner is not None
    assert html.unescape(banner.group(1)) == unknown.text()

    # MCP: the tool error is the same text.
    async def script(session: Any, _: Path) -> dict[str, Any]:
        return {
            "unknown": await session.call_tool("thread_state", {"thread": "nope"}),
            "ended": await session.call_tool("cancel_thread", {"thread": thread_id}),
        }

    results = run_session(tmp_path, script)
    assert results["unknown"].is_error and results["ended"].is_error
    # (the `mcp` package puts its own frame around a tool's error, as the CLI puts `error: `)
    assert text_of(results["unknown"]) == f"Error executing tool thread_state: {unknown.text()}"
    assert text_of(results["ended"]) == f"Error executing tool cancel_thread: {ended.text()}"
