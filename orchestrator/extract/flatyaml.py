"""Stage 2's fast path: a frontmatter of flat `key: plain value` lines, read without libyaml.

Most replies' frontmatter is a few lines such as `$status: draft` or `score: 3`: a flat mapping
of plain one-line scalars. For those, building the values from libyaml's events (a loader, and a
Python event object per key, value, mapping and document) was most of extraction's cost per
step. `flat_mapping` reads such a block with one regular expression per line and gives exactly
what the event builder in parse.py gives (the same YAML 1.2 value resolution, `_resolve_plain`,
keys kept as written), or None for anything else, which then goes to libyaml as before.

What is accepted is deliberately narrow, so that the YAML meaning is plain to see and cannot
differ from libyaml's: every line is `key: value` at column 0; the key starts with a letter,
`_` or `$` and holds only ASCII letters, digits and `_ $ . -` (at most 128 characters); one or
more spaces follow the colon; the value starts with an ASCII letter or digit (or `-` then a
digit), holds only ASCII letters, digits, spaces and `_ . , ; / ( ) + ' -`, and
does not end with a space. So no comment (`#`), no `: ` inside a value, no quote, flow
collection, block scalar, anchor, alias or tag, no indentation, no tab, no blank line. A key
written twice goes to libyaml too, which words the error. `tests/test_extract_flat.py` compares
both paths on generated blocks.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_LINE = re.compile(
    r"([A-Za-z_$][A-Za-z0-9_$.\-]{0,127}):[ ]+"
    r"(-?[A-Za-z0-9](?:[A-Za-z0-9 _.,;/()+'\-]*[A-Za-z0-9_.,;/()+'\-])?)"
)


def flat_mapping(text: str, resolve: Callable[[str], Any]) -> dict[str, Any] | None:
    """The block's mapping when every line is a flat `key: plain value` (see above), else None.

    `resolve` turns a plain scalar's text into its YAML 1.2 value (parse.py's `_resolve_plain`).
    """
    if not text:
        return None
    data: dict[str, Any] = {}
    fullmatch = _LINE.fullmatch
    for line in text.split("\n"):
        m = fullmatch(line)
        if m is None:
            return None
        key, value = m.groups()
        if key in data:
            return None  # a duplicate: libyaml's path words the error
        data[key] = resolve(value)
    return data
