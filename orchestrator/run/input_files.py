"""Files a user names as input (`-i KEY=@FILE`, `threads answer --file`, `run --batch FILE`).

A path given on the command line may point anywhere: at `/proc/self/environ` (the
orchestrator's secrets, which would go to a model and the store), `/dev/zero` (a read that never
ends), a FIFO (an open that never returns). So such a file is read only when, after following
symlinks, it is a regular file of at most `limit` bytes outside `/proc` and `/sys` (whose files
claim to be small regular ones). It is opened without blocking, checked on the open descriptor
(so it cannot be swapped between the check and the read), and read up to `limit + 1` bytes.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import InputError

MAX_FILE = 10_000_000  # bytes of a file given as an input (-i KEY=@FILE, --file)
PSEUDO_FILESYSTEMS = ("/proc", "/sys")


class FileRefused(InputError):
    """A file given as input that is not read: why, in words for the user."""


def read_regular_file(path: Path, limit: int = MAX_FILE) -> bytes:
    """The bytes of a regular file of at most `limit` bytes (a symlink to one is fine).

    Refused: a FIFO (opened without blocking, so it cannot hang), a device (`/dev/zero` would
    never end), a folder, and anything under /proc or /sys (they claim to be small regular
    files: `/proc/self/environ` holds the orchestrator's secrets). Raises FileRefused."""
    real = os.path.realpath(path)
    if any(real == top or real.startswith(top + os.sep) for top in PSEUDO_FILESYSTEMS):
        raise FileRefused(f"{path} is a file of the system ({real}), not a regular file")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise FileRefused(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a FIFO, socket or device"
            raise FileRefused(f"{path} is {kind}; only a regular file is read")
        if _on_pseudo_filesystem(info.st_dev):
            raise FileRefused(f"{path} is a file of the system ({real}), not a regular file")
        if info.st_size > limit:
            raise FileRefused(f"{path} is over {limit // 1_000_000} MB ({info.st_size:,} bytes)")
        chunks: list[bytes] = []
        size = 0
        while size <= limit and (chunk := os.read(fd, min(1 << 20, limit + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise FileRefused(f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > limit:  # it grew while being read
        raise FileRefused(f"{path} is over {limit // 1_000_000} MB")
    return b"".join(chunks)


def _on_pseudo_filesystem(device: int) -> bool:
    """Whether a file's device is that of /proc or /sys (a bind mount elsewhere, say)."""
    for top in PSEUDO_FILESYSTEMS:
        try:
            if os.stat(top).st_dev == device:
                return True
        except OSError:
            continue
    return False
