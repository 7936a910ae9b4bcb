"""A thread's title and labels, and the filter `threads list` applies (docs/threads.md).

A title says what a thread was for, in one line: the one given (`run --title`), else the first
line of the task (or of the first text input), cut to `TITLE_LENGTH` characters. Labels are
`key=value` pairs; a key is a short name (`KEY`), so it can be written on a command line and
looked up in a store's JSON without quoting. Both are written in the thread's `ThreadStarted`
event, so every executor (a local store, Temporal) has them.

Titles come from people and from tasks that may be hostile (an issue's text): control
characters and the bidirectional overrides are dropped and the text is made one line, so a
title can neither repaint a terminal nor reorder what a reader sees, and a 60,000-character task
gives an 80-character title. Faces still escape what they show (HTML, JSON).

`ThreadQuery` is the filter of a list (state, graph, labels, text search). Stores that can
search in SQL do (store/search.py); `matches` is the same test on a row, for the in-memory store
and Temporal, which list every row and filter it here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import InputError
from .events import ThreadStarted

TITLE_LENGTH = 80  # characters: a line of a list, with the id and state beside it
LABEL_VALUE_LENGTH = 200
MAX_LABELS = 20
KEY = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,62}")
# Control characters (below 0x20, and 0x7f to 0x9f), the zero-width and bidirectional marks,
# embeddings, overrides and isolates: none belongs in a one-line title, and some make a reader
# see another text.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_WORD = re.compile(r"[^\W_]+")
_ESCAPE = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|.)?")


class LabelError(InputError):
    """A label that cannot be kept: the message says which and why (a usage error, exit 2)."""


def one_line(text: str, limit: int = TITLE_LENGTH) -> str:
    """`text` without terminal escapes or unsafe characters, its whitespace made single
    spaces, cut to `limit` characters (with `…` where it was cut)."""
    text = _UNSAFE.sub(" ", _ESCAPE.sub("", text[: limit * 8]))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def default_title(inputs: Mapping[str, Any]) -> str:
    """The first line of the `task` input, else of the first text input, cut."""
    values = [inputs["task"]] if isinstance(inputs.get("task"), str) else []
    values += [v for v in inputs.values() if isinstance(v, str)]
    for value in values:
        for line in value.splitlines():
            if line.strip():
                return one_line(line)
    return ""


def make_title(title: str | None, inputs: Mapping[str, Any]) -> str:
    """The title a thread is started with: `title` made safe, else the default."""
    return one_line(title) if title and title.strip() else default_title(inputs)


def titled(
    started: ThreadStarted, title: str | None, labels: Mapping[str, Any] | None
) -> ThreadStarted:
    """`started` with its title (`make_title`) and its labels, checked."""
    return replace(started, title=make_title(title, started.inputs), labels=check_labels(labels))


def check_labels(labels: Mapping[str, Any] | None) -> dict[str, str]:
    """Labels as kept: keys checked, values made one line. LabelError names a bad one."""
    out: dict[str, str] = {}
    for key, value in (labels or {}).items():
        if not isinstance(key, str) or not KEY.fullmatch(key):
            raise LabelError(
                f"label key {json.dumps(str(key)[:70])} is not a name: a key starts with a "
                "letter and holds letters, digits, '_' and '-' (at most 63), as in team=auth"
            )
        if not isinstance(value, (str, int, float, bool)):
            raise LabelError(f"label {key}: its value must be text, not {type(value).__name__}")
        out[key] = one_line(str(value), LABEL_VALUE_LENGTH)
    if len(out) > MAX_LABELS:
        raise LabelError(f"{len(out)} labels: a thread has at most {MAX_LABELS}")
    return out


def parse_labels(items: Iterable[str]) -> dict[str, str]:
    """`key=value` texts (`--label`, repeatable) as labels; LabelError for a bad one."""
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise LabelError(
                f"label {json.dumps(item[:70])} has no '=': write key=value, as in team=auth"
            )
        pairs[key.strip()] = value
    return check_labels(pairs)


def inputs_text(inputs: Mapping[str, Any], limit: int = 20_000) -> str:
    """The inputs' text values, one after another: what a search looks through beside the
    title (the first `limit` characters)."""
    parts = [
        v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in inputs.values()
    ]
    return "\n".join(parts)[:limit]


def search_words(text: str) -> list[str]:
    """The words of a search (each must be found): its runs of letters and digits, at most 10
    of at most 100 characters. Punctuation (`"`, `*`, `(`, `-`) only separates words, as in a
    full-text index, so both ways of searching (store/search.py) find the same threads and no
    character is ever query syntax."""
    return [w[:100] for w in _WORD.findall(text[:2000])][:10]


@dataclass(frozen=True)
class ThreadQuery:
    """Which threads a list shows: every condition given must hold."""

    state: str | None = None
    graph: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    search: str | None = None

    def narrowed(self, state: str | None) -> ThreadQuery:
        """This query, for threads in `state` too when one is given."""
        return replace(self, state=state) if state else self

    @property
    def words(self) -> list[str]:
        return search_words(self.search or "")

    def matches(self, row: Any, text: str = "") -> bool:
        """The query on a row with `state`, `graph`, `title` and `labels` (and the text of the
        thread's inputs, for the search): each word found in the title or the text, ignoring
        case."""
        if self.state and str(row.state) != self.state:
            return False
        if self.graph and row.graph != self.graph:
            return False
        if any(row.labels.get(k) != v for k, v in self.labels.items()):
            return False
        found = (row.title + "\n" + text).casefold()
        return all(w.casefold() in found for w in self.words)
