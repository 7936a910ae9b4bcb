"""Anthropic's text editor client tool (`text_editor_20250728`, `str_replace_based_edit_tool`).

The model sends commands; this module carries them out on the workspace:

- `view`: a file with line numbers (optionally `view_range: [start, end]`, `end` -1 = to the end),
  or a directory listing two levels deep without hidden entries;
- `create`: write `file_text` to `path` (parent directories are made; an existing file is
  overwritten, and the result says so);
- `str_replace`: replace `old_str` by `new_str`; `old_str` must occur exactly once, and the error
  for zero or several matches says which;
- `insert`: insert `insert_text` (older tool versions: `new_str`) after line `insert_line`
  (0 = at the top).

A role with `read` but not `edit` may only `view`; other commands return an error result
("this role may only read files"). Errors never raise: they come back as `(message, True)` so the
model can correct itself. Paths are named through `Workspace.locate` (inside the workspace, not
`.git`, not the orchestrator's protected paths) and every file and directory is reached through
the workspace's descriptor walk, which follows no symlink and refuses FIFOs, devices and
hard-linked files (`workspace.py`). Credentials are redacted (`redact`) before output is cut.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..views.plural import plural
from .workspace import Entry, PathRefused, Target, Workspace, is_dir

TOOL_TYPE = "text_editor_20250728"
TOOL_NAME = "str_replace_based_edit_tool"
MAX_VIEW_CHARS = 30_000
MAX_LISTING = 500
SNIPPET = 4

Result = tuple[str, bool]


class ToolFailure(Exception):
    """A command that cannot be carried out; its message goes back to the model as an error."""


def definition() -> dict[str, Any]:
    return {"type": TOOL_TYPE, "name": TOOL_NAME}


class TextEditor:
    def __init__(
        self,
        workspace: Workspace,
        can_edit: bool,
        redact: Callable[[str], str] = lambda text: text,
    ):
        self.workspace = workspace
        self.can_edit = can_edit
        self.redact = redact

    def run(self, args: dict[str, Any]) -> Result:
        command = args.get("command")
        try:
            if command == "view":
                return self._view(args), False
            if command in ("create", "str_replace", "insert", "undo_edit"):
                if not self.can_edit:
                    return (
                        "this role may only read files (only the `view` command is allowed)",
                        True,
                    )
                if command == "create":
                    return self._create(args), False
                if command == "str_replace":
                    return self._str_replace(args), False
                if command == "insert":
                    return self._insert(args), False
                return "undo_edit is not supported; edit the file again to revert a change", True
            return (
                f"unknown command {command!r}; use one of: view, create, str_replace, insert",
                True,
            )
        except (PathRefused, ToolFailure) as exc:
            return str(exc), True
        except OSError as exc:
            return f"{args.get('path')}: {exc.strerror or exc}", True

    # ------------------------------------------------------------------ commands

    def _path(self, args: dict[str, Any]) -> Target:
        path = args.get("path")
        if not isinstance(path, str):
            raise ToolFailure("`path` is required")
        return self.workspace.locate(path)

    def _view(self, args: dict[str, Any]) -> str:
        path = self._path(args)
        found = self.workspace.lstat(path)
        if is_dir(found):
            return self._listing(path)
        if found is None:
            raise ToolFailure(f"{path.shown}: no such file or directory")
        text = self._read(path)
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        start, end = 1, len(lines)
        view_range = args.get("view_range")
        if view_range is not None:
            if (
                not isinstance(view_range, list)
                or len(view_range) != 2
                or not all(isinstance(n, int) and not isinstance(n, bool) for n in view_range)
            ):
                raise ToolFailure("`view_range` must be two integers: [start, end]")
            start, end = view_range
            if end == -1:
                end = len(lines)
            if start < 1 or start > max(len(lines), 1) or end < start or end > len(lines):
                raise ToolFailure(
                    f"invalid `view_range` {view_range}: the file has {plural(len(lines), 'line')}; "
                    "use 1 <= start <= end <= lines, or end = -1"
                )
        numbered = "\n".join(f"{n:6}\t{lines[n - 1]}" for n in range(start, end + 1))
        return _cap(self.redact(numbered), MAX_VIEW_CHARS, "use view_range to see the rest")

    def _listing(self, root: Target) -> str:
        """Two levels, hidden entries skipped; symlinks shown (`@`), never followed, and the
        orchestrator's protected folders shown but not opened."""
        entries: list[str] = []
        for child in self.workspace.entries(root):
            if child.target.name.startswith("."):
                continue
            entries.append(_entry(child))
            if child.is_dir and not self.workspace.is_protected(child.target):
                try:
                    grand = self.workspace.entries(child.target)
                except (OSError, PathRefused):  # unreadable, or swapped for a symlink meanwhile
                    continue
                entries += [_entry(g) for g in grand if not g.target.name.startswith(".")]
            if len(entries) >= MAX_LISTING:
                entries.append(f"… (listing stopped after {MAX_LISTING} entries)")
                break
        if not entries:
            return f"{root.shown}: empty directory"
        head = f"Files and directories in {root.shown} (two levels, hidden entries skipped):"
        return head + "\n" + "\n".join(entries)

    def _create(self, args: dict[str, Any]) -> str:
        path = self._path(args)
        text = args.get("file_text")
        if not isinstance(text, str):
            raise ToolFailure("`file_text` is required for create")
        if is_dir(self.workspace.lstat(path)):
            raise ToolFailure(f"{path.shown} is a directory")
        existed = self.workspace.write(path, text, make_parents=True)
        verb = "overwritten" if existed else "created"
        return f"File {verb}: {path.shown}"

    def _str_replace(self, args: dict[str, Any]) -> str:
        path = self._existing_file(args)
        old = args.get("old_str")
        new = args.get("new_str", "")
        if not isinstance(old, str) or old == "":
            raise ToolFailure("`old_str` is required for str_replace and may not be empty")
        if not isinstance(new, str):
            raise ToolFailure("`new_str` must be a string")
        text = self._read(path)
        count = text.count(old)
        shown = path.shown
        if count == 0:
            raise ToolFailure(
                f"No replacement was performed: `old_str` does not occur in {shown}. "
                "It must match the file exactly, whitespace included."
            )
        if count > 1:
            lines = _match_lines(text, old)
            raise ToolFailure(
                f"No replacement was performed: `old_str` occurs {count} times in {shown} "
                f"(starting on lines {', '.join(map(str, lines))}). Include more context so it "
                "matches exactly once."
            )
        at = text.index(old)
        updated = text[:at] + new + text[at + len(old) :]
        self.workspace.write(path, updated)
        first = text.count("\n", 0, at) + 1
        return f"The file {shown} has been edited.\n" + self.redact(
            _snippet(updated, first, new.count("\n") + 1)
        )

    def _insert(self, args: dict[str, Any]) -> str:
        path = self._existing_file(args)
        line = args.get("insert_line")
        new = args.get("insert_text", args.get("new_str"))
        if not isinstance(line, int) or isinstance(line, bool):
            raise ToolFailure("`insert_line` (an integer, 0 = top of the file) is required")
        if not isinstance(new, str):
            raise ToolFailure("`insert_text` is required for insert")
        text = self._read(path)
        lines = text.split("\n")
        trailing = text.endswith("\n")
        if trailing:
            lines.pop()
        if line < 0 or line > len(lines):
            raise ToolFailure(
                f"invalid `insert_line` {line}: it must be between 0 and {len(lines)}"
            )
        added = new.removesuffix("\n").split("\n")
        lines[line:line] = added
        shown = path.shown
        self.workspace.write(path, "\n".join(lines) + ("\n" if trailing or not text else ""))
        updated = "\n".join(lines)
        return f"The file {shown} has been edited.\n" + self.redact(
            _snippet(updated, line + 1, len(added))
        )

    def _existing_file(self, args: dict[str, Any]) -> Target:
        path = self._path(args)
        if self.workspace.lstat(path) is None:
            raise ToolFailure(f"{path.shown}: no such file")
        return path

    def _read(self, path: Target) -> str:
        data = self.workspace.read(path)
        if b"\x00" in data[:8192]:
            raise ToolFailure(f"{path.shown}: binary file; it cannot be shown or edited as text")
        return data.decode("utf-8", errors="replace")


def _entry(entry: Entry) -> str:
    if entry.is_symlink:  # not followed: its target may lie outside the workspace
        return entry.target.shown + "@"
    return entry.target.shown + ("/" if entry.is_dir else "")


def _match_lines(text: str, needle: str) -> list[int]:
    found: list[int] = []
    at = text.find(needle)
    while at != -1 and len(found) < 10:
        found.append(text.count("\n", 0, at) + 1)
        at = text.find(needle, at + 1)
    return found


def _snippet(text: str, first: int, count: int) -> str:
    lines = text.split("\n")
    lo, hi = max(first - SNIPPET, 1), min(first + count - 1 + SNIPPET, len(lines))
    return "\n".join(f"{n:6}\t{lines[n - 1]}" for n in range(lo, hi + 1))


def _cap(text: str, limit: int, hint: str) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… [output cut: {len(text) - limit} more characters; {hint}]"
