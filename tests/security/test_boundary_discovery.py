"""The boundary's git folders with and without asking git (issue 23: no subprocess per thread
start in a folder outside any repository).

`boundary.repository_git` skips git when `may_be_in_repository` says no `.git` entry and no
`HEAD` lies at or above the workspace. The attack: a workspace inside a repository that the
quick check might not see (a plain checkout, a subfolder of one, a linked worktree's `gitdir:`
file, a bare repository, the inside of a `.git` folder); the boundary must still list that
repository's git folders, exactly as git itself reports them. The control: a folder outside any
repository, where the boundary lists none and git agrees; and a repository with the quick
check switched off, to show the comparison sees the folders git finds. (The hardened git the
boundary runs does not discover a bare repository, `safe.bareRepository`, before or after.)
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from orchestrator.tools import boundary
from orchestrator.vcs.git_safe import git_env


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=git_env(), check=True, capture_output=True)


ASK = ["rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir"]


def _plain_git_finds(root: Path) -> bool:
    """Does a plain git (not hardened: bare repositories discovered too) find a repository?"""
    done = subprocess.run(["git", *ASK], cwd=root, env=git_env(), capture_output=True)
    return done.returncode == 0


def _asked_of_git(root: Path) -> list[Path]:
    """What the boundary got before the quick check: always asked of (hardened) git."""
    done = boundary.git(ASK, root, check=False)
    if done.returncode != 0:
        return []
    return [boundary.real(line) for line in done.stdout.splitlines() if line.strip()]


def _repo(path: Path) -> Path:
    path.mkdir(parents=True)
    _git("init", "-q", cwd=path)
    _git(
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "x",
        cwd=path,
    )
    return path


def _checkout(tmp: Path) -> Path:
    return _repo(tmp / "repo")


def _subfolder(tmp: Path) -> Path:
    sub = _repo(tmp / "repo") / "a" / "b"
    sub.mkdir(parents=True)
    return sub


def _linked_worktree(tmp: Path) -> Path:
    repo = _repo(tmp / "repo")
    _git("worktree", "add", "-q", str(tmp / "linked"), cwd=repo)
    return tmp / "linked"


def _bare(tmp: Path) -> Path:
    (tmp / "bare.git").mkdir()
    _git("init", "-q", "--bare", cwd=tmp / "bare.git")
    inside = tmp / "bare.git" / "refs" / "heads"
    return inside


def _inside_dot_git(tmp: Path) -> Path:
    return _repo(tmp / "repo") / ".git" / "objects"


REPOSITORIES = {
    "checkout": _checkout,
    "subfolder": _subfolder,
    "linked-worktree": _linked_worktree,
    "bare": _bare,
    "inside-dot-git": _inside_dot_git,
}


@pytest.mark.parametrize("kind", sorted(REPOSITORIES))
def test_attack_a_repository_is_found_as_git_finds_it(tmp_path: Path, kind: str) -> None:
    root = boundary.real(REPOSITORIES[kind](tmp_path))
    assert _plain_git_finds(root), f"git itself finds the repository ({kind})"
    assert boundary.may_be_in_repository(root), "the quick check must leave it to git"
    assert boundary.repository_git(root) == _asked_of_git(root)


def test_control_no_repository_no_git_and_the_same_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tmp_path may lie under a repository on a developer's machine; then there is no control.
    root = boundary.real(tmp_path / "plain")
    root.mkdir()
    if _plain_git_finds(root):
        pytest.skip("the test folder is inside a repository")
    calls: list[list[str]] = []
    monkeypatch.setattr(boundary, "git", lambda args, *a, **k: calls.append(list(args)))
    assert not boundary.may_be_in_repository(root)
    assert boundary.repository_git(root) == []
    assert calls == [], "no git subprocess for a folder outside any repository"


def test_control_without_the_quick_check_git_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = boundary.real(_subfolder(tmp_path))
    monkeypatch.setattr(boundary, "may_be_in_repository", lambda root: True)
    assert boundary.repository_git(root) == _asked_of_git(root) != []
    plain = boundary.real(tmp_path / "plain")
    plain.mkdir()
    assert boundary.repository_git(plain) == _asked_of_git(plain)
