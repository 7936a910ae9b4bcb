"""Stage 1: normalize a reply and find its frontmatter block (the package docstring has the rules).

Models are messy, so this stage is tolerant about *where* the block is: after blank lines, a short
preamble or a fence that wraps the whole reply, or failing that a fenced YAML block holding the
status. It only splits text; parsing the block is stage 2 (`parse`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .output import ExtractError
from .wording import code

# A preamble longer than this is an essay; a `---` after it is a Markdown rule, not frontmatter.
MAX_PREAMBLE_LINES = 5
MAX_PREAMBLE_CHARS = 500

_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\s]*)[^`]*$")
_WRAPPER_INFOS = frozenset({"", "markdown", "md", "yaml", "yml", "text", "txt"})
_YAML_INFOS = frozenset({"yaml", "yml"})
# A line that looks like the status field: a sign that a `---` line was forgotten or misplaced.
STATUS_LINE = re.compile(r"^[\"']?\$?status[\"']?[ \t]*:")
_DOLLAR_STATUS_LINE = re.compile(r"^[\"']?\$status[\"']?[ \t]*:")


@dataclass(frozen=True)
class Block:
    """A located frontmatter block: its YAML text (without delimiters) and the Markdown body."""

    yaml: str
    body: str


def normalize(text: str) -> list[str]:
    """The reply's lines, without a BOM, with CRLF and lone CR line ends read as `\\n`."""
    text = text.removeprefix("\ufeff")
    if "\r" in text:  # YAML counts a lone CR as a line break too; keep line numbers in step
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.split("\n")


def _is_opener(line: str) -> bool:
    return line.strip() == "---"


def _is_closer(line: str) -> bool:
    # Column 0 only: an indented `---` belongs to a block scalar's text.
    return line.rstrip() in ("---", "...")


def _fence(line: str) -> tuple[str, str] | None:
    """(fence marker, lower-cased info string) when `line` opens or closes a code fence."""
    m = _FENCE.match(line)
    if m is None:
        return None
    return m["fence"], m["info"].lower()


def _closes(line: str, marker: str) -> bool:
    """Whether `line` is a bare fence that closes a fence opened with `marker`."""
    f = _fence(line)
    return f is not None and f[1] == "" and f[0][0] == marker[0] and len(f[0]) >= len(marker)


def next_nonblank(lines: Sequence[str], i: int) -> int:
    """The index of the first non-blank line at or after `i` (`len(lines)` when none)."""
    while i < len(lines) and not lines[i].strip():
        i += 1
    return i


def body(lines: Sequence[str]) -> str:
    """Body text from its lines: without leading blank lines and trailing whitespace."""
    start = next_nonblank(lines, 0)
    return "\n".join(lines[start:]).rstrip()


def _strip_wrapper_close(lines: list[str], marker: str) -> list[str]:
    """The body lines without the closing line of a fence that wraps the whole reply.

    The body may hold fenced code of its own. If the last non-blank line closes the wrapper,
    that is it; otherwise, with an odd number of fence lines, the last bare one is the closer
    and any text after it (a model's sign-off) stays in the body.
    """
    last = len(lines) - 1
    while last >= 0 and not lines[last].strip():
        last -= 1
    if last >= 0 and _closes(lines[last], marker):
        return lines[:last]
    fences = [i for i, line in enumerate(lines) if (f := _fence(line)) and f[0][0] == marker[0]]
    if len(fences) % 2 == 1:
        bare = [i for i in fences if _closes(lines[i], marker)]
        if bare:
            return lines[: bare[-1]] + lines[bare[-1] + 1 :]
    return lines


