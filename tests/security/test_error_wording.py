"""An error's words are harmless on every face (docs/security.md; `orchestrator/errors/wording.py`).

A message can echo what a caller or a thread gave: here a thread id that is an attack (an OSC
sequence that retitles the terminal, a CSI that clears the screen, the 8-bit CSI, a right-to-left
override, and 60 000 characters). The command line's stderr (a pipe: the terminal guard, which
only wraps terminals, is not there), the web page's JSON error and the MCP tool error carry none
of its control characters, and are cut to a size a person reads, saying how much was left out.

Controls: the error the session raises holds the attack raw (the wording is what removes it),
and the same command with the wording's `clean` switched off writes the ESC bytes to stderr.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2 as httpx  # the HTTP client the anthropic SDK brings (httpx itself is not a dependency)

from orchestrator.errors import ThreadNotFound, word
from orchestrator.run.session import Session, open_store
from tests.test_mcp_server import run_session, text_of
from tests.web_helpers import served

ATTACK = "\x1b]0;pwned\x07\x1b[2J\x9b31m\u202eevil" + "A" * 60_000
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def harmless(text: str) -> bool:
    return not any(c in text for c in RAW) and len(text) < 3_000


def cli(store: Path, *prefix: str) -> subprocess.CompletedProcess[str]:
    command = [*prefix] or [sys.executable, "-m", "orchestrator"]
    return subprocess.run(
        [*command, "threads", "show", ATTACK, "--store", str(store)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def test_a_hostile_message_is_neutralised_on_every_face(tmp_path: Path) -> None:
    store = tmp_path / "store"
    open_store(store).close()

    # control: the error holds the attack as given; only the wording makes it harmless
    try:
        Session(open_store(store)).thread(ATTACK)
    except ThreadNotFound as exc:
        raised = exc
    assert "\x1b]0;pwned\x07" in raised.message and len(raised.message) > 60_000
    assert harmless(word(raised).text()) and "more characters" in word(raised).text()

    shown = cli(store)
    assert shown.returncode == 2 and harmless(shown.stderr), shown.stderr[:300]
    assert "^[]0;pwned^G" in shown.stderr and "\\u202e" in shown.stderr  # visible, not acted on
    assert "more characters" in shown.stderr

    # control: with the wording's cleaning switched off, the same command writes the bytes
    switched_off = (
        sys.executable,
        "-c",
        "import sys; import orchestrator.errors.wording as w; w.clean = lambda t, *a, **k: t; "
        "from orchestrator.cli import main; sys.argv[0] = 'orchestrator'; main()",
    )
    raw = cli(store, *switched_off)
    assert raw.returncode == 2 and "\x1b]0;pwned\x07" in raw.stderr

    with served(store) as server:
        answer = httpx.get(
            server.base + "threads/" + quote(ATTACK[:2_000], safe=""),
            headers=server.headers(accept="application/json"),
        )
    assert answer.status_code == 404
    assert harmless(answer.json()["message"]) and "^[]0;pwned^G" in answer.json()["message"]

    async def script(session: Any, _: Path) -> Any:
        return await session.call_tool("thread_state", {"thread": ATTACK})

    result = run_session(tmp_path, script)
    assert result.is_error and harmless(text_of(result)), text_of(result)[:300]
    assert "more characters" in text_of(result)
