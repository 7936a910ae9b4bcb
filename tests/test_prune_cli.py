"""`orchestrator threads prune`: the worktrees of ended threads go, work not merged stays."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.test_worktree import branches, git, make_repo, state_dir, write_graph


def cli(repo: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The command in `repo`, with the default store: `repo/.orchestrator`."""
    base = {k: v for k, v in os.environ.items() if k != "ORCHESTRATOR_HOME"}
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=repo,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def start(repo: Path, graph: Path, task: str, tmp_path: Path, *, suspend: bool) -> str:
    env = {"MARKER_PATH": str(state_dir(tmp_path) / f"state-{task}")}
    if suspend:
        env["SUSPEND_FIRST"] = "1"
    out = cli(repo, "run", str(graph), task, "--json", **env)
    assert out.returncode == (3 if suspend else 0), out.stderr
    return str(json.loads(out.stdout.splitlines()[-1])["thread"])


def test_prune_removes_ended_threads_worktrees_and_keeps_what_is_not_merged(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    graph = write_graph(tmp_path, "edit")
    done = start(repo, graph, "done", tmp_path, suspend=False)
    dropped = start(repo, graph, "dropped", tmp_path, suspend=True)
    paused = start(repo, graph, "paused", tmp_path, suspend=True)
    assert cli(repo, "threads", "cancel", dropped).returncode == 0
    trees = repo / ".orchestrator" / "worktrees"
    (trees / dropped / "draft.txt").write_text("work in progress\n")

    dry = cli(repo, "threads", "prune", "--dry-run", "--branches")
    assert dry.returncode == 0, dry.stderr
    assert f"thread {done} (completed):" in dry.stdout
    assert f"would remove worktree .orchestrator/worktrees/{done}" in dry.stdout
    assert f"kept branch orchestrator/{done}: 2 commits on no other branch" in dry.stdout
    assert "1 change not committed" in dry.stdout and "--force" in dry.stdout
    assert f"thread {paused} (suspended):" in dry.stdout and "continues there" in dry.stdout
    assert all((trees / t).is_dir() for t in (done, dropped, paused))  # nothing removed

    out = cli(repo, "threads", "prune")
    assert out.returncode == 0, out.stderr
    assert f"removed worktree .orchestrator/worktrees/{done}" in out.stdout
    assert "branches kept" in out.stdout
    assert not (trees / done).exists()
    assert (trees / dropped / "draft.txt").exists() and (trees / paused).is_dir()
    assert {f"orchestrator/{t}" for t in (done, dropped, paused)} <= set(branches(repo))
    assert "fix.txt" in git(repo, "ls-tree", "--name-only", f"orchestrator/{done}").split()

    again = cli(repo, "threads", "prune", "--branches")
    assert again.returncode == 0
    assert f"kept branch orchestrator/{done}: 2 commits on no other branch" in again.stdout
    assert f"orchestrator/{done}" in branches(repo)

    git(repo, "merge", "--quiet", "--no-edit", f"orchestrator/{done}")
    (trees / dropped / "draft.txt").unlink()
    merged = cli(repo, "threads", "prune", "--branches")
    assert merged.returncode == 0, merged.stderr
    assert f"deleted branch orchestrator/{done}" in merged.stdout
    assert f"removed worktree .orchestrator/worktrees/{dropped}" in merged.stdout
    assert f"deleted branch orchestrator/{dropped}" in merged.stdout  # it committed nothing
    assert "removed 1 worktree, deleted 2 branches" in merged.stdout
    left = [b for b in branches(repo) if b.startswith("orchestrator/")]
    assert left == [f"orchestrator/{paused}"]
    assert (trees / paused).is_dir()
    assert (repo / "fix.txt").exists()  # the merged work is in the checkout

    idle = cli(repo, "threads", "prune", "--branches")
    assert idle.returncode == 0 and "nothing removed" in idle.stdout


def test_prune_without_worktrees_has_nothing_to_do(tmp_path: Path) -> None:
    out = cli(tmp_path, "threads", "prune", "--store", str(tmp_path / "store"))
    assert out.returncode == 0 and out.stdout.strip() == "nothing to prune"
