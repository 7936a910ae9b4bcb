"""docs/evals.md's worked example, run as written: its files written from the page, its
`console` blocks run in order with the real command, and their output compared (the time
columns, which depend on the machine, aside)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
PAGE = ROOT / "docs" / "evals.md"
TIME = re.compile(r"(?<![$\d.])\d+\.\d\d(?![\d%])")


def page_files(text: str) -> dict[str, str]:
    """`File `NAME`:` followed by a fenced block: that file's text."""
    found = re.findall(r"^File `([^`]+)`[^\n]*:\n\n```\w*\n(.*?)^```", text, re.M | re.S)
    return dict(found)


def console_blocks(text: str) -> list[tuple[str, str]]:
    """(command, expected output) of each `console` block."""
    out = []
    for block in re.findall(r"^```console\n(.*?)^```", text, re.M | re.S):
        first, _, rest = block.partition("\n")
        assert first.startswith("$ "), block
        out.append((first[2:], rest))
    return out


def normal(text: str) -> list[str]:
    return [TIME.sub("N.NN", line.rstrip()) for line in text.rstrip().splitlines()]


def test_the_worked_example_runs_as_the_page_shows(tmp_path: Path) -> None:
    text = PAGE.read_text(encoding="utf-8")
    files = page_files(text)
    assert set(files) >= {"greet.yaml", "players.py", "scorers.py", "suite.yaml"}
    for name, body in files.items():
        (tmp_path / name).write_text(body)
    # greet-shout.yaml is greet.yaml with its name and its writer changed, as the page says.
    shout = files["greet.yaml"].replace("name: greet", "name: greet-shout")
    (tmp_path / "greet-shout.yaml").write_text(shout.replace("players:writer", "players:shouter"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    blocks = console_blocks(text)
    assert len(blocks) >= 3
    for command, expected in blocks:
        argv = shlex.split(command)
        assert argv[:2] == ["orchestrator", "eval"]
        done = subprocess.run(
            [sys.executable, "-m", "orchestrator", *argv[1:]],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert normal(done.stdout) == normal(expected), (command, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr


def test_the_page_shows_the_suites_errors_as_the_command_words_them(tmp_path: Path) -> None:
    text = PAGE.read_text(encoding="utf-8")
    for name, body in page_files(text).items():
        (tmp_path / name).write_text(body)
    suite = tmp_path / "suite.yaml"
    suite.write_text(suite.read_text().replace("max_cost_usd: 0.10", "max_cost: 0.10"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "eval", str(suite)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    shown = f"{suite}:8: unknown expectation 'max_cost' (known: command, ending, fields,"
    assert shown in done.stderr
    assert shown.replace(str(suite), "/home/me/greet/suite.yaml") in text
