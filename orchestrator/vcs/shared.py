"""A thread's branch in a repository many workers reach: each worker's worktree, one commit a step.

Theory of operation
-------------------
A thread on Temporal runs its steps on whichever worker takes them, so no worktree on one
machine can be its workspace. Its files live on its branch instead, in a repository every
worker reaches (a path: a shared disk, or a `file://` URL), and each worker works in a
worktree of its own cache:

1. When the thread starts (`share`, on the machine that runs `orchestrator run`), the checkout's
   HEAD is pushed to that repository as the thread's branch `orchestrator/<thread-id>`: the
   checkout's `origin` when it is a path, else the checkout itself. `SharedBranch` (repository,
   branch, base commit, the workspace's subdirectory) travels with the thread.
2. Before a step (`checkout_step`, on the worker), the worker fetches the branch into its cache
   (a bare mirror per repository, `<cache>/repos/`), and makes or reuses its worktree of the
   thread, `<cache>/worktrees/<thread-id>`, checked out (detached) at the commit of the last
   step before this one: commits of this step or later are a lost attempt's, or a rejected
   reply's, and are dropped. Files not committed (a dead worker's half step) are cleaned away.
   So the step starts from the last committed step's files, whichever worker ran that step.
   A repair (a rejected reply, the role asked to fix it) starts from the rejected attempt's
   files instead, and its commit replaces that attempt's.
3. After the step (`commit_step`), everything in the worktree is committed, "step N: ROLE ->
   STATUS" (empty when the step changed nothing: one commit per step), and pushed with a lease
   on the tip the step started from, so a worker never overwrites what another pushed meanwhile
   (a parallel branch of the thread: its commit is replayed on the new tip, and pushed again).
4. A fork of the thread at step N (`fork_branch`, on the machine that forks it) is a branch of
   its own in the same repository, `orchestrator/<fork-id>`, at the commit step N started from,
   with the original's base: its first step starts from the original's files of step N-1.

Everything runs through `git_safe.run_git` (no hook, helper or filter a repository names runs,
no secret in git's environment; every transport but local files off), with the mirror named by
`--git-dir` and the worktree's link checked before git touches it (`worktrees.tree_git`). A
worktree whose `.git` a role changed is not used: it is deleted and made again from the branch.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from .git_safe import (
    WorktreeError,
    WorktreeTampered,
    check_link,
    find_gitdir,
    read_link,
    run_git,
)
from .worktrees import (
    BRANCH_PREFIX,
    Worktree,
    commit_all,
    find_repo,
    git,
    head_commit,
    identity,
    tree_git,
)

STEP_SUBJECT = re.compile(r"^step (\d+): ")
PUSH_TRIES = 5  # a parallel branch's push that lost the race is replayed on the new tip


@dataclass(frozen=True)
class SharedBranch:
    """Where a thread's files live: its branch in a repository the workers reach."""

    repository: str  # a path, or a file:// URL
    branch: str
    base: str  # the commit the branch started from
    subdir: str = ""  # the workspace relative to the repository's top level

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SharedBranch:
        return cls(**{k: str(data[k]) for k in ("repository", "branch", "base", "subdir")})


# --------------------------------------------------------------------------- the client


def local_repository(url: str) -> str | None:
    """`url` as a path git reaches with local files only, or None (a network URL)."""
    if url.startswith("file://"):
        return urlparse(url).path or None
    if "://" in url or re.match(r"^[\w.-]+@[\w.-]+:", url):  # scp-like ssh: host:path
        return None
    return url


def share(folder: Path, thread_id: str) -> SharedBranch | None:
    """Push the checkout's HEAD as the thread's branch to the repository the workers reach;
    None when `folder` is in no repository. Raises WorktreeError."""
    repo = find_repo(folder)
    if repo is None:
        return None
    base = head_commit(repo)
    if base is None:
        raise WorktreeError(f"the repository at {repo} has no commits yet: commit something first")
    origin = run_git(["remote", "get-url", "origin"], repo, check=False).stdout.strip()
    repository = str(repo)
    if origin:
        path = local_repository(origin)
        if path is None:
            raise WorktreeError(
                f"the checkout's origin {origin} is not a path: workers reach a thread's "
                "repository as local files (a shared disk), never over the network "
                "(see docs/scale-out.md)"
            )
        repository = path if os.path.isabs(path) else str((repo / path).resolve())
    branch = BRANCH_PREFIX + thread_id
    if Path(repository).resolve() != repo:
        base = deliver(Path(repository), str(repo), "HEAD")  # HEAD may have moved: what came
    publish(Path(repository), branch, base, "")
    subdir = folder.resolve().relative_to(repo).as_posix() if folder.resolve() != repo else ""
    return SharedBranch(repository, branch, base, "" if subdir == "." else subdir)


