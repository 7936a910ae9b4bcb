"""`search_files`: the "search files" part of the `read` tool set (FORMAT.md section 3).

The text editor tool can view and list but not search, and a read-only role has no shell to run
grep, so roles with `read` or `edit` also get this small custom tool: a regular expression
searched line by line through the files under a path, `path:line: text` per match.
Hidden entries (`.git`, `.venv`, ...) are skipped, symlinks are not followed out of the
workspace, binary and very large files are skipped, and the output is bounded.
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path
from typing import Any

from .workspace import PathRefused, Workspace

TOOL_NAME = "search_files"
MAX_MATCHES = 200
MAX_FILE_BYTES = 2_000_000
MAX_LINE = 300

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


def search(workspace: Workspace, args: dict[str, Any]) -> Result:
    pattern = args.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        return "`pattern` is required", True
    try:
        regex = re.compile(pattern, re.IGNORECASE if args.get("ignore_case") else 0)
    except re.error as exc:
        return f"invalid regular expression: {exc}", True
    try:
        base = workspace.resolve(args.get("path") or ".")
    except PathRefused as exc:
        return str(exc), True
    glob = args.get("glob") if isinstance(args.get("glob"), str) else None
    matches: list[str] = []
    for file in _files(workspace, base):
        if glob and not fnmatch.fnmatch(file.name, glob):
            continue
        if _scan(workspace, file, regex, matches):
            matches.append(f"… (stopped after {MAX_MATCHES} matches; narrow the search)")
            break
    if not matches:
        return f"no matches for {pattern!r}", False
    return "\n".join(matches), False


def _files(workspace: Workspace, base: Path) -> list[Path]:
    if base.is_file():
        return [base]
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = Path(dirpath) / name
            if path.is_symlink() and not workspace.contains(Path(os.path.realpath(path))):
                continue
            found.append(path)
    return found


def _scan(workspace: Workspace, file: Path, regex: re.Pattern[str], out: list[str]) -> bool:
    """Append the matches of one file; True when the match limit is reached."""
    try:
        if file.stat().st_size > MAX_FILE_BYTES:
            return False
        data = file.read_bytes()
    except OSError:
        return False
    if b"\x00" in data[:8192]:
        return False
    shown = workspace.display(file) if workspace.contains(file) else file.name
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if regex.search(line):
            text = line if len(line) <= MAX_LINE else line[:MAX_LINE] + "…"
            out.append(f"{shown}:{number}: {text}")
            if len(out) >= MAX_MATCHES:
                return True
    return False
