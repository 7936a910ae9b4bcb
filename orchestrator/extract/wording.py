"""How error sentences show values, field paths, types and near-miss names.

Every stage words its errors with these helpers, so a value is quoted, clipped and typed the same
way wherever it appears, and a sentence never grows past a screen line because of one long value.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from ..definition.contract import STATUS_KEY

SHOW_LIMIT = 60  # characters of a value quoted in an error message

_TYPE_NAMES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    type(None): "null",
    list: "array",
    dict: "object",
}
_IDENT = re.compile(r"^[A-Za-z_$][\w$-]*$")


def json_type(value: Any) -> str:
    """The JSON Schema type name of a parsed value (`integer`, `object`, ...)."""
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def an(noun: str) -> str:
    """`noun` with its indefinite article."""
    return f"an {noun}" if noun[:1] in ("a", "e", "i", "o", "u") else f"a {noun}"


def clip(text: str, limit: int = SHOW_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def code(text: str) -> str:
    """`text` as Markdown inline code, even when it holds backticks itself."""
    text = clip(text)
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def plural(n: Any, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def show(value: Any, *, quote: bool = True) -> str:
    """A value as JSON, clipped; text unquoted when `quote` is false."""
    if isinstance(value, str) and not quote:
        return clip(value)
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:  # a circular structure, an int too long to print: neither comes from
        text = f"<{json_type(value)}>"  # the parser or a checked schema; be safe anyway
    return clip(text)


def field(path: Iterable[Any]) -> str:
    """A field path as a reader writes it: `items[2].name`, `["odd key"]`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENT.match(str(part)):
            out += f".{part}" if out else str(part)
        else:
            out += f"[{json.dumps(str(part), ensure_ascii=False)}]"
    return out


def names(values: Iterable[Any]) -> str:
    """Field names for a list in a sentence, sorted, without `$status`."""
    return ", ".join(sorted(str(v) for v in values if v != STATUS_KEY)) or "(none)"


def expected_types(types: Any) -> str:
    return " or ".join(types) if isinstance(types, list) else str(types)


def suggest(word: str, choices: Sequence[str]) -> str:
    """did-you-mean that also catches case and whitespace slips (`Ready` for `ready`)."""
    folded = word.strip().casefold()
    same = [c for c in choices if c.casefold() == folded]
    if len(same) == 1:
        return f"did you mean '{same[0]}'?"
    by_fold = {c.casefold(): c for c in choices}
    close = difflib.get_close_matches(folded, list(by_fold), n=1, cutoff=0.6)
    return f"did you mean '{by_fold[close[0]]}'?" if close else ""