def fork_branch(shared: SharedBranch, thread_id: str, step: int) -> SharedBranch:
    """A fork's branch (docs/format.md section 20): `orchestrator/<thread_id>` in the same
    repository, at the files step `step` of the original started from (its newest commit of
    an earlier step, else the original's base). The base stays the original's, so that a fork
    of this fork finds the original's step commits below its own. Raises WorktreeError."""
    repository = Path(local_repository(shared.repository) or shared.repository)
    git_dir = _gitdir(repository)
    ref = f"refs/heads/{shared.branch}"
    tip = run_git(["rev-parse", "--verify", f"{ref}^{{commit}}"], repository, git_dir=git_dir)
    log = run_git(
        ["log", "--format=%H %s", f"{shared.base}..{tip.stdout.strip()}"],
        repository, git_dir=git_dir,
    )  # fmt: skip
    start, _ = _start(log.stdout, shared, step)
    branch = BRANCH_PREFIX + thread_id
    publish(repository, branch, start, "")
    return SharedBranch(shared.repository, branch, shared.base, shared.subdir)


# --------------------------------------------------------------------------- the worker


def mirror_of(cache: Path, repository: str) -> Path:
    """The worker's bare mirror of `repository`, made on first use."""
    key = hashlib.sha256(repository.encode()).hexdigest()[:16]
    mirror = cache / "repos" / f"{key}.git"
    if not (mirror / "HEAD").exists():
        mirror.parent.mkdir(parents=True, exist_ok=True)
        run_git(["init", "--bare", "--quiet", str(mirror)], cache)
    return mirror


def _mirror_git(mirror: Path, args: list[str], check: bool = True) -> str:
    return run_git(args, mirror, git_dir=str(mirror), check=check).stdout.strip()


def fetch(mirror: Path, shared: SharedBranch) -> str:
    """The branch's tip in the repository, fetched into the mirror."""
    ref = f"refs/heads/{shared.branch}"
    source = local_repository(shared.repository) or shared.repository
    _mirror_git(mirror, ["fetch", "--quiet", "--no-tags", source, f"+{ref}:{ref}"])
    return _mirror_git(mirror, ["rev-parse", "--verify", f"{ref}^{{commit}}"])


def start_of(mirror: Path, shared: SharedBranch, tip: str, step: int) -> tuple[str, str | None]:
    """The commit step `step` starts from (the newest on the branch of an earlier step), and
    the newest commit of this step after it, if any (an earlier attempt's)."""
    log = _mirror_git(mirror, ["log", "--format=%H %s", f"{shared.base}..{tip}"])
    return _start(log, shared, step)


def _start(log: str, shared: SharedBranch, step: int) -> tuple[str, str | None]:
    """`start_of` over the branch's `git log --format="%H %s"` (newest first)."""
    own = None
    for line in log.splitlines():
        commit, _, subject = line.partition(" ")
        found = STEP_SUBJECT.match(subject)
        number = int(found.group(1)) if found else 0
        if number < step:
            return commit, own
        if number == step and own is None:
            own = commit
    return shared.base, own


def checkout_step(
    cache: Path,
    shared: SharedBranch,
    thread_id: str,
    step: int,
    repair: bool = False,
    folder: str | None = None,
) -> tuple[Worktree, str]:
    """The worker's worktree of the thread, at the files step `step` starts from; and the
    branch's tip it saw, the lease of the step's push (`commit_step`).

    A repair (the step's reply was rejected and the role is asked to fix it) starts from the
    files of the rejected attempt's commit instead, on top of the earlier step's commit, so its
    own commit replaces that one: still one commit for the step. `folder` names the worktree
    (default: the thread's id; a parallel branch running beside another step of its thread on
    the same worker needs one of its own)."""
    cache.mkdir(parents=True, exist_ok=True)
    mirror = mirror_of(cache.resolve(), shared.repository)
    tip = fetch(mirror, shared)
    start, own = start_of(mirror, shared, tip, step)
    files = own if repair and own is not None else start
    path = cache.resolve() / "worktrees" / (folder or thread_id)
    tree = _existing(mirror, path, shared, thread_id)
    if tree is None:
        _mirror_git(mirror, ["worktree", "prune"])
        path.parent.mkdir(parents=True, exist_ok=True)
        _mirror_git(mirror, ["worktree", "add", "--quiet", "--detach", str(path), start])
        tree = _existing(mirror, path, shared, thread_id)
        if tree is None:
            raise WorktreeError(f"`git worktree add` left no worktree at {path}")
    tree_git(tree, ["reset", "--quiet", "--hard", files])
    tree_git(tree, ["clean", "-ffdq"])  # a lost attempt's files, not committed
    if files != start:
        tree_git(tree, ["reset", "--quiet", "--soft", start])  # the files stay, to commit again
    if shared.subdir:
        tree.workspace.mkdir(parents=True, exist_ok=True)
    return tree, tip


