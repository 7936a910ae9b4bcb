"""A thread's trust boundary: what its roles may write, and what they may not (docs/models.md).

Theory of operation. A role's processes (its shell, a command actor, Claude Code, MCP servers)
run in a sandbox that binds the workspace read-write; the file tools reach what lies inside the
workspace. But a workspace can hold the orchestrator's own files, and files a role writes must
never steer what the orchestrator (or the user's git) does next:

- the repository's metadata: the workspace's `.git` (a folder, or a worktree's `.git` file that
  says where its metadata is), the worktree's own git folder and the repository's common one.
  Written by a role, it becomes hooks and `core.fsmonitor` for the user's next `git status`;
  read by the orchestrator later (`gitdir: /tmp/X`), it would make the sandbox bind a host folder;
- the thread store (`threads.db`, the worktrees' sidecars) and the models file;
- the graph's own files: the graph file, its `python:` modules (imported by the orchestrator,
  which holds the API key) and their `__pycache__`.

`Boundary` holds these paths, decided ONCE when a thread starts and never re-read from files a
role can write: the git folders are asked of git at thread start, before any role runs (for a
worktree, of the user's repository, which no role can write; not at all when no `.git` entry
and no `HEAD` lies at or above the workspace, where git would find none) and recorded in the store
(`<store>/boundaries/<thread>.json`, hidden from roles); a resumed thread reads that record.
The graph's files and the store come from the orchestrator's own configuration.

`views()` turns a boundary into the sandbox's mounts, in one place for both mechanisms:

- the workspace and the role's `writable:` paths read-write;
- the git metadata read-only, and visible even when it lies under a folder the sandbox replaces
  by an empty one (`/tmp`, the home folders: `home_roots`), so git works in a worktree there;
- the store replaced by an empty, read-only folder (`hidden`);
- the graph's files read-only where they lie inside a writable path;
- every folder between a writable path and a protected path inside it bound onto itself, so
  that it is a mount point: a role cannot rename it away (`mv sub x; mkdir sub`) and put a file
  of its own where a protected one was.

Mounts are ordered by depth (a path's ancestors always come first), so the most specific rule
wins: a worktree inside the hidden store is still writable, a `.git` inside the workspace is
still read-only. The file tools refuse the same paths (`refuses`), and any `.git` component.

What is not protected: a `.git` a role makes during the thread (`git init` in a folder that was
no repository at start) is its work, like any file it writes, and no placeholder can be put in a
user's folder to prevent it; the orchestrator never reads it for this thread (it reads the
record), its git never runs the filters such a repository defines (`git_safe`), and the person
should treat it as they would a repository from a stranger. A models file named by
`ORCHESTRATOR_MODELS_FILE` that does not exist at thread start cannot be protected either.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from ..definition.model_config import config_path
from ..vcs.worktrees import Worktree, WorktreeError, git

if TYPE_CHECKING:
    from ..definition.models import Graph

T = TypeVar("T")
RECORDS = "boundaries"
STORE_FILES = ("worktrees", RECORDS, "models.yaml", ".gitignore")
SYSTEM_FOLDERS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/opt", "/var", "/nix", "/srv")
ViewKind = Literal["tmpfs", "hide", "pin", "rw", "ro"]
# At the same path, a later mount wins: a hidden folder may hold a writable one, which may hold
# a read-only one.
ORDER: dict[str, int] = {"tmpfs": 0, "hide": 1, "pin": 2, "rw": 3, "ro": 4}


def real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(os.path.expanduser(os.fspath(path))))


def inside(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


@dataclass(frozen=True)
class View:
    """One mount of the sandbox: `tmpfs` (an empty writable folder: /tmp), `hide` (an empty
    read-only one), `pin` and `rw` (bound read-write onto itself), `ro` (read-only)."""

    kind: ViewKind
    path: Path

    @property
    def key(self) -> tuple[int, int, str]:
        return (len(self.path.parts), ORDER[self.kind], str(self.path))


@dataclass(frozen=True)
class Boundary:
    """A thread's workspace and the paths inside or around it that roles may not change."""

    root: Path
    git: tuple[Path, ...] = ()  # the repository's metadata: read-only, and kept visible
    read_only: tuple[Path, ...] = ()  # the graph's files and the models file
    hidden: tuple[Path, ...] = ()  # the thread store: an empty read-only folder in the sandbox

    @property
    def protected(self) -> tuple[Path, ...]:
        return (*self.git, *self.read_only, *self.hidden)

    def protected_within(self, root: Path) -> tuple[Path, ...]:
        """The protected paths strictly inside `root`: what the file tools must refuse there
        (paths outside it are refused anyway; a protected folder holding it is not meant)."""
        return tuple(p for p in self.protected if p != root and p.is_relative_to(root))

    @classmethod
    def bare(cls, root: Path) -> Boundary:
        """A boundary for a step run outside a thread of this process (a Temporal worker, a
        test): the nearest `.git` at or above the workspace, if any, read-only; nothing is read
        from it."""
        root = real(root)
        return cls(root, git=tuple(_dot_gits(root)))

    def to_dict(self) -> dict[str, object]:
        return {"root": str(self.root), "git": [str(p) for p in self.git]}


