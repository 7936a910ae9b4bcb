"""Path confinement: every path a model names must stay inside the thread's workspace.

A model chooses the paths its tools touch, so the paths are untrusted input. `Workspace.resolve`
turns a user-given path into a real path and refuses it unless it lies inside the workspace root:

- relative paths are taken from the root; absolute paths are accepted only when they point into it;
- the result is resolved with `os.path.realpath`, so `..` components and symlinks (in any
  component, including the last) are followed before the containment check: `../x`, `/etc/passwd`
  and `link -> /etc` all fail, while `a/../b` and a symlink to another file inside the workspace
  work;
- the root itself is resolved once, so a workspace reached through a symlink (macOS `/tmp`) works.

The check is made when the tool runs; a process racing to swap a directory for a symlink between
the check and the open is outside this threat model (the model's own shell could do worse).
"""

from __future__ import annotations

import os
from pathlib import Path


class PathRefused(Exception):
    """A path that leads outside the workspace, or is not a valid path at all."""


class Workspace:
    def __init__(self, root: Path | str):
        self.root = Path(os.path.realpath(os.fspath(root)))

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
        return real

    def contains(self, real: Path) -> bool:
        return real == self.root or real.is_relative_to(self.root)

    def display(self, real: Path) -> str:
        """A path as the model should see it: relative to the root ("." for the root)."""
        try:
            rel = real.relative_to(self.root)
        except ValueError:
            return str(real)
        return str(rel) if str(rel) != "." else "."
