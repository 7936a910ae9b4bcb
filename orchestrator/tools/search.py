"""`search_files`: the "search files" part of the `read` tool set (docs/format.md section 3).

The text editor tool can view and list but not search, and a read-only role has no shell to run
grep, so roles with `read` or `edit` also get this small custom tool: a regular expression
searched line by line through the files under a path, `path:line: text` per match.
Hidden entries (`.git`, `.venv`, ...) are skipped, symlinks are not followed out of the
workspace, binary and very large files are skipped, FIFOs, devices and hard-linked files are
skipped (`workspace.read_file`), and the output is bounded, credentials redacted before lines are
cut.

The pattern comes from the model, so it may be catastrophic (`(a+)+$`, `(x+x+)+y`): it is run by
the `regex` module with a time limit, `TIME_LIMIT` seconds for the whole search, after which the
search stops with an error result that says why.
"""

from __future__ import annotations

import fnmatch
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import regex

from .workspace import PathRefused, Workspace, read_file

TOOL_NAME = "search_files"
MAX_MATCHES = 200
MAX_FILE_BYTES = 2_000_000
MAX_LINE = 300
TIME_LIMIT = 5.0


class _TooSlow(Exception):
    pass


Result = tuple[str, bool]


def definition() -> dict[str, Any]:
    return {
        "name": TOOL_NAME,
        "description": (
            "Search files in the workspace for a regular expression (Python syntax), line by "
            "line. Returns `path:line: text` for each match, at most 200. Hidden files and "
            "directories are skipped."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "regular expression to look for"},
                "path": {
                    "type": "string",
                    "description": "file or directory to search, relative to the workspace "
                    "(default: the whole workspace)",
                },
                "glob": {
                    "type": "string",
                    "description": "only search files whose name matches, e.g. *.py",
                },
                "ignore_case": {"type": "boolean", "description": "case-insensitive match"},
            },
            "required": ["pattern"],
        },
    }


def search(
    workspace: Workspace,
    args: dict[str, Any],
    *,
    redact: Callable[[str], str] = lambda text: text,
    time_limit: float = TIME_LIMIT,
) -> Result:
    pattern = args.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        return "`pattern` is required", True
    try:
        compiled = regex.compile(pattern, regex.IGNORECASE if args.get("ignore_case") else 0)
    except (regex.error, OverflowError, RecursionError) as exc:
        return f"invalid regular expression: {exc}", True
    try:
        base = workspace.resolve(args.get("path") or ".")
    except PathRefused as exc:
        return str(exc), True
    glob = args.get("glob") if isinstance(args.get("glob"), str) else None
    matches: list[str] = []
    deadline = time.monotonic() + time_limit
    try:
        for shown, real in _files(workspace, base):
            if glob and not fnmatch.fnmatch(os.path.basename(shown), glob):
                continue
            if _scan(shown, real, compiled, matches, redact, deadline):
                matches.append(f"… (stopped after {MAX_MATCHES} matches; narrow the search)")
                break
    except _TooSlow:
        return (
            f"the search was stopped after {time_limit:g} s: the pattern {pattern!r} is too "
            "slow to match (nested quantifiers such as `(a+)+` backtrack without end); "
            "simplify it or narrow `path`/`glob`"
        ), True
    if not matches:
        return f"no matches for {pattern!r}", False
    return "\n".join(matches), False


def _files(workspace: Workspace, base: Path) -> list[tuple[str, Path]]:
    """(name shown, real path) of the files to search; symlinks only when they stay inside."""
    if not base.is_dir():
        return [(workspace.display(base), base)]
    found: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = Path(dirpath) / name
            real = Path(os.path.realpath(path))
            if not workspace.contains(real) or workspace.protects(real):
                continue
            found.append((workspace.display(path), real))
    return found


def _scan(
    shown: str,
    file: Path,
    pattern: regex.Pattern[str],
    out: list[str],
    redact: Callable[[str], str],
    deadline: float,
) -> bool:
    """Append the matches of one file; True when the match limit is reached."""
    try:
        data = read_file(file, shown, limit=MAX_FILE_BYTES + 1)
    except (OSError, PathRefused):  # unreadable, a FIFO or device, a hard link: skipped
        return False
    if len(data) > MAX_FILE_BYTES or b"\x00" in data[:8192]:
        return False
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        left = deadline - time.monotonic()
        if left <= 0:
            raise _TooSlow
        try:
            found = pattern.search(line, timeout=left)
        except TimeoutError:
            raise _TooSlow from None
        if found:
            line = redact(line)  # before the cut, so a cut cannot show part of a credential
            text = line if len(line) <= MAX_LINE else line[:MAX_LINE] + "…"
            out.append(f"{shown}:{number}: {text}")
            if len(out) >= MAX_MATCHES:
                return True
    return False
