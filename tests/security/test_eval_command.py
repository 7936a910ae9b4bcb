"""The eval's `command` expectation runs in the run's final workspace, whose files the roles
wrote: it runs in the sandbox, as a role's commands do. A role-written script it runs can write
only the workspace (not the suite's scorer, which the eval then imports and runs unsandboxed),
and cannot read the user's home. Each attack beside its control."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from orchestrator.evals.expect import copy_over, run_command
from orchestrator.evals.suite import Command


def run(command: str, workspace: Path) -> tuple[bool, str]:
    verdict = asyncio.run(run_command(Command(command), workspace))
    return verdict.passed, verdict.detail


def test_a_role_written_script_cannot_rewrite_the_suites_scorer(
    mechanism: str, tmp_path: Path
) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    scorer = suite / "scorers.py"
    scorer.write_text("def score(run):\n    return False\n")
    ws = suite / "runs" / "ws"
    ws.mkdir(parents=True)
    # What a role left in the workspace: the hidden check runs it (conftest.py, a Makefile...).
    (ws / "check.sh").write_text(
        f"printf 'def score(run):\\n    return True\\n' > {scorer}\necho wrote > mine.txt\n"
    )
    passed, detail = run("sh check.sh", ws)
    assert "return False" in scorer.read_text(), detail  # the attack failed
    assert (ws / "mine.txt").read_text() == "wrote\n"  # control: the workspace is writable


def test_a_role_written_script_cannot_read_the_home_folder(
    mechanism: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".netrc").write_text("machine example.com password home-secret-31337\n")
    monkeypatch.setenv("HOME", str(home))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "copy").write_text("workspace-value-31337\n")
    passed, detail = run(f"cat {home}/.netrc; cat copy", ws)
    assert "home-secret-31337" not in detail  # the attack failed
    assert "workspace-value-31337" in detail  # control: the command ran, its output is seen


def planted(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A workspace where a role left `hidden_tests` as a link to a folder of the user's, and a
    suite whose hidden tests have that name."""
    victim = tmp_path / "home" / "config"
    victim.mkdir(parents=True)
    (victim / "test_hidden.py").write_text("the user's own file\n")
    suite_hidden = tmp_path / "suite" / "hidden"
    (suite_hidden / "hidden_tests").mkdir(parents=True)
    (suite_hidden / "hidden_tests" / "test_hidden.py").write_text("import unittest\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hidden_tests").symlink_to(victim)
    return victim, suite_hidden, ws


def test_the_hidden_tests_are_not_copied_through_a_link_a_role_left(tmp_path: Path) -> None:
    victim, suite_hidden, ws = planted(tmp_path)
    copy_over(suite_hidden, ws)
    assert (victim / "test_hidden.py").read_text() == "the user's own file\n"  # untouched
    assert not (ws / "hidden_tests").is_symlink()
    assert (ws / "hidden_tests" / "test_hidden.py").read_text() == "import unittest\n"


def test_control_a_plain_copy_writes_through_the_link(tmp_path: Path) -> None:
    victim, suite_hidden, ws = planted(tmp_path)
    shutil.copytree(suite_hidden, ws, dirs_exist_ok=True, symlinks=True)
    assert (victim / "test_hidden.py").read_text() == "import unittest\n"  # the attack works