def _existing(mirror: Path, path: Path, shared: SharedBranch, thread_id: str) -> Worktree | None:
    """The worktree at `path` if its link is the one git made; a changed one is deleted."""
    if not os.path.lexists(path):
        return None
    gitdir = find_gitdir(str(path), str(mirror))  # asked of the mirror, never of the folder
    tree = Worktree(
        thread_id, str(mirror), str(path), shared.branch, shared.base, shared.subdir,
        gitdir or "", str(mirror),
    )  # fmt: skip
    try:
        if gitdir is None or read_link(path) is None:
            raise WorktreeTampered(f"{path} is no worktree of {mirror}")
        check_link(str(path), gitdir, str(mirror))
    except WorktreeTampered:
        shutil.rmtree(path, ignore_errors=True)  # git never runs in it: made again below
        return None
    return tree


def commit_step(tree: Worktree, shared: SharedBranch, message: str, lease: str) -> str:
    """Commit the worktree as one step and push it as the branch's tip; the new commit.

    `lease` is the tip the step started from: a push finding another tip (a parallel branch
    of the thread pushed meanwhile) replays this commit on that tip and tries again."""
    commit_all(tree, message)
    mirror = Path(tree.common)
    ref = f"refs/heads/{shared.branch}"
    for _ in range(PUSH_TRIES):
        head = tree_git(tree, ["rev-parse", "HEAD"]).stdout.strip()
        _mirror_git(mirror, ["update-ref", ref, head])
        repository = Path(local_repository(shared.repository) or shared.repository)
        deliver(repository, str(mirror), ref)
        if publish(repository, shared.branch, head, lease):
            return head
        lease = fetch(mirror, shared)  # another branch of the thread pushed meanwhile
        tree_git(tree, ["rebase", "--quiet", lease], env=identity(tree))
    raise WorktreeError(
        f"could not push {shared.branch} to {shared.repository} in {PUSH_TRIES} tries"
    )


def deliver(repository: Path, source: str, ref: str) -> str:
    """Bring `ref` of `source` (a repository's path) into `repository`; its commit.

    Git runs in the receiving repository (`fetch`), not in the sender (`push`): a push starts
    the receiving repository's hooks (`pre-receive`, `post-receive`), whose configuration the
    sender's `-c` settings do not reach, while in a fetch every `-c` of `git_safe` holds."""
    run_git(["fetch", "--quiet", "--no-tags", source, ref], repository, git_dir=_gitdir(repository))
    fetched = ["rev-parse", "--verify", "FETCH_HEAD^{commit}"]
    return run_git(fetched, repository, git_dir=_gitdir(repository)).stdout.strip()


def publish(repository: Path, branch: str, commit: str, lease: str) -> bool:
    """Set the branch to `commit` if it is still at `lease` ("": if it does not exist yet);
    False when another tip was there (an atomic compare-and-swap: `update-ref NEW OLD`)."""
    old = lease or "0" * 40
    done = run_git(
        ["update-ref", f"refs/heads/{branch}", commit, old],
        repository, git_dir=_gitdir(repository), check=False,
    )  # fmt: skip
    if done.returncode != 0 and lease == "":
        raise WorktreeError(f"{repository} already has a branch {branch}: {done.stderr.strip()}")
    return done.returncode == 0


def _gitdir(repository: Path) -> str:
    """The repository's git folder: itself when bare, its `.git` folder otherwise (named
    explicitly: `safe.bareRepository=explicit` lets git discover no bare repository)."""
    dot = repository / ".git"
    return str(dot if dot.is_dir() else repository)


def step_message(step: int, role: str, status: str, thread_id: str) -> str:
    """The subject of a step's commit: "step N: ROLE -> STATUS" (what forking a thread reads)."""
    return f"step {step}: {role} -> {status}\n\nOrchestrator thread {thread_id}.\n"


def step_commit(tree: Worktree, step: int) -> str:
    """The commit a fork at `step` starts from: the newest commit on the thread's branch made
    for an earlier step ("step K: ..." with K < `step`), else the branch's base. Asked of the
    repository (`git log`), never of the worktree a role may have changed."""
    ref = f"refs/heads/{tree.branch}"
    log = git(["log", "--format=%H %s", f"{tree.base}..{ref}"], tree.repo).stdout
    for line in log.splitlines():
        commit, _, subject = line.partition(" ")
        found = STEP_SUBJECT.match(subject)
        if found and int(found.group(1)) < step:
            return commit
    return tree.base
