"""Running git for orchestrator itself, so that no program a role planted ever runs.

Theory of operation
-------------------
Orchestrator runs git in two kinds of place: the user's checkout (to find the repository, make
and remove worktrees, read branches) and a thread's worktree (to commit the thread's work, list
what changed, see whether anything is left uncommitted). The worktree is the roles' workspace:
every file in it, its `.git` file included, may have been written by a hostile role. Git runs
programs named by its configuration (`core.fsmonitor`, hooks, `diff.external`, filter drivers,
the pager, askpass and ssh helpers) and finds that configuration through the `.git` it discovers,
so a role that rewrites the worktree's `.git` to point at a repository of its own would have git
run the role's program, as the person, with the orchestrator's environment (its API key in it).

Three things close this, together:

1. **Nothing is discovered from a workspace.** Git runs on a worktree with explicit
   `--git-dir` and `--work-tree` taken from what was recorded when the worktree was made (the
   worktree's own folder inside the repository's `.git/worktrees/`), and only after
   `check_link` found the worktree's `.git` file still exactly what git wrote, and the
   repository's record still pointing back at the worktree. A worktree whose link was changed
   is refused with `WorktreeTampered`, never touched by git. So the configuration git reads is
   the repository's own `.git/config` (and the worktree's `config.worktree` beside it) and the
   person's global configuration: files a role cannot write (the sandbox shows `.git` read-only;
   the file tools never reach outside the workspace). The system configuration is not read
   (`GIT_CONFIG_NOSYSTEM`).
2. **Every program git could start from configuration is switched off on the command line**
   (`SAFE_CONFIG`: `-c` wins over every configuration file): hooks (`core.hooksPath=/dev/null`),
   `core.fsmonitor`, `diff.external` and textconv, the pager, askpass, ssh and credential helpers,
   signing, every transport but local files, submodule recursion (a nested repository's own
   configuration would otherwise be read by `git status`), automatic `gc`. Commands that diff
   also get `--no-ext-diff --no-textconv`. This holds even if the repository's own configuration
   were written by a role (a sandbox that failed to make `.git` read-only).
   Filter drivers have no switch of their own (their names come from `.gitattributes`, which a
   role may write): `repository_filters` asks the configuration which drivers the repository's
   own files (`.git/config`, `config.worktree` and what they include) define, and each is
   switched off by name (`filter.<name>.process=` empty, `required=false`). That repository may
   be one a role made: a workspace that was no repository when an in-place thread ran there can
   hold a `.git` of the role's (`git init` by its shell) by the next `orchestrator run`, which
   would find it, check its dirty state and make a worktree of it. Drivers of the person's
   global configuration (a Git LFS set up with `git lfs install`) keep working; a driver set up
   only in one repository (`git lfs install --local`, git-crypt) does not run in a thread's
   worktree, whose files then stay as committed.
3. **Git gets a minimal environment** (`git_env`), built here and not from `os.environ`: PATH
   (its absolute entries only, and `git` itself looked up there before the child changes into
   the worktree, where `.` would find a `git` a role wrote), HOME, the locale, the person's git
   identity and global-configuration location, and the switches that keep git quiet. No API
   key, token or password reaches git, or anything git runs.

Every git command of orchestrator goes through `run_git`; a failing one becomes `WorktreeError`
carrying git's own message.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..errors import WorkspaceError

# `-c` settings on every git command: each switches off a program git could otherwise start.
SAFE_CONFIG: tuple[str, ...] = (
    "core.hooksPath=/dev/null",  # no hook runs, post-commit and post-checkout included
    "core.fsmonitor=false",  # a command git would start to ask which files changed
    "core.pager=cat",
    "core.askPass=",
    "core.sshCommand=false",  # never wanted: every transport but local files is off
    "credential.helper=",  # an empty value resets the list of helpers
    "diff.external=",
    "protocol.allow=never",
    "protocol.file.allow=always",  # `git worktree add` and friends only touch local files
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "log.showSignature=false",
    "submodule.recurse=false",
    "diff.ignoreSubmodules=all",  # `git status` would run git inside a nested repository
    "status.submoduleSummary=false",
    "gc.auto=0",  # no background `git gc` started with our environment
    "maintenance.auto=false",
    "safe.bareRepository=explicit",
)

# Passed on from our own environment when set: where git finds the person's configuration and
# identity, and how to find programs. Nothing else (no key, token or password) reaches git.
PASSED_ENV: tuple[str, ...] = (
    "PATH",
    "HOME",
    "XDG_CONFIG_HOME",
    "GIT_CONFIG_GLOBAL",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "TZ",
)
FIXED_ENV: dict[str, str] = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_OPTIONAL_LOCKS": "0",  # `git status` leaves the index as it is (the user's checkout)
    "LC_ALL": "C",
    "LANG": "C",
}
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
# Commands that read no file of the work tree, so run no filter: no need to ask for filters.
NO_FILTERS = frozenset({"rev-parse", "config", "rev-list", "branch"})
# Configuration scopes a role may have written (a repository it made): their filters are off.
REPOSITORY_SCOPES = frozenset({"local", "worktree"})
DIFFING = frozenset({"diff", "log", "show"})  # commands that take --no-ext-diff/--no-textconv
TIMEOUT = 120.0


class WorktreeError(WorkspaceError):
    """A git operation for the thread's worktree failed; the message says which and why."""