# --------------------------------------------------------------------------- at thread start


def at_start(
    workspace: Path,
    *,
    graph: Graph | None,
    store_dir: Path | None,
    worktree: Worktree | None,
) -> Boundary:
    """The boundary of a thread starting now, before any of its roles ran."""
    return with_config(git_at_start(workspace, worktree), graph, store_dir)


def git_at_start(workspace: Path, worktree: Worktree | None) -> Boundary:
    """The facts found when a thread starts (its workspace and git folders), without the
    orchestrator's own files: what `record` keeps and `of_thread` adds those to, as they are
    when the thread runs. A session that advances the thread next needs no more than this."""
    root = real(workspace)
    found = worktree_git(worktree) if worktree is not None else repository_git(root)
    return Boundary(root, git=tuple(_unique([*found, *_dot_gits(root)])))


def with_config(boundary: Boundary, graph: Graph | None, store_dir: Path | None) -> Boundary:
    """The boundary with the orchestrator's own files added: the graph's and the store."""
    root = boundary.root
    read_only = [*graph_files(graph, root)] if graph is not None else []
    models = config_path()
    if models is not None and models.is_file():
        read_only.append(real(models))
    hidden = [real(store_dir)] if store_dir is not None else []
    home = os.environ.get("ORCHESTRATOR_HOME")
    if home:
        hidden.append(real(home))
    hidden = [h for h in hidden if h.is_dir()]
    return Boundary(root, boundary.git, tuple(_unique(read_only)), tuple(_unique(hidden)))


def repository_git(root: Path) -> list[Path]:
    """The git folder and common folder of the repository holding `root`, asked of git."""
    if not may_be_in_repository(root):
        return []  # git would find none; a subprocess per thread start is ~2 ms of CPU
    try:
        done = git(
            ["rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir"],
            root,
            check=False,
        )
    except WorktreeError:
        return []
    if done.returncode != 0:
        return []
    return [real(line) for line in done.stdout.splitlines() if line.strip()]


def may_be_in_repository(root: Path) -> bool:
    """Could git's discovery find a repository from `root`? Only through a `.git` entry (a
    folder or a `gitdir:` file) or a folder that is a repository itself (a bare one, or inside
    `.git`), whose `HEAD` git requires, at `root` or above: git runs with an environment of our
    own (no GIT_DIR: git_safe.git_env). False only when there is neither, so git is asked in
    every other case; most batch folders outside a repository skip the subprocess."""
    return any(
        os.path.lexists(folder / ".git") or os.path.lexists(folder / "HEAD")
        for folder in (root, *root.parents)
    )


def worktree_git(tree: Worktree) -> list[Path]:
    """A thread worktree's git folders, asked of the user's repository (which no role writes)
    and its worktree list, never of the worktree's own `.git` file."""
    common = repository_git(Path(tree.repo))
    if not common:
        return []
    found = [common[-1]]
    try:
        listed = git(["worktree", "list", "--porcelain"], Path(tree.repo), check=False).stdout
    except WorktreeError:
        listed = ""
    paths = [line[9:] for line in listed.splitlines() if line.startswith("worktree ")]
    if any(real(p) == real(tree.path) for p in paths):
        own = common[-1] / "worktrees" / Path(tree.path).name
        if own.is_dir():
            found.append(real(own))
    return found


def _dot_gits(root: Path) -> list[Path]:
    """The nearest `.git` entry at or above the workspace, by its path (never read)."""
    for folder in (root, *root.parents):
        if os.path.lexists(folder / ".git"):
            return [folder / ".git"]
    return []


