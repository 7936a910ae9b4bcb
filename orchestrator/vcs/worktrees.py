"""Git worktree isolation: a thread that edits files works on its own branch, never in the checkout.

Theory of operation
-------------------
When `orchestrator run` starts a thread whose graph lets some role edit files or run commands,
and the workspace lies inside a git repository, the thread does not work in the user's checkout.
Instead:

1. `git worktree add -b orchestrator/<thread-id> <store>/worktrees/<thread-id> HEAD` makes a
   second working tree of the same repository, on a new branch that starts at the checkout's
   HEAD. The user's working tree, index and current branch are never touched; the only trace in
   the repository is the new branch (and git's bookkeeping of the worktree).
2. The thread's workspace (recorded in its ThreadStarted event) is the worktree, or the same
   subdirectory inside it when the workspace was a subdirectory of the repository. So every
   role's tools act there, and a resumed thread, even after a crash, works there again.
3. A small sidecar file, `<store>/worktrees/<thread-id>.json`, remembers the repository, the
   branch and the base commit, so that `threads resume` can recreate a deleted worktree from the
   branch and the final report can list the files changed since the base; and the link git made
   (the worktree's folder in the repository's `.git/worktrees/`, and the repository's `.git`).
   A sidecar is used only when it names the thread's own branch and a worktree folder named
   after the thread (`load_worktree`): a store may come with a cloned repository.
4. After every committed step, everything in the worktree is committed on the branch, "step N:
   ROLE -> STATUS" (`commit_all`, run/forking.py; one commit a step, as on Temporal), so a fork
   at step N starts a worktree of its own at step N-1's commit (`create_worktree(start=...)`).
   When the thread completes, a last commit with its summary message marks the end (with
   whatever is left, `finish_worktree`): "the fix is on the thread's branch", ready to diff,
   merge or push by hand.
   Nothing is pushed. The commit skips the repository's hooks and signing, so a hook can never
   lose the work; they run when the user commits or merges it themselves.
5. The worktree is the roles' workspace, so its `.git` file is theirs to rewrite. Before git
   touches a worktree (finishing, listing changes, recreating, pruning), `checked_link` makes sure
   the `.git` file still names the recorded gitdir and the repository's record points back;
   a worktree whose link a role changed raises `WorktreeTampered` and is never used. Git then
   runs with that gitdir and work tree passed explicitly (`tree_git`), never discovered.

Uncommitted changes in the checkout are not carried over: the worktree starts from HEAD, and
`run` warns when the checkout is dirty. `--in-place` opts out of all of this, and a workspace
that is not in a git repository is used in place.

Everything here shells out to `git` (no library) through `git_safe.run_git`: hooks, fsmonitor,
external diffs, helpers and the pager switched off, a minimal environment with no secret in it,
prompts disabled and output captured; a failing git command becomes `WorktreeError` carrying
git's own message.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..store.sqlite import GITIGNORE
from .git_safe import WorktreeError as WorktreeError  # defined there, used from here
from .git_safe import WorktreeTampered as WorktreeTampered
from .git_safe import (
    check_link,
    find_gitdir,
    read_link,
    run_git,
)

BRANCH_PREFIX = "orchestrator/"
WORKTREES = "worktrees"
FALLBACK_NAME = "orchestrator"
FALLBACK_EMAIL = "orchestrator@localhost"


@dataclass(frozen=True)
class ChangedFile:
    status: str  # git's letter: A added, M modified, D deleted, R renamed, ...
    path: str  # relative to the repository's top level

    def to_dict(self) -> dict[str, str]:
        return {"status": self.status, "path": self.path}


@dataclass(frozen=True)
class Worktree:
    """A thread's worktree, as recorded in its sidecar file."""

    thread_id: str
    repo: str  # the user's repository (its top level)
    path: str  # the worktree's top level
    branch: str
    base: str  # the commit the branch started from
    subdir: str = ""  # the workspace relative to the repository's top level
    # The link git made (older sidecars lack it: `checked_link` asks the repository then):
    gitdir: str = ""  # the worktree's folder in the repository, `<common>/worktrees/<name>`
    common: str = ""  # the repository's common `.git` folder

    @property
    def workspace(self) -> Path:
        """The thread's workspace: the worktree, or the same subdirectory inside it."""
        return Path(self.path) / self.subdir if self.subdir else Path(self.path)


@dataclass(frozen=True)
class Outcome:
    """What a finished thread left on its branch."""

    worktree: Worktree
    commit: str | None  # the commit made now, or None when there was nothing new to commit
    head: str  # the branch's tip after finishing
    files: list[ChangedFile] = field(default_factory=list)  # changed since the base

    def to_dict(self) -> dict[str, Any]:
        return {
            "branch": self.worktree.branch,
            "repo": self.worktree.repo,
            "path": self.worktree.path,
            "base": self.worktree.base,
            "commit": self.commit,
            "head": self.head,
            "files": [f.to_dict() for f in self.files],
        }


