"""A fleet's shared repository and the workers' worktrees cannot be turned against a worker.

The repository a thread's branch lives in, and every file in a worker's worktree, are hostile
(docs/security.md). Two ways in, each with its control:

- **The shared repository's hooks.** A `git push` into a repository starts that repository's
  `pre-receive`, `update`, `post-receive` and `reference-transaction` hooks on the pushing
  machine, and git_safe's `-c core.hooksPath=/dev/null` does not reach the receiving side. The
  control pushes through git_safe's own `run_git` and the planted hook runs; the worker's
  delivery (`commit_step`: a fetch run in the shared repository, then `update-ref NEW OLD`
  there) and the client's (`share`) run none.
- **A worktree whose `.git` a role rewrote** to name a repository of its own with
  `core.fsmonitor` set: the control runs a plain `git status` there and the program runs with
  the secret in its environment; the worker's next step (`checkout_step`) deletes that worktree
  without running git in it and makes it again from the branch, its link as git made it.

Beside them, what the fleet promises about files: a step starts from the last committed step's
files (a lost attempt's commit and files are dropped), a push never overwrites another's (the
lease), and a network origin is refused, since no credential reaches git.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from orchestrator.vcs.git_safe import WorktreeError, read_link, run_git
from orchestrator.vcs.shared import (
    SharedBranch,
    checkout_step,
    commit_step,
    local_repository,
    publish,
    share,
    step_message,
)
from tests.solve_issue_scenario import GIT_ENV

KEY = "sk-ant-test-fleet-git-3c9e1a"
HOOKS = ("pre-receive", "update", "post-receive", "reference-transaction", "post-update")


def git(cwd: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A bare shared repository with a hook of every receiving kind, and a checkout of it."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "app.py").write_text("print('v1')\n")
    git(seed, "init", "--quiet", "--initial-branch=main")
    git(seed, "add", "--all")
    git(seed, "commit", "--quiet", "-m", "v1")
    shared = tmp_path / "shared.git"
    git(tmp_path, "clone", "--quiet", "--bare", str(seed), str(shared))
    marker = tmp_path / "hook-ran"
    for hook in HOOKS:
        path = shared / "hooks" / hook
        path.write_text(f"#!/bin/sh\nenv >> {marker}\ncat > /dev/null\nexit 0\n")
        path.chmod(0o755)
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "--quiet", str(shared), str(checkout))
    return shared, checkout


def test_control_a_push_through_git_safe_runs_the_shared_repositorys_hooks(
    fleet: tuple[Path, Path],
) -> None:
    shared, checkout = fleet
    run_git(["push", "--quiet", str(shared), "HEAD:refs/heads/pushed"], checkout)
    assert (shared.parent / "hook-ran").exists()  # -c core.hooksPath did not reach it


def test_sharing_and_delivering_steps_run_no_hook_of_the_shared_repository(
    fleet: tuple[Path, Path],
) -> None:
    shared_repo, checkout = fleet
    branch = share(checkout, "T1")
    assert branch is not None and branch.repository == str(shared_repo)
    cache = shared_repo.parent / "cache"
    tree, _ = checkout_step(cache, branch, "T1", 1)
    (tree.workspace / "app.py").write_text("print('v2')\n")
    commit_step(tree, branch, step_message(1, "developer", "done", "T1"), branch.base)
    assert git(shared_repo, "show", f"{branch.branch}:app.py") == "print('v2')"
    assert not (shared_repo.parent / "hook-ran").exists()


def test_a_worktree_whose_git_link_a_role_rewrote_is_made_again_never_used(
    fleet: tuple[Path, Path], tmp_path: Path
) -> None:
    shared_repo, checkout = fleet
    branch = share(checkout, "T2")
    assert branch is not None
    cache = tmp_path / "cache"
    tree, _ = checkout_step(cache, branch, "T2", 1)
    good_link = read_link(tree.path)
    # The role's repository, with a program git would run on `git status`.
    marker = tmp_path / "fsmonitor-ran"
    evil = Path(tree.path) / ".evil"
    git(tmp_path, "init", "--quiet", str(evil))
    prog = evil / "prog.sh"
    prog.write_text(f"#!/bin/sh\nenv > {marker}\n")
    prog.chmod(0o755)
    git(evil, "config", "core.fsmonitor", str(prog))
    (Path(tree.path) / ".git").write_text(f"gitdir: {evil / '.git'}\n")

    # Control: git discovering the repository from the worktree runs the role's program.
    subprocess.run(["git", "status"], cwd=tree.path, capture_output=True, env=dict(os.environ))
    assert KEY in marker.read_text()
    marker.unlink()

    again, _ = checkout_step(cache, branch, "T2", 2)
    assert not marker.exists()
    assert read_link(again.path) == good_link  # made again from the branch, as git made it
    assert not (Path(again.path) / ".evil").exists()


def test_a_step_starts_from_the_last_committed_steps_files(
    fleet: tuple[Path, Path], tmp_path: Path
) -> None:
    shared_repo, checkout = fleet
    branch = share(checkout, "T3")
    assert branch is not None
    one, two = tmp_path / "cache-1", tmp_path / "cache-2"
    tree, _ = checkout_step(one, branch, "T3", 1)
    (tree.workspace / "a.txt").write_text("step 1\n")
    commit_step(tree, branch, step_message(1, "planner", "ready", "T3"), branch.base)
    # Step 2's attempt commits and pushes, then its worker dies before the workflow hears:
    tree, tip = checkout_step(one, branch, "T3", 2)
    (tree.workspace / "a.txt").write_text("lost attempt\n")
    commit_step(tree, branch, step_message(2, "developer", "done", "T3"), tip)
    # ... and another worker's half step leaves files it never committed.
    (tree.workspace / "junk.txt").write_text("half a step\n")

    for cache in (two, one):  # another worker, and the same one again
        again, tip = checkout_step(cache, branch, "T3", 2)
        assert (again.workspace / "a.txt").read_text() == "step 1\n"
        assert not (again.workspace / "junk.txt").exists()
    commit_step(again, branch, step_message(2, "developer", "done", "T3"), tip)
    log = git(shared_repo, "log", "--format=%s", f"{branch.base}..{branch.branch}")
    assert log.splitlines() == ["step 2: developer -> done", "step 1: planner -> ready"]


def test_a_push_never_overwrites_another_workers(fleet: tuple[Path, Path], tmp_path: Path) -> None:
    shared_repo, checkout = fleet
    branch = share(checkout, "T4")
    assert branch is not None
    assert not publish(shared_repo, branch.branch, branch.base, "1" * 40)  # a stale lease
    # Two branches of the thread start from the same tip on two workers.
    a, _ = checkout_step(tmp_path / "cache-a", branch, "T4", 2)
    b, _ = checkout_step(tmp_path / "cache-b", branch, "T4", 3)
    (a.workspace / "a.txt").write_text("a\n")
    (b.workspace / "b.txt").write_text("b\n")
    commit_step(a, branch, step_message(2, "developer", "done", "T4"), branch.base)
    commit_step(b, branch, step_message(3, "developer", "done", "T4"), branch.base)
    tip = branch.branch
    assert git(shared_repo, "show", f"{tip}:a.txt") == "a"  # b's push was replayed on a's
    assert git(shared_repo, "show", f"{tip}:b.txt") == "b"
    assert git(shared_repo, "rev-list", "--count", f"{branch.base}..{tip}") == "2"


def test_a_network_origin_is_refused_and_a_checkout_without_one_is_shared_itself(
    tmp_path: Path, fleet: tuple[Path, Path]
) -> None:
    _, checkout = fleet
    for url in ("https://example.invalid/r.git", "ssh://h/r.git", "git@h:r.git"):
        assert local_repository(url) is None
    assert local_repository("file:///srv/r.git") == "/srv/r.git"
    git(checkout, "remote", "set-url", "origin", "https://example.invalid/r.git")
    with pytest.raises(WorktreeError, match="not a path"):
        share(checkout, "T5")
    git(checkout, "remote", "remove", "origin")
    found = share(checkout, "T6")
    assert found == SharedBranch(str(checkout.resolve()), "orchestrator/T6", found.base)
    assert git(checkout, "rev-parse", "orchestrator/T6") == git(checkout, "rev-parse", "HEAD")


def test_a_repair_keeps_the_rejected_attempts_files_and_replaces_its_commit(
    fleet: tuple[Path, Path], tmp_path: Path
) -> None:
    shared_repo, checkout = fleet
    branch = share(checkout, "T7")
    assert branch is not None
    tree, tip = checkout_step(tmp_path / "cache-1", branch, "T7", 1)
    (tree.workspace / "a.txt").write_text("edited\n")
    commit_step(tree, branch, step_message(1, "developer", "?", "T7"), tip)  # then rejected
    again, tip = checkout_step(tmp_path / "cache-2", branch, "T7", 1, repair=True)
    assert (again.workspace / "a.txt").read_text() == "edited\n"
    commit_step(again, branch, step_message(1, "developer", "done", "T7"), tip)
    log = git(shared_repo, "log", "--format=%s", f"{branch.base}..{branch.branch}")
    assert log.splitlines() == ["step 1: developer -> done"]
    assert git(shared_repo, "show", f"{branch.branch}:a.txt") == "edited"
    # Not a repair (the step runs again from the start): the attempt's files are dropped.
    fresh, _ = checkout_step(tmp_path / "cache-2", branch, "T7", 1)
    assert not (fresh.workspace / "a.txt").exists()
