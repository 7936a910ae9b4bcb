"""A fork of a thread with a git worktree (docs/format.md section 20): the thread commits after
every step on its branch, and a fork at step N starts a worktree and branch of its own at the
commit of step N-1, with the original's commits of steps 1 to N-1 in its history."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.definition.loader import load_graph
from orchestrator.run.session import Session
from orchestrator.store.sqlite import SqliteStore
from tests.fork_project import make_project
from tests.test_worktree import git, make_repo


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    with Session(SqliteStore(tmp_path / "store")) as s:
        yield s


def subjects(repo: Path, base: str, branch: str) -> list[str]:
    return git(repo, "log", "--reverse", "--format=%s", f"{base}..{branch}").splitlines()


def test_a_fork_starts_from_the_commit_of_the_step_before(session: Session, tmp_path: Path) -> None:
    graph = load_graph(make_project(tmp_path / "project"))
    repo = make_repo(tmp_path / "repo")
    base = git(repo, "rev-parse", "HEAD")
    started = session.start(graph, {"task": "a picky task"}, folder=repo)
    original = started.thread_id
    asyncio.run(session.advance(graph, original))
    tree = session.worktree(original)
    assert tree is not None
    # one commit a step on the original's branch, then its summary
    assert subjects(repo, base, tree.branch) == [
        "step 1: writer -> drafted",
        "step 2: reviewer -> changes",
        "step 3: editor -> _",
        "step 4: reviewer -> approved",
        "review: a picky task",
    ]
    assert git(repo, "show", f"{tree.branch}:draft.txt") == "v1\nEdit: shorter"

    fork = session.fork(original, at=3, message="be strict")
    fork_tree = session.worktree(fork)
    assert fork_tree is not None and fork_tree.branch == f"orchestrator/{fork}"
    assert fork_tree.base == base
    step2 = git(repo, "rev-parse", f"{tree.branch}~3")
    assert git(repo, "rev-parse", fork_tree.branch) == step2  # the commit of step 2
    assert (Path(fork_tree.path) / "draft.txt").read_text() == "v1\n"  # step 2's files
    assert session.state(fork).workspace == str(fork_tree.workspace)

    asyncio.run(session.advance(graph, fork))
    assert subjects(repo, base, fork_tree.branch) == [
        "step 1: writer -> drafted",  # the original's commits, shared
        "step 2: reviewer -> changes",
        "step 3: editor -> _",  # the fork's own from here
        "step 4: reviewer -> approved",
        "review: a picky task",
    ]
    assert git(repo, "merge-base", "--is-ancestor", step2, fork_tree.branch) == ""
    edited = git(repo, "show", f"{fork_tree.branch}:draft.txt")
    assert edited.splitlines()[:2] == ["v1", "Edit: shorter"] and edited.endswith("be strict")
    assert edited.count("Edit:") == 1  # step 3 ran once on this branch, on step 2's files
    # the original's branch and files did not move
    assert git(repo, "show", f"{tree.branch}:draft.txt") == "v1\nEdit: shorter"
    assert git(repo, "rev-parse", "HEAD") == base and git(repo, "status", "--porcelain") == ""


def test_a_fork_at_step_1_starts_from_the_base(session: Session, tmp_path: Path) -> None:
    graph = load_graph(make_project(tmp_path / "project"))
    repo = make_repo(tmp_path / "repo")
    base = git(repo, "rev-parse", "HEAD")
    started = session.start(graph, {"task": "owls"}, folder=repo)
    asyncio.run(session.advance(graph, started.thread_id))
    fork = session.fork(started.thread_id, at=1)
    fork_tree = session.worktree(fork)
    assert fork_tree is not None
    assert git(repo, "rev-parse", fork_tree.branch) == base
    assert not (Path(fork_tree.path) / "draft.txt").exists()
