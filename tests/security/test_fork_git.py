"""A fork's git (docs/format.md section 20) runs no program the repository names.

Forking a worktree thread adds a worktree and branch in the user's repository (`git worktree
add` at the commit of the step before the fork point, found with `git log`), and every step of
a worktree thread is committed (`git add`, `git commit`). The attack: the repository holds hooks
that git runs on exactly these commands (`post-checkout` on a worktree add, `pre-commit`,
`post-commit`, `reference-transaction` on any ref update), each writing a marker with its
environment, and the orchestrator runs with a provider key in its environment. Afterwards no
marker exists: orchestrator's git (vcs/git_safe.py) switches hooks off and passes a clean
environment. The control runs the same commands with a plain `git`: the hooks run, and the
marker holds the key.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from orchestrator.definition.loader import load_graph
from orchestrator.run.session import Session
from orchestrator.store.sqlite import SqliteStore
from tests.fork_project import make_project
from tests.test_worktree import git, make_repo

KEY = "sk-ant-test-fork-hooks-41c9e2"
HOOKS = ("post-checkout", "pre-commit", "post-commit", "reference-transaction")


def plant_hooks(repo: Path, marker: Path) -> None:
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    for name in HOOKS:
        hook = hooks / name
        hook.write_text(f"#!/bin/sh\necho {name} >> {marker}\nenv >> {marker}\ncat > /dev/null\n")
        hook.chmod(0o755)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def test_forking_and_committing_steps_run_no_hook(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    marker = tmp_path / "hook-ran"
    plant_hooks(repo, marker)
    graph = load_graph(make_project(tmp_path / "project"))
    with Session(SqliteStore(tmp_path / "store")) as session:
        started = session.start(graph, {"task": "a picky task"}, folder=repo)
        asyncio.run(session.advance(graph, started.thread_id))
        fork = session.fork(started.thread_id, at=3)
        asyncio.run(session.advance(graph, fork))
        fork_tree = session.worktree(fork)
    assert fork_tree is not None
    # the work was done and committed, step by step, on both branches ...
    steps = git(repo, "log", "--format=%s", fork_tree.branch).splitlines()
    assert sum(s.startswith("step ") for s in steps) == 4
    # ... and not one hook ran
    assert not marker.exists(), marker.read_text()


def test_control_plain_git_runs_the_planted_hooks(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same commands through a plain git: the hooks run, with the key in their environment."""
    marker = tmp_path / "hook-ran"
    plant_hooks(repo, marker)
    env = {**os.environ, "ANTHROPIC_API_KEY": KEY}
    where = tmp_path / "plain-worktree"
    for args in (
        ["worktree", "add", "--quiet", "-b", "plain", str(where), "HEAD"],
        ["-C", str(where), "commit", "--quiet", "--allow-empty", "-m", "step 1: x -> y"],
    ):
        done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    ran = marker.read_text()
    assert {"post-checkout", "pre-commit", "post-commit", "reference-transaction"} <= set(
        ran.split()
    )
    assert KEY in ran
