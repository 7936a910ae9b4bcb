"""What a schema's text shows beyond being valid JSON Schema: the mistakes that the metaschema
lets through and that would only show, if at all, when a reply is validated.

- `external-ref`: a `$ref` to anything but this schema (a URL, a file). Schemas are never
  fetched, so the reference could not be resolved.
- `misspelt-schema-keyword` (an error): a key that is no JSON Schema 2020-12 keyword but is
  within a small edit distance of one (`requird:`, `Required:`, `itmes:`). JSON Schema ignores
  unknown keywords, so the constraint silently does not apply: the contract loosens.
- `unknown-schema-keyword` (a warning): any other unknown key (`mustHave:`), or one with a known
  reason (`nullable:`, `example:`): ignored too, but more likely a note than a typo. Keys
  starting with `x-` are extensions. A schema whose `$schema` names another draft is not checked.

The findings are paths inside the schema; schemas.py places them in the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

from ..definition.problems import did_you_mean
from .schema_walk import INSTEAD, KEYWORDS, SchemaPath, subschemas

REF_KEYWORDS = ("$ref", "$dynamicRef")
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True)
class Finding:
    path: SchemaPath  # inside the schema
    key: bool  # point at the key at `path` rather than at its value
    code: str
    message: str
    hint: str = ""


def findings(schema: Any) -> Iterator[Finding]:
    """Every finding in one schema (a role's `frontmatter` or the graph's `inputs`)."""
    nodes = list(subschemas(schema))
    ids = {_base(node["$id"]) for _, node in nodes if isinstance(node.get("$id"), str)}
    root = (
        _base(schema["$id"])
        if isinstance(schema, dict) and isinstance(schema.get("$id"), str)
        else ""
    )
    keywords_known = not isinstance(schema, dict) or schema.get("$schema", DRAFT_2020_12) in (
        DRAFT_2020_12,
        DRAFT_2020_12 + "#",
    )
    for path, node in nodes:
        if keywords_known and not KEYWORDS.issuperset(node):  # (most schemas: a quick no)
            yield from _unknown_keywords(path, node)
        for keyword in REF_KEYWORDS:
            ref = node.get(keyword)
            if isinstance(ref, str) and _external(_base(ref), root, ids):
                yield Finding(
                    (*path, keyword),
                    False,
                    "external-ref",
                    f"`{keyword}: {ref}` points outside this schema, and schemas are never fetched",
                    "copy the schema under `$defs:` and refer to it as '#/$defs/NAME'",
                )


def _unknown_keywords(path: SchemaPath, node: dict[str, Any]) -> Iterator[Finding]:
    for key in node:
        if key in KEYWORDS or str(key).startswith("x-"):
            continue
        meant = None if key in INSTEAD else misspelt_keyword(str(key))
        if meant is not None:
            yield Finding(
                (*path, key),
                True,
                "misspelt-schema-keyword",
                f"'{key}' is not a JSON Schema keyword, so it is ignored and the contract does "
                "not say what it seems to",
                f"did you mean '{meant}'?",
            )
            continue
        yield Finding(
            (*path, key),
            True,
            "unknown-schema-keyword",
            f"'{key}' is not a JSON Schema keyword, so it is ignored",
            INSTEAD.get(key)
            or did_you_mean(key, KEYWORDS)
            or "for a note of your own, use a key starting with `x-`",
        )


def misspelt_keyword(key: str) -> str | None:
    """The keyword `key` is a typo of: one edit away (two for keys of six letters or more),
    ignoring case; None when no keyword or several are that close."""
    if len(key) < 4:
        return None  # `if`, `not`, `$id`: short words are too close to too many others
    limit = 1 if len(key) < 6 else 2
    close = {k for k in KEYWORDS if edit_distance(key.lower(), k.lower()) <= limit}
    best = sorted(close, key=lambda k: (edit_distance(key.lower(), k.lower()), k))
    if not best:
        return None
    if len(best) > 1 and edit_distance(key.lower(), best[0].lower()) == edit_distance(
        key.lower(), best[1].lower()
    ):
        return None  # as close to two keywords: no way to tell which was meant
    return best[0]


def edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions, swaps."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i]
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            value = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                value = min(value, prev2[j - 2] + 1)
            row.append(value)
        prev2, prev = prev, row
    return prev[-1]


def _external(base: str, root: str, ids: set[str]) -> bool:
    """Does a reference (without its fragment) name something other than this schema?"""
    if not base or base in ids:
        return False
    return not root or urljoin(root, base) not in ids


def _base(uri: str) -> str:
    """A reference without its fragment: '' for one inside the same schema ('#/$defs/x')."""
    return uri.split("#", 1)[0]
