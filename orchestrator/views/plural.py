"""Counts in words: `1 step`, `2 steps`. One helper for every face (CLI, story, web page).

It imports nothing of the project, so the CLI, `story.py` and the web page can all use it
without a cycle. English only: the singular for exactly one, otherwise the plural (`0 steps`);
the plural adds `s` unless the caller names it (`plural(n, "reply", "replies")`). Numbers are
written with thousands separators (`1,234 tokens`), as the faces write them.
"""

from __future__ import annotations


def noun(n: int, one: str, many: str | None = None) -> str:
    """The word alone, for tables that align the number themselves."""
    return one if n == 1 else (many if many is not None else one + "s")


def plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {noun(n, one, many)}"
