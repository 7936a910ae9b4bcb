"""Path confinement: every path a model names must stay inside the thread's workspace.

A model chooses the paths its tools touch, so the paths are untrusted input, and the workspace
itself is hostile ground: parallel branches of a thread (or the model's own shell) change it
while a tool runs. Two steps keep every file tool inside it, whatever happens meanwhile.

1. By name (`Workspace.locate`), before anything is touched: relative paths are taken from the
   root; absolute paths are accepted only when they lie lexically under it. `..` is resolved
   lexically within the workspace (`a/../b` is `b`; `../x`, `/etc/passwd` and `a/../../x` are
   refused as outside). Refused too: a path with a NUL byte; any component named `.git` (the
   repository's metadata; in any case, for case-insensitive filesystems); any path at or under
   one of the `protected` paths given to the constructor (the thread store, the graph's folder)
   when they lie inside the root (a protected path at or above the root does not apply: the
   workspace was given to the role on purpose).
2. By descriptor (`dirfd.py`), when the tool runs: the root is opened once, and every component
   below it is opened relative to the previous one's descriptor with `O_NOFOLLOW`, so no
   symlink is followed anywhere on the path and no path string is looked up twice. A directory
   swapped for a symlink between the name check and the open, or between two components, makes
   the tool fail with an error instead of writing outside: the check and the use are the same
   system call. As a consequence every symlink is refused, also one that points to another
   file inside the workspace ("use the path it points to"); listings show symlinks (`name@`)
   and searches skip them.

Because nothing is followed, the lexical path is the physical one, so the name checks of step 1
hold for what step 2 opens. Only regular files with a single link are read or written (a hard
link has a path inside and an inode outside; a FIFO blocks whoever opens it), checked on the
opened descriptor; an existing file is truncated only after that check.

The root itself is the orchestrator's choice: it is resolved with `realpath` once (so a
workspace reached through a symlink, macOS `/tmp`, works) and opened at first use; that
descriptor is kept, so renaming the root's path later does not redirect the tools either.
"""

from __future__ import annotations

import os
import stat
import threading
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from . import dirfd
from .dirfd import PathRefused

__all__ = ["PathRefused", "Target", "Workspace"]

GIT = ".git"
GIT_REFUSED = "`.git` is the repository's metadata: the file tools do not read or write it"
PROTECTED_REFUSED = (
    "is the orchestrator's own (the thread store / the graph's folder): "
    "the file tools do not read or write it"
)
MAX_DEPTH = 100  # directories below a search's base; deeper ones are not searched


@dataclass(frozen=True)
class Target:
    """A path inside the workspace, as the names below its root; () is the root itself."""

    parts: tuple[str, ...]

    @property
    def shown(self) -> str:
        """The path as the model should see it: relative to the root ("." for the root)."""
        return "/".join(self.parts) or "."

    @property
    def name(self) -> str:
        return self.parts[-1] if self.parts else "."

    def child(self, name: str) -> Target:
        return Target((*self.parts, name))


@dataclass(frozen=True)
class Entry:
    """One name in a directory listing, its kind not followed."""

    target: Target
    is_dir: bool
    is_symlink: bool