class WorktreeTampered(WorktreeError):
    """The worktree's `.git` no longer links to the repository it was made from: not used."""


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a git command: PASSED_ENV from ours, FIXED_ENV, `extra`.

    PATH keeps only its absolute entries: git runs in a worktree, where a relative entry (`.`,
    or an empty one) would find a `git` or an `sh` a role wrote."""
    env = {name: os.environ[name] for name in PASSED_ENV if name in os.environ}
    entries = [e for e in env.get("PATH", DEFAULT_PATH).split(os.pathsep) if os.path.isabs(e)]
    env["PATH"] = os.pathsep.join(entries) or DEFAULT_PATH
    env.update(FIXED_ENV)
    env.update(extra or {})
    return env


def git_argv(
    args: Iterable[str], *, git_dir: str | None = None, work_tree: str | None = None
) -> list[str]:
    """`git` with SAFE_CONFIG, the explicit repository when given, then `args`."""
    argv = ["git", "--no-pager"]
    for setting in SAFE_CONFIG:
        argv += ["-c", setting]
    if git_dir is not None:
        argv.append(f"--git-dir={git_dir}")
    if work_tree is not None:
        argv.append(f"--work-tree={work_tree}")
    args = list(args)
    if args and args[0] in DIFFING:
        args[1:1] = ["--no-ext-diff", "--no-textconv"]
    return argv + args


def run_git(
    args: Iterable[str],
    cwd: str | os.PathLike[str],
    *,
    git_dir: str | None = None,
    work_tree: str | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run git hardened (see the module's docstring); raise WorktreeError on failure."""
    args = list(args)
    argv = git_argv(args, git_dir=git_dir, work_tree=work_tree)
    shown = "git " + " ".join(args)
    full_env = git_env(env)
    program = shutil.which("git", path=full_env["PATH"])
    if program is None:
        raise WorktreeError("git is not installed (or not on PATH)")
    argv[0] = program  # found before the child changes into the worktree
    if args and args[0] not in NO_FILTERS:
        off = repository_filters(program, cwd, full_env, git_dir=git_dir, work_tree=work_tree)
        argv[1:1] = off  # `-c` settings, before `--git-dir` and the command
    try:
        result = subprocess.run(
            argv,
            cwd=cwd,
            env=full_env,
            capture_output=True,
            text=True,
            input=input,
            stdin=subprocess.DEVNULL if input is None else None,
            timeout=TIMEOUT,
        )
    except FileNotFoundError:
        raise WorktreeError("git is not installed (or not on PATH)") from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WorktreeError(f"`{shown}` failed: {exc}") from None
    if check and result.returncode != 0:
        detail = (result.stderr or result.stdout).strip() or f"exit status {result.returncode}"
        raise WorktreeError(f"`{shown}` failed: {detail}")
    return result