def graph_files(graph: Graph, root: Path) -> list[Path]:
    """The files of the graph (and its subgraphs) a role must not change.

    A folder of graph files or `python:` modules that does not hold the workspace is protected
    whole; one that does (a graph at a project's top, run in place) by its graph file, its
    local Python modules and their `__pycache__`, and the files of every module this process
    imported from there (what the `python:` module imports beside it, `helper.py`: asked after
    the thread's modules were loaded, `pyref.preload`), so the rest of the workspace stays the
    roles'. A thread continued in another process imports them afresh: changed by a role, they
    would run in the orchestrator, with its API key."""
    found: list[Path] = []

    def folder_or(folder: Path, *names: str, code: bool = False) -> None:
        if not inside(root, folder):
            found.append(folder)
            return
        found.extend(real(folder / name) for name in names)
        if code:
            # Bytecode a role planted here would run at the next import (a resume): made now
            # if the import did not make it (PYTHONDONTWRITEBYTECODE), so that it can be bound.
            with contextlib.suppress(OSError):
                (folder / "__pycache__").mkdir(exist_ok=True)
            found.append(real(folder / "__pycache__"))
            found.extend(imported_from(real(folder)))

    for each in graphs(graph):
        if each.path:
            path = real(each.path)
            folder_or(path.parent, path.name)
    for ref, folder in python_refs(graph):
        if folder:
            top = ref.partition(":")[0].split(".")[0]
            folder_or(real(folder), f"{top}.py", top, code=True)
    return [p for p in _unique(found) if os.path.lexists(p)]


