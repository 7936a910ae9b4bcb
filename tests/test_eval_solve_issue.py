"""The recorded run of the solve-issue suite replays offline from a fresh clone, exactly as the
README's quick start shows it, and prints its table; the suite is what the issue asks for."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from orchestrator.evals.suite import load_suite
from tests.test_quickstart import fresh_clone, quick_start_blocks

REPO = Path(__file__).resolve().parents[1]
SUITE = REPO / "examples" / "evals" / "solve-issue" / "suite.yaml"


def test_the_suite_has_six_kinds_of_bug_with_issues_and_hidden_tests(tmp_path: Path) -> None:
    suite = load_suite(SUITE)
    ids = [c.id for c in suite.cases]
    assert ids == [
        "off-by-one",
        "wrong-default",
        "empty-input",
        "parser-edge",
        "sort-key",
        "missing-validation",
    ]
    for case in suite.cases:
        assert case.workspace is not None and len(case.inputs["issue"]) > 80
        command = case.expect.command
        assert command is not None and command.copy is not None
        hidden = {p.name for p in command.copy.rglob("*.py")}
        assert "test_hidden.py" in hidden
        # The hidden tests are not in the repository the roles work on.
        assert not (case.workspace / "hidden_tests").exists()
        # And they fail on the repository as it is: each case holds a real bug.
        ws = tmp_path / case.id
        shutil.copytree(case.workspace, ws)
        shutil.copytree(command.copy, ws, dirs_exist_ok=True)
        done = subprocess.run(
            [sys.executable, "-m", "unittest", "-q", "hidden_tests.test_hidden"],
            cwd=ws,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 1, (case.id, done.stderr)
        # The repository's own tests pass: the bug is what they do not cover.
        own = subprocess.run(
            [sys.executable, "-B", "-m", "unittest", "-q"], cwd=case.workspace, capture_output=True
        )
        assert own.returncode == 0, case.id


def test_the_recorded_run_replays_from_a_fresh_clone_and_prints_its_table(tmp_path: Path) -> None:
    clone = fresh_clone(tmp_path / "clone")
    block = next(b for b in quick_start_blocks() if "orchestrator eval" in b)
    argv = block.replace("\\\n", " ").split()
    assert argv[:2] == ["orchestrator", "eval"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "ORCHESTRATOR_"))}
    env["PYTHONPATH"] = str(clone)  # the clone's own orchestrator, as its install would be
    env["ANTHROPIC_BASE_URL"] = "http://127.0.0.1:9"  # nothing listens: no model is called
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", *argv[1:]],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, done.stderr  # one case is not solved
    lines = done.stdout.splitlines()
    head = lines[1].split()
    assert head[:4] == ["solve-issue", "6", "83%", "83%"], done.stdout
    assert re.fullmatch(r"\$0\.0\d{3}", head[5]), done.stdout  # the cost per solved issue
    rows = {line.split()[0]: line.split()[1] for line in lines[3:] if line.strip()}
    assert rows["missing-validation"] == "0/1" and rows["off-by-one"] == "1/1"
    assert "test_overdraft_is_refused" in done.stderr  # the hidden test that caught it