def repository_filters(
    program: str,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    *,
    git_dir: str | None = None,
    work_tree: str | None = None,
) -> list[str]:
    """`-c` settings switching off every filter driver that the repository's own configuration
    defines (see the module's docstring): an empty `process` makes git run neither it nor the
    driver's `clean`/`smudge`, and `required=false` keeps the file as it is instead of failing.
    Reading configuration runs no program."""
    argv = git_argv(
        ["config", "--show-scope", "--name-only", "--get-regexp", r"^filter\."],
        git_dir=git_dir,
        work_tree=work_tree,
    )
    argv[0] = program
    try:
        found = subprocess.run(
            argv,
            cwd=cwd,
            env=dict(env),
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=TIMEOUT,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WorktreeError(f"`git config` failed: {exc}") from None
    names: list[str] = []
    for line in found.stdout.splitlines():
        scope, _, key = line.partition("\t")
        name = key[len("filter.") : key.rfind(".")] if key.count(".") >= 2 else ""
        if scope in REPOSITORY_SCOPES and name and name not in names:
            names.append(name)
    out: list[str] = []
    for name in names:
        out += ["-c", f"filter.{name}.process=", "-c", f"filter.{name}.required=false"]
    return out


# --------------------------------------------------------------------------- the worktree's link


def read_link(worktree: str | os.PathLike[str]) -> str | None:
    """The gitdir the worktree's `.git` file names (absolute, normalised), or None when `.git`
    is not a plain file of one `gitdir:` line (a folder, a symlink, something else)."""
    dot = Path(worktree) / ".git"
    try:
        if not dot.is_file() or dot.is_symlink():
            return None
        text = dot.read_text(encoding="utf-8")
    except (OSError, UnicodeError):
        return None
    lines = text.splitlines()
    if len(lines) != 1 or not lines[0].startswith("gitdir: "):
        return None
    return os.path.normpath(os.path.join(worktree, lines[0].removeprefix("gitdir: ")))


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeError):
        return None


def check_link(worktree: str, gitdir: str, common: str) -> None:
    """Raise WorktreeTampered unless `worktree` is still the worktree made at `gitdir`.

    Its `.git` must be a plain file naming exactly `gitdir`; `gitdir` must lie in the
    repository's `<common>/worktrees/`, and its `gitdir` and `commondir` files (git's own
    record, in the repository's `.git`, which roles cannot write) must point back at the
    worktree and at `common`. Only reads files: git is not run on anything unchecked.
    """
    problem = None
    named = read_link(worktree)
    admin = Path(gitdir)
    if named is None:
        problem = f"{worktree}/.git is not the one-line file git wrote"
    elif named != os.path.normpath(gitdir):
        problem = f"{worktree}/.git names {named} instead of {gitdir}"
    elif not admin.is_dir() or os.path.realpath(admin.parent) != os.path.realpath(
        Path(common) / "worktrees"
    ):
        problem = f"{gitdir} is not a worktree record of the repository at {common}"
    else:
        back = _read(admin / "gitdir")
        home = _read(admin / "commondir")
        if back is None or os.path.realpath(admin / back) != os.path.realpath(
            Path(worktree) / ".git"
        ):
            problem = f"the repository's record {gitdir}/gitdir does not point at {worktree}"
        elif home is None or os.path.realpath(admin / home) != os.path.realpath(common):
            problem = f"the repository's record {gitdir}/commondir does not point at {common}"
    if problem is not None:
        raise WorktreeTampered(
            f"the worktree's .git was changed by a role: {problem}; the worktree {worktree} is "
            "not used, and git must not be run in it (look at its files without git, then "
            "delete it)"
        )


def find_gitdir(worktree: str, common: str) -> str | None:
    """The folder in `<common>/worktrees/` whose record points at `worktree` (for worktrees
    recorded before the link was), found from the repository's side only."""
    want = os.path.realpath(Path(worktree) / ".git")
    folder = Path(common) / "worktrees"
    for admin in sorted(folder.iterdir()) if folder.is_dir() else []:
        back = _read(admin / "gitdir")
        if back is not None and os.path.realpath(admin / back) == want:
            return str(admin)
    return None
