"""A walk over every schema inside a JSON Schema (a contract or `inputs:`).

The walk follows only the keywords whose values are schemas, so property names, `enum` values
and examples are never mistaken for keywords.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

SchemaPath = tuple[str | int, ...]

# Keywords whose value is one schema, a mapping of names to schemas, or a list of schemas.
ONE_SCHEMA = frozenset(
    {
        "additionalProperties",
        "contains",
        "contentSchema",
        "else",
        "if",
        "items",  # a list of schemas in drafts before 2020-12: walked as one
        "not",
        "propertyNames",
        "then",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
SCHEMA_MAPS = frozenset(
    {"$defs", "definitions", "dependentSchemas", "patternProperties", "properties"}
)
SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})


def subschemas(schema: Any, path: SchemaPath = ()) -> Iterator[tuple[SchemaPath, dict[str, Any]]]:
    """Every schema object in `schema`, itself first, each with its path inside `schema`."""
    todo: list[tuple[SchemaPath, Any]] = [(path, schema)]
    seen: set[int] = set()  # a schema built in Python may share (or even contain) itself
    while todo:
        where, node = todo.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue  # `true` and `false` are schemas too, without keywords
        seen.add(id(node))
        yield where, node
        inner: list[tuple[SchemaPath, Any]] = []
        for key, value in node.items():
            if key in ONE_SCHEMA and isinstance(value, list):
                inner += [((*where, key, i), v) for i, v in enumerate(value)]
            elif key in ONE_SCHEMA:
                inner.append(((*where, key), value))
            elif key in SCHEMA_MAPS and isinstance(value, dict):
                inner += [((*where, key, str(k)), v) for k, v in value.items()]
            elif key in SCHEMA_LISTS and isinstance(value, list):
                inner += [((*where, key, i), v) for i, v in enumerate(value)]
        todo.extend(reversed(inner))  # depth-first, in the order they are written