class Workspace:
    def __init__(self, root: Path | str, protected: Iterable[Path | str] = ()):
        self.root = Path(os.path.realpath(os.fspath(root)))
        self._bases = {str(self.root), os.path.abspath(os.fspath(root))}
        self.protected = tuple(
            Target(rel.parts)
            for rel in (_below(self.root, Path(os.path.realpath(os.fspath(p)))) for p in protected)
            if rel is not None and rel.parts
        )
        self._fd: int | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ names

    def locate(self, user_path: str | None) -> Target:
        """The path inside the workspace that `user_path` names, by name only, or PathRefused."""
        if user_path is None:
            raise PathRefused("a path is required")
        text = str(user_path).strip()
        if "\x00" in text:
            raise PathRefused(f"{user_path!r}: a path may not contain NUL bytes")
        if os.path.isabs(text):
            rel = self._relative(os.path.normpath(text))
            if rel is None:
                raise PathRefused(
                    f"{text}: outside the workspace; only paths inside it may be used"
                )
        else:
            rel = os.path.normpath(text) if text else "."
            if rel == ".." or rel.startswith("../"):
                raise PathRefused(
                    f"{text}: outside the workspace; only paths inside it may be used"
                )
        target = Target(tuple(part for part in rel.split("/") if part not in ("", ".")))
        self.check_name(target)
        return target

    def check_name(self, target: Target) -> None:
        """PathRefused when `target` is or lies under `.git` or a protected path."""
        if any(part.lower() == GIT for part in target.parts):
            raise PathRefused(f"{target.shown}: {GIT_REFUSED}")
        if self.is_protected(target):
            raise PathRefused(f"{target.shown} {PROTECTED_REFUSED}")

    def is_protected(self, target: Target) -> bool:
        return any(target.parts[: len(p.parts)] == p.parts for p in self.protected)

    def resolve(self, user_path: str | None) -> Path:
        """The path inside the workspace that `user_path` names, or PathRefused.

        Checked on disk as far as it exists: a symlink on the way is refused. The answer is for
        messages; the tools themselves act through `Target`s, checked again as they open."""
        target = self.locate(user_path)
        found = self.lstat(target)
        if found is not None and stat.S_ISLNK(found.st_mode):
            raise PathRefused(f"{target.shown} {dirfd.SYMLINK}")
        return self.root.joinpath(*target.parts)

    def display(self, real: Path) -> str:
        """A path as the model should see it: relative to the root ("." for the root)."""
        rel = _below(self.root, real)
        return str(real) if rel is None else (str(rel) if rel.parts else ".")

    def _relative(self, absolute: str) -> str | None:
        for base in self._bases:
            if absolute == base:
                return "."
            if absolute.startswith(base.rstrip("/") + "/"):
                return absolute[len(base.rstrip("/")) + 1 :]
        return None

    # ------------------------------------------------------------------ descriptors

    def root_fd(self) -> int:
        """The root's descriptor, opened at first use and kept while the workspace lives."""
        with self._lock:
            if self._fd is None:
                self._fd = os.open(self.root, dirfd.DIR_FLAGS)
                weakref.finalize(self, os.close, self._fd)
            return self._fd

    def lstat(self, target: Target) -> os.stat_result | None:
        """The status of `target`, not followed; None when it (or a parent) does not exist."""
        if not target.parts:
            return os.fstat(self.root_fd())
        try:
            parent = dirfd.walk(self.root_fd(), target.parts[:-1])
        except FileNotFoundError:
            return None
        try:
            return dirfd.lstat_at(parent, target.name)
        finally:
            os.close(parent)

    def read(self, target: Target, limit: int | None = None) -> bytes:
        """The bytes of the regular, singly linked file `target` (at most `limit`)."""
        if not target.parts:
            raise PathRefused(". is a directory; only regular files can be read or written")
        parent = dirfd.walk(self.root_fd(), target.parts[:-1])
        try:
            return dirfd.read_at(parent, target.name, target.shown, limit)
        finally:
            os.close(parent)

    def write(self, target: Target, text: str, *, make_parents: bool = False) -> bool:
        """Write `text` (UTF-8) to `target`, a new or regular, singly linked file; True if it
        existed. Missing parent directories are made when `make_parents`."""
        if not target.parts:
            raise PathRefused(". is a directory; only regular files can be read or written")
        parent = dirfd.walk(self.root_fd(), target.parts[:-1], create=make_parents)
        try:
            return dirfd.write_at(parent, target.name, text.encode("utf-8"), target.shown)
        finally:
            os.close(parent)

    def entries(self, target: Target) -> list[Entry]:
        """The entries of the directory `target`, sorted by name, none of them followed."""
        fd = dirfd.walk(self.root_fd(), target.parts)
        try:
            return _entries(fd, target)
        finally:
            os.close(fd)

    def files(self, target: Target) -> Iterator[tuple[str, int, str]]:
        """(shown, directory descriptor, name) of every file to search under `target`.

        Hidden entries (`.git` among them), protected paths and symlinks are skipped and nothing
        is followed; the descriptor is valid until the next item is asked for."""
        fd = dirfd.walk(self.root_fd(), target.parts)
        try:
            yield from self._files(fd, target, 0)
        finally:
            os.close(fd)

    def _files(self, fd: int, at: Target, depth: int) -> Iterator[tuple[str, int, str]]:
        folders: list[Target] = []
        for entry in _entries(fd, at):
            name = entry.target.name
            if name.startswith(".") or entry.is_symlink or self.is_protected(entry.target):
                continue
            if entry.is_dir:
                folders.append(entry.target)
            else:
                yield entry.target.shown, fd, name
        if depth >= MAX_DEPTH:
            return
        for folder in folders:
            try:
                child = dirfd.open_dir(fd, folder.name, folder.shown)
            except (OSError, PathRefused):  # gone or swapped for a symlink meanwhile
                continue
            try:
                yield from self._files(child, folder, depth + 1)
            finally:
                os.close(child)


def _entries(fd: int, at: Target) -> list[Entry]:
    found: list[Entry] = []
    with os.scandir(fd) as listing:
        for item in listing:
            try:
                is_dir = item.is_dir(follow_symlinks=False)
                is_link = item.is_symlink()
            except OSError:
                continue
            found.append(Entry(at.child(item.name), is_dir, is_link))
    return sorted(found, key=lambda e: e.target.name)


def _below(root: Path, path: Path) -> Path | None:
    """`path` relative to `root` when it lies strictly under it, else None."""
    if path == root or not path.is_relative_to(root):
        return Path() if path == root else None
    return path.relative_to(root)


def is_dir(st: os.stat_result | None) -> bool:
    return st is not None and stat.S_ISDIR(st.st_mode)
