"""Cleaning up after threads that ended: their git worktrees and, on request, their branches.

`orchestrator threads prune [--dry-run] [--branches]` (docs/threads.md, "Cleaning up"):

- Only threads that ended (completed, failed, cancelled) are touched, and worktrees whose
  thread the store no longer has. A suspended, waiting or running thread keeps its worktree:
  that is where it continues.
- A worktree is removed with `git worktree remove`, never forced: one holding changes not
  committed (the work in progress of a failed or cancelled thread) is kept, and said so.
- Branches are kept unless `branches` is asked for, and even then a branch is deleted only when
  every commit on it is also on another branch (a local or remote-tracking one, other threads'
  branches aside): the thread's work is merged somewhere, or the thread committed nothing.
- A worktree whose `.git` a role changed (it no longer links to the repository it was made
  from) is reported and skipped, its branch too: git is never run in it, not even for a dry
  run, since the `.git` would pick the repository, and the programs, git runs (`git_safe`).
- The thread's worktree record (`worktrees/ID.json`) stays: a completed thread resumed later
  gets its worktree back from its branch; with the branch gone too, resuming says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..core.events import ThreadStatus
from ..store.base import EventStore, ThreadNotFound
from ..vcs.worktrees import (
    Worktree,
    WorktreeError,
    branch_exists,
    delete_branch,
    find_repo,
    load_worktree,
    remove_worktree,
    unmerged_commits,
    worktree_changes,
    worktree_present,
    worktrees_dir,
)

ENDED = (ThreadStatus.COMPLETED, ThreadStatus.FAILED, ThreadStatus.CANCELLED)


@dataclass
class Pruned:
    """What pruning did (or, in a dry run, would do) for one thread's worktree."""

    thread_id: str
    state: str  # the thread's state, or "unknown" when the store no longer has the thread
    tree: Worktree
    removed_worktree: bool = False
    deleted_branch: bool = False
    notes: list[str] = field(default_factory=list)  # what was kept, and why; what failed
    failed: bool = False


def prune_worktrees(
    store_dir: str | os.PathLike[str], store: EventStore, *, dry_run: bool, branches: bool
) -> list[Pruned]:
    """Prune the worktrees (and with `branches`, the merged branches) of ended threads."""
    folder = worktrees_dir(store_dir)
    out = []
    for sidecar in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        tree = load_worktree(store_dir, sidecar.stem)
        if tree is None:
            continue
        try:
            state = str(store.thread(tree.thread_id).state)
        except ThreadNotFound:
            state = "unknown"
        item = Pruned(tree.thread_id, state, tree)
        try:
            _prune_one(item, dry_run=dry_run, branches=branches)
        except WorktreeError as exc:
            item.failed = True
            item.notes.append(str(exc))
        if item.removed_worktree or item.deleted_branch or item.notes:
            out.append(item)
    return out


def _prune_one(item: Pruned, *, dry_run: bool, branches: bool) -> None:
    tree = item.tree
    present = Path(tree.path).exists()
    if item.state not in ENDED and item.state != "unknown":
        if present:
            item.notes.append(f"kept: the thread is {item.state} and continues there")
        return
    if find_repo(tree.repo) is None:
        if present:
            item.notes.append(f"kept: its repository {tree.repo} is gone")
        return
    kept_tree = False
    if present and worktree_present(tree):
        changes = worktree_changes(tree)
        if changes:
            kept_tree = True
            n = len(changes)
            item.notes.append(
                f"kept the worktree: it has {n} change{'s' if n != 1 else ''} not committed; "
                f"commit {'them' if n != 1 else 'it'}, or drop the worktree and "
                f"{'them' if n != 1 else 'it'} with: git -C {tree.repo} worktree remove --force "
                f"{tree.path}"
            )
        else:
            if not dry_run:
                remove_worktree(tree)
            item.removed_worktree = True
    elif present:
        kept_tree = True
        item.notes.append(f"kept {tree.path}: it is not a git worktree any more; remove it by hand")
    if not branches or not branch_exists(tree):
        return
    if kept_tree:
        item.notes.append(f"kept branch {tree.branch}: its worktree is kept")
        return
    unmerged = unmerged_commits(tree)
    if unmerged:
        item.notes.append(
            f"kept branch {tree.branch}: {unmerged} commit{'s' if unmerged != 1 else ''} on no "
            f"other branch; merge it, or delete it with: git -C {tree.repo} branch -D "
            f"{tree.branch}"
        )
        return
    if not dry_run:
        delete_branch(tree)
    item.deleted_branch = True
