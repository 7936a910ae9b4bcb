"""Path confinement: every path a model names must stay inside the thread's workspace.

A model chooses the paths its tools touch, so the paths are untrusted input. `Workspace.resolve`
turns a user-given path into a real path and refuses it unless it lies inside the workspace root:

- relative paths are taken from the root; absolute paths are accepted only when they point into it;
- the result is resolved with `os.path.realpath`, so `..` components and symlinks (in any
  component, including the last) are followed before the containment check: `../x`, `/etc/passwd`
  and `link -> /etc` all fail, while `a/../b` and a symlink to another file inside the workspace
  work;
- the root itself is resolved once, so a workspace reached through a symlink (macOS `/tmp`) works.

Containment by path is not enough for the file itself: a hard link (`ln /etc/passwd ws/x`) has a
path inside and an inode outside, and a FIFO planted in the workspace blocks whoever opens it.
`read_file` and `write_file` therefore open with `O_NOFOLLOW | O_NONBLOCK`, and refuse anything
but a regular file with a single link (`st_nlink == 1`), checked on the opened descriptor; an
existing file is only truncated after that check.

Paths the thread's boundary protects (`boundary.py`: the thread store, the graph's files) and any
path with a `.git` component are refused as well: they steer the orchestrator and git.

The check is made when the tool runs; a process racing to swap a directory for a symlink between
the check and the open is outside this threat model (the model's own shell, which runs in a
sandbox, could do no better).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

OPEN_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
KINDS = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a directory",
    stat.S_IFLNK: "a symbolic link",
}


class PathRefused(Exception):
    """A path that leads outside the workspace, or is not a valid path at all."""


class Workspace:
    def __init__(self, root: Path | str, protected: tuple[Path, ...] = ()):
        self.root = Path(os.path.realpath(os.fspath(root)))
        # The thread boundary's paths (`boundary.py`): the store, the graph's files, git's.
        self.protected = tuple(Path(os.path.realpath(p)) for p in protected)

    def resolve(self, user_path: str | None) -> Path:
        """The real path inside the workspace that `user_path` names, or PathRefused."""
        if user_path is None:
            raise PathRefused("a path is required")
        text = str(user_path).strip()
        if "\x00" in text:
            raise PathRefused(f"{user_path!r}: a path may not contain NUL bytes")
        if text in ("", "."):
            return self.root
        given = Path(text)
        candidate = given if given.is_absolute() else self.root / given
        real = Path(os.path.realpath(candidate))
        if not self.contains(real):
            raise PathRefused(f"{text}: outside the workspace; only paths inside it may be used")
        if ".git" in real.relative_to(self.root).parts:
            raise PathRefused(f"{text}: git metadata (.git) is not for the file tools")
        if self.protects(real):
            raise PathRefused(f"{text}: it belongs to the orchestrator and may not be used")
        return real

    def contains(self, real: Path) -> bool:
        return real == self.root or real.is_relative_to(self.root)

    def protects(self, real: Path) -> bool:
        """Whether a real path lies at or under one of the boundary's protected paths."""
        return any(real == p or real.is_relative_to(p) for p in self.protected)

    def display(self, real: Path) -> str:
        """A path as the model should see it: relative to the root ("." for the root)."""
        try:
            rel = real.relative_to(self.root)
        except ValueError:
            return str(real)
        return str(rel) if str(rel) != "." else "."


def _refusal(shown: str, st: os.stat_result) -> str | None:
    if not stat.S_ISREG(st.st_mode):
        kind = KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
        return f"{shown} is {kind}; only regular files can be read or written"
    if st.st_nlink != 1:
        return (
            f"{shown} has {st.st_nlink} hard links; a hard-linked file may be shared with a "
            "file outside the workspace, so it is not read or written (copy it instead)"
        )
    return None


def check_file(path: Path, shown: str | None = None) -> None:
    """PathRefused unless `path` (not followed) is a regular file with one link."""
    problem = _refusal(shown or path.name, os.lstat(path))
    if problem:
        raise PathRefused(problem)


def read_file(path: Path, shown: str | None = None, limit: int | None = None) -> bytes:
    """The bytes of a regular, singly linked file (at most `limit`), or PathRefused."""
    check_file(path, shown)  # before opening: opening a device can have effects of its own
    fd = os.open(path, os.O_RDONLY | OPEN_FLAGS)
    try:
        problem = _refusal(shown or path.name, os.fstat(fd))
        if problem:
            raise PathRefused(problem)
        os.set_blocking(fd, True)
        with os.fdopen(os.dup(fd), "rb") as file:
            return file.read() if limit is None else file.read(limit)
    finally:
        os.close(fd)


def write_file(path: Path, text: str, shown: str | None = None) -> bool:
    """Write `text` (UTF-8) to a new or existing regular, singly linked file; True if it existed.

    An existing file is checked on the open descriptor before it is truncated, so a hard link or
    a FIFO in its place is refused without touching what it leads to."""
    data = text.encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | OPEN_FLAGS, 0o666)
        existed = False
    except FileExistsError:
        try:
            fd = os.open(path, os.O_WRONLY | OPEN_FLAGS)
        except OSError as exc:  # a FIFO without a reader, a symlink swapped in (ELOOP)
            check_file(path, shown)
            raise exc
        existed = True
    try:
        problem = _refusal(shown or path.name, os.fstat(fd))
        if problem:
            raise PathRefused(problem)
        os.set_blocking(fd, True)
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    return existed
