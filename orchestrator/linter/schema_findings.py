"""What a schema's text shows beyond being valid JSON Schema: the mistakes that the metaschema
lets through and that would only show, if at all, when a reply is validated.

- `external-ref`: a `$ref` to anything but this schema (a URL, a file). Schemas are never
  fetched, so the reference could not be resolved.
- `unknown-schema-keyword`: a key that is no JSON Schema 2020-12 keyword (`requird:`). JSON
  Schema ignores unknown keywords, so the constraint silently does not apply. Keys starting
  with `x-` are extensions. A schema whose `$schema` names another draft is not checked.

The findings are paths inside the schema; schemas.py places them in the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

from ..problems import did_you_mean
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
        yield Finding(
            (*path, key),
            True,
            "unknown-schema-keyword",
            f"'{key}' is not a JSON Schema keyword, so it is ignored",
            INSTEAD.get(key)
            or did_you_mean(key, KEYWORDS)
            or "for a note of your own, use a key starting with `x-`",
        )


def _external(base: str, root: str, ids: set[str]) -> bool:
    """Does a reference (without its fragment) name something other than this schema?"""
    if not base or base in ids:
        return False
    return not root or urljoin(root, base) not in ids


def _base(uri: str) -> str:
    """A reference without its fragment: '' for one inside the same schema ('#/$defs/x')."""
    return uri.split("#", 1)[0]
