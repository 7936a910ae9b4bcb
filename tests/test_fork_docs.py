"""docs/threads.md's worked example of forks, run as written: its files written from the page,
its `console` blocks run in order with the real command, the thread ids it names (ORIGINAL,
FORK) put in, and the output compared (stdout; stderr for a command that fails)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
PAGE = ROOT / "docs" / "threads.md"


def forks_section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    return text[text.index("## Forks") : text.index("## Recordings")]


def page_files(text: str) -> dict[str, str]:
    """ "File `NAME`:" followed by a fenced block: that file's text."""
    return dict(re.findall(r"File `([^`]+)`:\n\n```\w*\n(.*?)^```", text, re.M | re.S))


def console_blocks(text: str) -> list[tuple[str, str]]:
    out = []
    for block in re.findall(r"^```console\n(.*?)^```", text, re.M | re.S):
        first, _, rest = block.partition("\n")
        assert first.startswith("$ "), block
        out.append((first[2:], rest))
    return out


def test_the_forks_example_runs_as_the_page_shows(tmp_path: Path) -> None:
    text = forks_section()
    files = page_files(text)
    assert set(files) == {"review.yaml", "roles.py"}
    for name, body in files.items():
        (tmp_path / name).write_text(body)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ORCHESTRATOR_HOME": str(tmp_path / "store")}

    def orchestrator(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "orchestrator", *argv],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    names: dict[str, str] = {}  # ORIGINAL, FORK -> the ids
    blocks = console_blocks(text)
    assert len(blocks) == 4
    for command, expected in blocks:
        argv = shlex.split(command)
        assert argv[0] == "orchestrator"
        argv = [names.get(word, word) for word in argv[1:]]
        done = orchestrator(*argv)
        seen = done.stdout if done.returncode == 0 else done.stderr
        for name, thread in names.items():
            seen = seen.replace(thread, name)
        assert seen.rstrip() == expected.rstrip(), (command, done.stderr)
        listed = [
            json.loads(line)["id"]
            for line in orchestrator("threads", "list", "--json").stdout.splitlines()
        ]
        for name, thread in zip(("ORIGINAL", "FORK"), listed, strict=False):
            names.setdefault(name, thread)
    assert len(names) == 2