def imported_from(folder: Path) -> list[Path]:
    """The files of the modules this process imported from `folder` (or a folder inside it),
    but an interpreter's own (a project's `.venv` running the orchestrator: its hundreds of
    packages are no graph's code, and would each be a mount)."""
    prefixes = {real(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    found: list[Path] = []
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not isinstance(file, str) or not inside(path := real(file), folder):
            continue
        if path != folder and not any(inside(path, p) for p in prefixes):
            found.append(path)
    return found


def graphs(graph: Graph) -> Iterator[Graph]:
    """The graph and its subgraphs, at any depth."""
    seen: set[int] = set()
    todo = [graph]
    while todo:
        each = todo.pop()
        if id(each) in seen:
            continue
        seen.add(id(each))
        yield each
        todo += [child for name in each.roles if (child := each.subgraph(name)) is not None]


def python_refs(graph: Graph, *, deep: bool = True) -> list[tuple[str, str | None]]:
    """The `python:` actors and tools of the graph (and its subgraphs): (reference, folder)."""
    refs: list[tuple[str, str | None]] = []
    for each in graphs(graph) if deep else [graph]:
        for role in each.roles.values():
            refs += [(t.python, role.folder) for t in role.python_tools]
            if role.python_ref is not None:
                refs.append((role.python_ref, role.folder))
    return _unique(refs)


def _unique(items: Iterable[T]) -> list[T]:
    out: list[T] = []
    for p in items:
        if p not in out:
            out.append(p)
    return out


# --------------------------------------------------------------------------- the record


def record_path(store_dir: Path, thread_id: str) -> Path:
    return Path(store_dir) / RECORDS / f"{thread_id}.json"


def record(boundary: Boundary, store_dir: Path | None, thread_id: str) -> None:
    """Keep the facts found at thread start (the git folders), for the thread's resumes."""
    if store_dir is None:
        return
    path = record_path(store_dir, thread_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(boundary.to_dict(), indent=2) + "\n", encoding="utf-8")


def recorded(store_dir: Path | None, thread_id: str) -> Boundary | None:
    """The boundary's facts recorded when the thread started, or None (none recorded)."""
    if store_dir is None:
        return None
    try:
        data = json.loads(record_path(store_dir, thread_id).read_text(encoding="utf-8"))
        return Boundary(Path(data["root"]), git=tuple(Path(p) for p in data["git"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def of_thread(
    workspace: Path,
    thread_id: str,
    graph: Graph | None,
    store_dir: Path | None,
    worktree: Worktree | None,
    known: Boundary | None = None,
) -> Boundary:
    """The boundary of a thread that started earlier, never read from a file a role could have
    written: a worktree's git folders asked of the user's repository (a recreated worktree may
    have new ones); in place, what was found when the thread started (`known` to this process,
    else recorded), else (a thread started by an older version) the workspace's own `.git`.
    The graph's files and the store are added as they are now."""
    if worktree is not None:
        found: Boundary | None = git_at_start(workspace, worktree)
    else:
        found = known or recorded(store_dir, thread_id)
    return with_config(found or Boundary.bare(workspace), graph, store_dir)


# --------------------------------------------------------------------------- the thread's


_current: ContextVar[Boundary | None] = ContextVar("orchestrator_boundary", default=None)


@contextlib.contextmanager
def entered(boundary: Boundary) -> Iterator[Boundary]:
    """The thread's boundary for the steps run inside (their tasks inherit it)."""
    token = _current.set(boundary)
    try:
        yield boundary
    finally:
        _current.reset(token)


def current(workspace: Path) -> Boundary:
    """The boundary of the thread this step belongs to; a bare one outside a thread."""
    found = _current.get()
    if found is not None and inside(real(workspace), found.root):
        return found
    return Boundary.bare(workspace)


# --------------------------------------------------------------------------- the sandbox's views


def home_roots() -> list[Path]:
    """`/home`, `/root` and the orchestrator user's home folder (resolved) when it lies
    elsewhere (a service account's `/var/lib/x`): folders the sandbox hides whole. Never a
    home that is (or holds) a system folder: a `HOME=/` or `HOME=/usr` would hide the tools."""
    roots = [Path("/home"), Path("/root")]
    home = os.environ.get("HOME") or os.path.expanduser("~")
    if home.startswith("/"):
        own = real(home)
        system = any(inside(Path(s), own) for s in SYSTEM_FOLDERS)
        if not system and not any(inside(own, r) for r in roots):
            roots.append(own)
    return roots


def interpreter_paths() -> list[Path]:
    """The running interpreter's prefixes and the orchestrator's own code: what a process it
    starts (`sys.executable`, a virtual environment's tools) needs to read, wherever it is."""
    package = Path(__file__).resolve().parents[2]
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix]
    return _unique([real(p) for p in paths] + [package])


def views(
    boundary: Boundary,
    workspace: Path,
    writable: tuple[Path, ...],
    scratch: tuple[Path, ...],
    readable: Iterable[Path],
) -> list[View]:
    """The sandbox's mounts over a read-only `/`, in the order to make them.

    `workspace` (the step's folder) and `writable` read-write; `scratch` (`/tmp`, a hidden
    `/run`) empty; `readable`: paths under `scratch` to keep visible read-only."""
    rw = _unique([real(workspace), *writable])
    # A hidden folder the role may write whole (`writable: [~]`) is bound, not emptied: under
    # the fallback a recursive bind would bring the empty folder mounted there back on top.
    out: list[View] = [View("tmpfs", p) for p in scratch if p not in rw]
    out += [View("rw", p) for p in rw]
    shown = [p for p in readable if any(inside(p, s) for s in scratch)]
    out += [View("ro", p) for p in shown if not any(inside(p, w) for w in rw)]
    # A `writable:` path that names git metadata itself (a role that must commit) is the one
    # way to let a role write it; a wider one (`~`) does not.
    asked = [w for w in writable if any(inside(w, g) for g in boundary.git)]
    gits = [p for p in boundary.git if not any(inside(p, w) for w in asked)]
    out += [View("ro", p) for p in gits if os.path.lexists(p)]
    out += [View("hide", p) for p in boundary.hidden if p.is_dir() and p not in rw]
    for store in boundary.hidden:  # the store is a writable folder itself (`--store .`): its
        if store in rw:  # own files cannot be hidden there, only made read-only
            mine = [store / n for n in STORE_FILES] + list(store.glob("threads.db*"))
            out += [View("ro", p) for p in mine if os.path.lexists(p)]
    guarded = [p for p in boundary.read_only if os.path.lexists(p)]
    out += [View("ro", p) for p in guarded if any(inside(p, w) for w in rw)]
    for view in list(out):
        if view.kind in ("ro", "hide"):
            out += [View("pin", a) for a in _between(view.path, rw)]
    unique: dict[tuple[str, Path], View] = {(v.kind, v.path): v for v in out}
    return sorted(unique.values(), key=lambda v: v.key)


def _between(path: Path, writable: list[Path]) -> list[Path]:
    """The folders strictly between a writable path holding `path` and `path` itself."""
    for w in writable:
        if path != w and path.is_relative_to(w):
            return [a for a in path.parents if a != w and a.is_relative_to(w)]
    return []
