"""Files beneath a directory descriptor, reached without following a symlink anywhere.

The walk under `workspace.py`: a path is a sequence of names below a directory that is already
open. Each directory on the way is opened with `openat(fd, name, O_DIRECTORY | O_NOFOLLOW)`
relative to the one before, and the file at the end with `O_NOFOLLOW | O_NONBLOCK | O_NOCTTY`
relative to its parent's descriptor. So no component is ever looked up by a path string that a
concurrent `rename` could redirect: a directory swapped for a symlink between two tool calls, or
between two components of one call, makes the open fail (`ELOOP`/`ENOTDIR`) instead of leading
elsewhere, and a directory renamed away after it was opened is still the one written into (it
stays where it was moved, inside the workspace). Missing parents are made with
`mkdirat(fd, name)` and then opened like any other component, so a symlink raced into their
place is refused too.

A regular file with one link is all that is read or written: a hard link (`ln /etc/passwd x`)
has a name inside and an inode outside, a FIFO blocks whoever opens it, a device has effects
of its own. The kind is checked with `fstatat(..., AT_SYMLINK_NOFOLLOW)` before opening and
again on the opened descriptor (what counts), and an existing file is truncated only after that.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Sequence

OPEN_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | OPEN_FLAGS
KINDS = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a directory",
}
SYMLINK = (
    "is a symbolic link; the file tools follow no symlink anywhere in a path (one could lead "
    "outside the workspace, or be swapped while the tool runs): use the path it points to"
)


class PathRefused(Exception):
    """A path that leads outside the workspace, or is not a valid path at all."""


def refusal(shown: str, st: os.stat_result) -> str | None:
    """Why the file `shown` (with status `st`, not followed) may not be read or written."""
    if stat.S_ISLNK(st.st_mode):
        return f"{shown} {SYMLINK}"
    if not stat.S_ISREG(st.st_mode):
        kind = KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
        return f"{shown} is {kind}; only regular files can be read or written"
    if st.st_nlink != 1:
        return (
            f"{shown} has {st.st_nlink} hard links; a hard-linked file may be shared with a "
            "file outside the workspace, so it is not read or written (copy it instead)"
        )
    return None


def lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    """The status of `name` in `dir_fd`, not followed; None when there is no such entry."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def open_dir(dir_fd: int, name: str, shown: str, *, create: bool = False) -> int:
    """A new descriptor of the directory `name` in `dir_fd` (made first when `create`).

    PathRefused when it is a symlink or not a directory; FileNotFoundError when it is missing
    and not to be made."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as exc:
        raise _explained(dir_fd, name, shown, exc) from None
    with contextlib.suppress(FileExistsError):  # made meanwhile, maybe a symlink: see below
        os.mkdir(name, 0o777, dir_fd=dir_fd)
    try:
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise _explained(dir_fd, name, shown, exc) from None


def walk(root_fd: int, parts: Sequence[str], *, create: bool = False) -> int:
    """A new descriptor of the directory `parts` below `root_fd` (the caller closes it)."""
    fd = os.dup(root_fd)
    try:
        for depth, name in enumerate(parts):
            following = open_dir(fd, name, "/".join(parts[: depth + 1]), create=create)
            os.close(fd)
            fd = following
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_at(dir_fd: int, name: str, shown: str, limit: int | None = None) -> bytes:
    """The bytes of a regular, singly linked file (at most `limit`), or PathRefused."""
    found = lstat_at(dir_fd, name)
    if found is None:
        raise FileNotFoundError(errno.ENOENT, "no such file", shown)
    problem = refusal(shown, found)  # before opening: opening a device can have effects
    if problem:
        raise PathRefused(problem)
    try:
        fd = os.open(name, os.O_RDONLY | OPEN_FLAGS, dir_fd=dir_fd)
    except OSError as exc:  # swapped for a symlink or a FIFO since the check
        raise _explained(dir_fd, name, shown, exc) from None
    try:
        _check_open(fd, shown)
        os.set_blocking(fd, True)
        with os.fdopen(os.dup(fd), "rb") as file:
            return file.read() if limit is None else file.read(limit)
    finally:
        os.close(fd)


def write_at(dir_fd: int, name: str, data: bytes, shown: str) -> bool:
    """Write `data` to a new or existing regular, singly linked file; True if it existed.

    An existing file is checked on the open descriptor before it is truncated, so a hard link or
    a FIFO in its place is refused without touching what it leads to."""
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | OPEN_FLAGS, 0o666, dir_fd=dir_fd)
        existed = False
    except FileExistsError:
        try:
            fd = os.open(name, os.O_WRONLY | OPEN_FLAGS, dir_fd=dir_fd)
        except OSError as exc:  # a FIFO without a reader, a symlink (ELOOP), a directory
            raise _explained(dir_fd, name, shown, exc) from None
        existed = True
    try:
        _check_open(fd, shown)
        os.set_blocking(fd, True)
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    return existed


def _check_open(fd: int, shown: str) -> None:
    problem = refusal(shown, os.fstat(fd))
    if problem:
        raise PathRefused(problem)


def _explained(dir_fd: int, name: str, shown: str, exc: OSError) -> Exception:
    """PathRefused saying why `name` could not be opened, when its status tells; else `exc`."""
    found = lstat_at(dir_fd, name)
    if found is None:
        return exc
    if stat.S_ISLNK(found.st_mode):
        return PathRefused(f"{shown} {SYMLINK}")
    if stat.S_ISDIR(found.st_mode):
        if exc.errno == errno.EISDIR:
            return PathRefused(f"{shown} is a directory; only regular files can be written")
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # it was something else a moment ago
            return PathRefused(
                f"{shown} changed while the tool opened it (it was a symbolic link or not a "
                "directory a moment before; something is renaming it): nothing was done"
            )
        return exc
    if exc.errno == errno.ENOTDIR:
        return PathRefused(f"{shown} is not a directory")
    problem = refusal(shown, found)
    return PathRefused(problem) if problem else exc