def _find_dash_block(lines: list[str]) -> Block | None:
    """The `---` block at the start of the reply (after blank lines, a preamble, a fence)."""
    i = next_nonblank(lines, 0)
    preamble_lines = preamble_chars = 0
    status_line: int | None = None  # a preamble line that looks like a field: `---` forgotten
    wrapper: str | None = None
    while i < len(lines):
        line = lines[i]
        if _is_opener(line):
            break
        if status_line is None and STATUS_LINE.match(line):
            status_line = i
        fence = _fence(line)
        if fence is not None:
            after = next_nonblank(lines, i + 1)
            wraps = wrapper is None and fence[1] in _WRAPPER_INFOS
            if wraps and after < len(lines) and _is_opener(lines[after]):
                wrapper = fence[0]
                i = after
                break
            return None  # fenced code before any `---`: not a frontmatter reply
        if line.strip():
            preamble_lines += 1
            preamble_chars += len(line)
            if preamble_lines > MAX_PREAMBLE_LINES or preamble_chars > MAX_PREAMBLE_CHARS:
                return None
        i += 1
    else:
        return None
    opener = i
    for j in range(opener + 1, len(lines)):
        line = lines[j]
        if _is_closer(line) or (wrapper is not None and _closes(line, wrapper)):
            rest = lines[j + 1 :]
            if wrapper is not None and not _closes(line, wrapper):
                rest = _strip_wrapper_close(rest, wrapper)
            return Block("\n".join(lines[opener + 1 : j]), body(rest))
    if status_line is not None:
        raise ExtractError(
            [
                f"the frontmatter must start with a line `---`: line {status_line + 1} "
                f"({code(lines[status_line].strip())}) comes before the first `---` line "
                f"(line {opener + 1}); put a `---` line before the first field"
            ]
        )
    raise ExtractError(
        [
            f"the frontmatter block opened by the `---` on line {opener + 1} is never closed: "
            "end it with a line holding only `---`, before the Markdown body"
        ]
    )


def _find_fenced_yaml(lines: list[str]) -> Block | None:
    """A fenced YAML block holding the status, anywhere in the reply (when no `---` block)."""
    found: list[tuple[int, int]] = []
    i = 0
    while i < len(lines):
        fence = _fence(lines[i])
        if fence is None:
            i += 1
            continue
        marker, info = fence
        end = next((j for j in range(i + 1, len(lines)) if _closes(lines[j], marker)), None)
        content = lines[i + 1 : end if end is not None else len(lines)]
        probe = _DOLLAR_STATUS_LINE if info == "" else STATUS_LINE
        holds_status = (info in _YAML_INFOS or info == "") and any(probe.match(c) for c in content)
        if holds_status:
            if end is None:
                raise ExtractError(
                    [
                        f"the ```{info} block opened on line {i + 1} is never closed: end it "
                        "with a line holding only ```"
                    ]
                )
            found.append((i, end))
        if end is None:
            break
        i = end + 1
    if not found:
        return None
    if len(found) > 1:
        where = ", ".join(str(start + 1) for start, _ in found)
        raise ExtractError(
            [
                f"the reply holds {len(found)} fenced YAML blocks with a status (opened on lines "
                f"{where}); write exactly one frontmatter block, at the start, between `---` lines"
            ]
        )
    start, end = found[0]
    content = lines[start + 1 : end]
    # A model may put the `---` delimiters inside the fence as well.
    while content and not content[0].strip():
        content = content[1:]
    if content and _is_opener(content[0]):
        content = content[1:]
    while content and not content[-1].strip():
        content = content[:-1]
    if content and _is_closer(content[-1]):
        content = content[:-1]
    # The text around the block is the body, joined by one blank line where the block was.
    around = [part for part in (body(lines[:start]), body(lines[end + 1 :])) if part]
    return Block("\n".join(content), "\n\n".join(around))


def locate(lines: list[str]) -> Block | None:
    """The reply's frontmatter block, or None when it has none (the whole text is the body).

    Raises `ExtractError` for a block that is there but broken: never closed, or ambiguous.
    """
    block = _find_dash_block(lines)
    return block if block is not None else _find_fenced_yaml(lines)


def late_block_line(lines: list[str]) -> int | None:
    """Line (1-based) of a `---` block holding a status that sits too far down to count."""
    for i, line in enumerate(lines):
        if _is_opener(line):
            for j in range(i + 1, min(len(lines), i + 50)):
                if _is_closer(lines[j]):
                    break
                if STATUS_LINE.match(lines[j]):
                    return i + 1
    return None
