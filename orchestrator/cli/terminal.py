"""Text bound for a terminal, with its control characters made harmless (docs/security.md).

Theory of operation. A reply, a tool's output, a file, an input or anything else in a thread
can hold terminal control sequences: `ESC ] 0 ; title BEL` retitles the window, `ESC [ 2 J`
clears the screen, `ESC ] 8 ; ; URL ST` draws a hyperlink that says one thing and opens another,
`ESC [ 8 m` hides the text after it, and the 8-bit CSI (U+009B) does the same in one character.
Printed raw, they let a model rewrite what a person sees.

The command line prints almost everything through `click.echo`, so there is one choke point:
`guard_streams()`, called when the command starts, replaces `sys.stdout` and `sys.stderr`, when
they are terminals, by a `SafeStream` that neutralises every control character written to it
(C0 but newline and tab, DEL, C1 U+0080-U+009F): each is shown as a visible escape (`^[` for
ESC, `^G` for BEL, `^?` for DEL, `\\u009b` for a C1 character), so the sequence can be read but
does nothing. A line break written as CR LF is shown as a line break. Output that is not a
terminal (a pipe, a file, `--json` into `jq`) is left byte for byte as it was.

The only escapes the command line emits itself are its styling: the live view (rich) and the
bold names of `roles`. Those write to the raw stream (`raw()`), and neutralise the data they
put in it with `neutralise()` first; rich's `Text` never reads markup, so `[link=...]` in a
reply is printed as those characters.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from typing import Any, TextIO, cast

# C0 controls but tab (09) and newline (0a), DEL, and the C1 controls.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return "^" + chr(code + 64)  # caret notation: ESC is ^[, BEL ^G, CR ^M
    if code == 0x7F:
        return "^?"
    return f"\\u{code:04x}"


def neutralise(text: str) -> str:
    """`text` with every control character but newline and tab shown as a visible escape."""
    if not CONTROL.search(text):
        return text
    return CONTROL.sub(_visible, text.replace("\r\n", "\n"))


class SafeStream:
    """A text stream that neutralises what is written to it, and is otherwise its stream."""

    def __init__(self, stream: TextIO):
        self.raw = stream

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # as a text stream does (click probes with bytes)
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self.raw.write(neutralise(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def guard_streams() -> None:
    """Wrap stdout and stderr in `SafeStream` when they are terminals (once)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, SafeStream) and _is_terminal(stream):
            setattr(sys, name, cast(TextIO, SafeStream(stream)))


def raw(stream: Any) -> TextIO:
    """The stream under a `SafeStream`: for output whose data was neutralised already."""
    return cast(TextIO, stream.raw if isinstance(stream, SafeStream) else stream)