# --------------------------------------------------------------------------- git


def git(
    args: Iterable[str],
    cwd: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run git (hardened: `git_safe`) in the user's checkout `cwd`; never in a worktree."""
    return run_git(args, cwd, env=env, check=check, input=input)


def tree_git(
    tree: Worktree,
    args: Iterable[str],
    *,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run git on the thread's worktree: its link checked first, then the recorded gitdir and
    work tree passed explicitly, so nothing a role wrote in the workspace picks the repository."""
    gitdir = checked_link(tree)
    return run_git(
        args, tree.path, git_dir=gitdir, work_tree=tree.path, env=env, check=check, input=input
    )


def checked_link(tree: Worktree) -> str:
    """The worktree's gitdir, once `check_link` found the link as git made it. Raises
    WorktreeTampered when a role changed it, WorktreeError when the repository lost it."""
    gitdir, common = tree.gitdir, tree.common
    if not (gitdir and common):  # a worktree recorded before the link was: ask the repository
        common = git(
            ["rev-parse", "--path-format=absolute", "--git-common-dir"], tree.repo
        ).stdout.strip()
        gitdir = find_gitdir(tree.path, common) or ""
        if not gitdir:
            raise WorktreeError(f"{tree.path} is not a worktree of {tree.repo} any more")
    check_link(tree.path, gitdir, common)
    return gitdir


def find_repo(path: str | os.PathLike[str]) -> Path | None:
    """The top level of the git repository holding `path`, or None (no repo, or no git)."""
    p = Path(path)
    if not p.is_dir():
        return None
    try:
        result = git(["rev-parse", "--show-toplevel"], p, check=False)
    except WorktreeError:
        return None
    if result.returncode != 0 or not result.stdout.strip():
        return None
    return Path(result.stdout.strip()).resolve()


def needs_isolation(graph: Any) -> bool:
    """True when some role of the graph may edit files or run commands: the edit or shell tool
    sets, a Python or command actor (code, or an agent process, working in the workspace),
    Python or MCP tools (code that gets the workspace)."""
    return any(role.edits_files for role in graph.roles.values())


def head_commit(repo: Path) -> str | None:
    result = git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], repo, check=False)
    if result.returncode != 0:
        return None  # an unborn HEAD: a repository without commits
    return result.stdout.strip() or None


def uncommitted_changes(repo: Path, ignore: Path | None = None) -> list[str]:
    """`git status --porcelain` lines of the checkout, minus paths inside `ignore`."""
    lines = git(["status", "--porcelain", "--untracked-files=normal"], repo).stdout.splitlines()
    if ignore is None:
        return lines
    try:
        skip = ignore.resolve().relative_to(repo).as_posix().rstrip("/") + "/"
    except ValueError:
        return lines
    return [line for line in lines if not line[3:].strip('"').startswith(skip)]


# --------------------------------------------------------------------------- the sidecar


def worktrees_dir(store_dir: str | os.PathLike[str]) -> Path:
    return Path(store_dir) / WORKTREES


def sidecar_path(store_dir: str | os.PathLike[str], thread_id: str) -> Path:
    return worktrees_dir(store_dir) / f"{thread_id}.json"


def load_worktree(store_dir: str | os.PathLike[str] | None, thread_id: str) -> Worktree | None:
    """The worktree recorded for a thread, or None when it runs in place."""
    if store_dir is None:
        return None
    path = sidecar_path(store_dir, thread_id)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    names = Worktree.__dataclass_fields__
    try:
        tree = Worktree(**{k: str(v) for k, v in data.items() if k in names})
    except (TypeError, AttributeError):  # not a mapping, or fields missing
        return None
    # Only what `create_worktree` writes: the thread's own branch and worktree folder. A store can
    # come with a cloned repository (`./.orchestrator/`), and a planted sidecar naming `main`, or
    # a worktree of the person's, would have `threads prune --branches` delete or remove it.
    if (
        tree.thread_id != thread_id
        or tree.branch != BRANCH_PREFIX + thread_id
        or Path(tree.path).name != thread_id
    ):
        return None
    return tree


def _ignore_store(store_dir: Path, repo: Path) -> None:
    """Keep the store (and the worktrees in it) out of the checkout's `git status`.

    The default store, `./.orchestrator/`, usually sits inside the user's repository; a
    `.gitignore` of `*` inside it (as pytest does for its cache) keeps the checkout clean.
    """
    try:
        store_dir.resolve().relative_to(repo)
    except ValueError:
        return  # the store is outside the repository: nothing shows up in its status
    marker = store_dir / ".gitignore"
    if not marker.exists():  # a store made before orchestrator wrote one itself
        marker.write_text(GITIGNORE)


# --------------------------------------------------------------------------- lifecycle


def create_worktree(
    workspace: str | os.PathLike[str],
    store_dir: str | os.PathLike[str],
    thread_id: str,
    *,
    start: str | None = None,
    base: str | None = None,
) -> Worktree:
    """Make the thread's worktree on a new branch from HEAD, and record it. Raises WorktreeError.

    A fork's worktree (`start`, `base`): its branch starts at the commit `start` (the original's
    step before the fork point) and keeps the original's `base`, so its changes are listed from
    where the original began."""
    ws = Path(workspace).resolve()
    repo = find_repo(ws)
    if repo is None:
        raise WorktreeError(f"{ws} is not inside a git repository")
    base = base or head_commit(repo)
    if base is None:
        raise WorktreeError(
            f"the repository at {repo} has no commits yet, so there is nothing to branch from; "
            "commit something first, or pass --in-place to work in the checkout itself"
        )
    store = Path(store_dir).resolve()
    folder = worktrees_dir(store)
    folder.mkdir(parents=True, exist_ok=True)
    _ignore_store(store, repo)
    path = folder / thread_id
    branch = BRANCH_PREFIX + thread_id
    git(["worktree", "add", "--quiet", "-b", branch, str(path), start or base], repo)
    subdir = ws.relative_to(repo).as_posix() if ws != repo else ""
    common = git(["rev-parse", "--path-format=absolute", "--git-common-dir"], repo).stdout.strip()
    gitdir = read_link(path)  # what git just wrote, before any role could touch it
    if gitdir is None:
        raise WorktreeError(f"`git worktree add` left no `.git` file in {path}")
    tree = Worktree(thread_id, str(repo), str(path), branch, base, subdir, gitdir, common)
    check_link(tree.path, gitdir, common)
    sidecar_path(store, thread_id).write_text(json.dumps(asdict(tree), indent=2) + "\n")
    if subdir:
        tree.workspace.mkdir(parents=True, exist_ok=True)  # an untracked (empty) subdirectory
    return tree


def ensure_worktree(tree: Worktree) -> bool:
    """Recreate a thread's worktree from its branch when it was removed. True when recreated.

    A worktree that is there must still link to its repository (`checked_link`): one whose
    `.git` a role changed raises WorktreeTampered rather than being worked in again."""
    if os.path.lexists(Path(tree.path) / ".git"):
        checked_link(tree)
        return False
    repo = Path(tree.repo)
    if find_repo(repo) is None:
        raise WorktreeError(f"the thread's repository {repo} is gone")
    git(["worktree", "prune"], repo)
    exists = git(
        ["rev-parse", "--verify", "--quiet", f"refs/heads/{tree.branch}"], repo, check=False
    )
    if exists.returncode != 0:
        raise WorktreeError(
            f"the thread's worktree {tree.path} and its branch {tree.branch} are both gone"
        )
    git(["worktree", "add", "--quiet", tree.path, tree.branch], repo)
    if tree.gitdir and read_link(tree.path) != os.path.normpath(tree.gitdir):
        raise WorktreeError(  # the name git chose was taken: not the link recorded
            f"git recreated the worktree {tree.path} under another name than {tree.gitdir}; "
            f"remove it (git -C {repo} worktree remove {tree.path}) and resume again"
        )
    if tree.subdir:
        tree.workspace.mkdir(parents=True, exist_ok=True)
    return True


def identity(tree: Worktree) -> dict[str, str]:
    """Author and committer for the commit: the user's, or a fallback when git has none."""
    env: dict[str, str] = {}
    name = tree_git(tree, ["config", "user.name"], check=False).stdout.strip()
    email = tree_git(tree, ["config", "user.email"], check=False).stdout.strip()
    if not name:
        env["GIT_AUTHOR_NAME"] = env["GIT_COMMITTER_NAME"] = FALLBACK_NAME
    if not email:
        env["GIT_AUTHOR_EMAIL"] = env["GIT_COMMITTER_EMAIL"] = FALLBACK_EMAIL
    return env


def changed_files(tree: Worktree, upto: str = "HEAD") -> list[ChangedFile]:
    """The files that differ between the base and `upto` on the thread's branch."""
    # Commits only, no work tree: a nested repository's gitlink is listed like a file, and
    # git has no reason to look inside it (`SAFE_CONFIG` ignores submodules otherwise).
    args = [
        "diff",
        "--name-status",
        "--no-renames",
        "--ignore-submodules=none",
        tree.base,
        upto,
        "--",
    ]
    out = tree_git(tree, args).stdout
    files = []
    for line in out.splitlines():
        status, _, path = line.partition("\t")
        if path:
            files.append(ChangedFile(status.strip()[:1], path))
    return files


def commit_message(graph: str, thread_id: str, inputs: Mapping[str, Any], final: str) -> str:
    """`<graph>: <first line of the task>`, then the thread id and its final message."""
    subject = ""
    for key in ("issue", "task", *sorted(inputs)):
        value = inputs.get(key)
        if isinstance(value, str) and value.strip():
            first = next(line for line in value.strip().splitlines() if line.strip())
            subject = first.strip().lstrip("#").strip()
            break
    subject = subject or f"thread {thread_id}"
    room = max(72 - len(graph) - 2, 20)  # git's customary limit for a subject line
    if len(subject) > room:
        subject = subject[: room - 1].rstrip() + "…"
    body = f"Work of orchestrator thread {thread_id} (graph {graph})."
    if final.strip():
        body += "\n\n" + final.strip()
    return f"{graph}: {subject}\n\n{body}\n"


def commit_all(tree: Worktree, message: str, author: Mapping[str, str] | None = None) -> str:
    """Commit everything in the worktree, even nothing (one commit per step: docs/format.md
    section 20), skipping hooks and signing; the new commit. `author`: `identity(tree)`, when
    the caller asked it already (a thread's every step). Raises WorktreeTampered, before git
    runs, when a role changed the worktree's `.git`."""
    tree_git(tree, ["add", "--all"])
    commit = ["commit", "--quiet", "--no-verify", "--allow-empty", "-F", "-"]
    tree_git(tree, commit, env=identity(tree) if author is None else author, input=message)
    return tree_git(tree, ["rev-parse", "HEAD"]).stdout.strip()


def finish_worktree(tree: Worktree, message: str) -> Outcome:
    """Commit everything in the worktree on the thread's branch, with the thread's summary
    message (an empty commit when its steps' commits hold everything: it marks where the
    thread ended); list the files changed since the base.

    Raises WorktreeTampered, before git runs, when a role changed the worktree's `.git`."""
    # --allow-empty: the steps committed their work already (and git's own check would miss
    # a staged nested repository: SAFE_CONFIG ignores submodules).
    commit = commit_all(tree, message)
    return Outcome(tree, commit, commit, changed_files(tree))


# --------------------------------------------------------------------------- cleaning up


def worktree_present(tree: Worktree) -> bool:
    """Whether the worktree has a `.git` (whatever it now is: `checked_link` judges that)."""
    return os.path.lexists(Path(tree.path) / ".git")


def branch_exists(tree: Worktree) -> bool:
    ref = f"refs/heads/{tree.branch}"
    return git(["rev-parse", "--verify", "--quiet", ref], tree.repo, check=False).returncode == 0


def worktree_changes(tree: Worktree) -> list[str]:
    """`git status --porcelain` lines of the thread's worktree: work not committed."""
    args = ["status", "--porcelain", "--untracked-files=normal", "--ignore-submodules=all"]
    return tree_git(tree, args).stdout.splitlines()


def remove_worktree(tree: Worktree) -> None:
    """`git worktree remove`, never forced: git refuses a worktree with changes not committed.

    Git checks that by running `git status` through the worktree's `.git` file, so the link is
    checked first: a worktree whose `.git` a role changed raises WorktreeTampered instead."""
    checked_link(tree)
    git(["worktree", "remove", tree.path], tree.repo)


def unmerged_commits(tree: Worktree) -> int:
    """Commits of the thread's branch that no other branch holds.

    "Other" is every local and remote-tracking branch except the threads' own
    (`orchestrator/*`): a thread branch merged into `main`, or into a feature branch, has none.
    """
    out = git(
        [
            "rev-list",
            "--count",
            f"refs/heads/{tree.branch}",
            "--not",
            f"--exclude={BRANCH_PREFIX}*",
            "--branches",
            f"--exclude=*/{BRANCH_PREFIX}*",
            "--remotes",
        ],
        tree.repo,
    ).stdout
    return int(out.strip() or 0)


def delete_branch(tree: Worktree) -> None:
    """Delete the thread's branch; the caller checked that its commits are merged elsewhere."""
    git(["branch", "-D", tree.branch], tree.repo)


def discard_worktree(tree: Worktree) -> None:
    """Undo `create_worktree` for a thread that was never created; best effort, never raises."""
    try:
        git(["worktree", "remove", "--force", tree.path], tree.repo)
        git(["branch", "-D", tree.branch], tree.repo)
    except WorktreeError:
        pass
    sidecar = Path(tree.path).parent / f"{tree.thread_id}.json"
    sidecar.unlink(missing_ok=True)
