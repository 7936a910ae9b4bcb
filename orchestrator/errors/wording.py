"""The one wording of an error, for every face: the command line, the web page, MCP.

Theory of operation. `word(exc)` turns any exception into a `Wording`: its code, its message,
the lines that go with it (a graph's problems, why an answer was refused) and its hint. An
`OrchestratorError` is worded from its own fields; anything else is a bug, worded as one (its
type and first line, never a traceback: that goes to the log of the process that caught it).
`Wording.text()` is what every face shows: the command line prefixes `error: `, the web page
escapes it into HTML, the MCP server returns it as the tool's error; `to_dict()` is the same
for JSON.

A message can hold what a thread holds (a reply, a file name, a provider's words), so the
wording is made harmless here, once, whatever face shows it: every control character but
newline and tab becomes a visible escape (ESC is `^[`, a C1 character `\\u009b`), so are the
bidirectional overrides that reorder what a reader sees, and each part is cut to a size a
person reads (`MAX_MESSAGE` characters, `MAX_LINES` lines, `MAX_DETAILS` details), saying how
much was left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .family import OrchestratorError

MAX_MESSAGE = 2000  # characters of a message, a hint or a detail
MAX_LINES = 40  # lines of a message
MAX_DETAILS = 50  # problems or reasons listed

# C0 controls but tab and newline, DEL, the C1 controls, and the bidirectional embeddings,
# overrides and isolates (a reader would see text in another order than it is).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return "^" + chr(code + 64)  # caret notation, as the terminal guard shows it
    if code == 0x7F:
        return "^?"
    return f"\\u{code:04x}"


def clean(text: str, limit: int = MAX_MESSAGE, lines: int = MAX_LINES) -> str:
    """`text` made harmless to show: controls visible, cut to `limit` characters and `lines`
    lines, saying how much was left out."""
    text = _UNSAFE.sub(_visible, text.replace("\r\n", "\n"))
    kept = text.split("\n")
    note = ""
    if len(kept) > lines:
        note = f" ... ({len(kept) - lines} more lines)"
        text = "\n".join(kept[:lines])
    if len(text) > limit:
        note = f" ... ({len(text) - limit} more characters)" + note
        text = text[:limit]
    return text + note


@dataclass(frozen=True)
class Wording:
    """An error as every face shows it."""

    code: str
    message: str
    hint: str = ""
    details: tuple[str, ...] = ()
    usage_error: bool = False  # the request was wrong (exit 2), not the world it met (exit 1)
    expected: bool = True  # False: a bug, whose traceback belongs in the log

    def text(self) -> str:
        """The message, its details indented below it, then the hint."""
        lines = [self.message]
        lines += [f"  {line}" for detail in self.details for line in detail.split("\n")]
        if self.hint:
            lines.append(f"hint: {self.hint}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "error": self.code,
            "message": self.message,
            "hint": self.hint,
            "details": list(self.details),
        }


def word(exc: BaseException) -> Wording:
    """The wording of any exception: an `OrchestratorError` from its fields, anything else as
    the bug it is."""
    if isinstance(exc, OrchestratorError):
        details = exc.details
        more = len(details) - MAX_DETAILS
        shown = [clean(d, lines=8) for d in details[:MAX_DETAILS]]
        if more > 0:
            shown.append(f"... and {more} more")
        return Wording(
            code=exc.code,
            message=clean(str(exc.message)) or type(exc).__name__,
            hint=clean(str(exc.hint), lines=8),
            details=tuple(shown),
            usage_error=bool(exc.usage_error),
        )
    first = str(exc).split("\n", 1)[0]
    return Wording(
        code="internal",
        message=clean(
            f"orchestrator stopped on an unexpected error: {type(exc).__name__}: {first}"
        ),
        hint="this is a bug: please report it with what you ran (the details are in the log)",
        expected=False,
    )
