"""The JSON Schema 2020-12 vocabulary, and a walk over every schema inside a schema.

Contracts (`frontmatter:`) and `inputs:` are JSON Schema 2020-12, the draft replies are validated
with. The walk follows only the keywords whose values are schemas, so property names, `enum` values
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


# Every keyword of JSON Schema 2020-12: core, applicator, unevaluated, validation, meta-data,
# format and content vocabularies. `definitions` (the older `$defs`) is still a fine place for
# schemas that `$ref` points to.
KEYWORDS = (
    ONE_SCHEMA
    | SCHEMA_MAPS
    | SCHEMA_LISTS
    | frozenset(
        {
            # core
            "$anchor",
            "$comment",
            "$dynamicAnchor",
            "$dynamicRef",
            "$id",
            "$ref",
            "$schema",
            "$vocabulary",
            # validation
            "const",
            "dependentRequired",
            "enum",
            "exclusiveMaximum",
            "exclusiveMinimum",
            "maxContains",
            "maximum",
            "maxItems",
            "maxLength",
            "maxProperties",
            "minContains",
            "minimum",
            "minItems",
            "minLength",
            "minProperties",
            "multipleOf",
            "pattern",
            "required",
            "type",
            "uniqueItems",
            # meta-data, format, content
            "default",
            "deprecated",
            "description",
            "examples",
            "readOnly",
            "title",
            "writeOnly",
            "format",
            "contentEncoding",
            "contentMediaType",
        }
    )
)

TYPES = ("string", "number", "integer", "boolean", "array", "object", "null")
# Type names from programming languages, and the JSON Schema type each means.
TYPE_ALIASES = {
    "int": "integer",
    "long": "integer",
    "str": "string",
    "text": "string",
    "bool": "boolean",
    "float": "number",
    "double": "number",
    "decimal": "number",
    "list": "array",
    "dict": "object",
    "map": "object",
    "none": "null",
    "nil": "null",
}

# Keys people write from other drafts or other schema languages, and what 2020-12 says instead.
INSTEAD = {
    "additionalItems": "in JSON Schema 2020-12, `items` next to `prefixItems` does this",
    "dependencies": "JSON Schema 2020-12 splits it into `dependentRequired` and `dependentSchemas`",
    "$recursiveRef": "did you mean '$dynamicRef'?",
    "$recursiveAnchor": "did you mean '$dynamicAnchor'?",
    "nullable": 'JSON Schema allows null with `type: [string, "null"]`',
    "optional": "fields are optional unless listed in `required`",
    "example": "JSON Schema 2020-12 has `examples` (a list); `example` is OpenAPI's",
}


# How each keyword holds schemas: 1 one schema (or a list, in older drafts), 2 a mapping, 3 a list.
_HOLDS = {
    **{key: 1 for key in ONE_SCHEMA},
    **{key: 2 for key in SCHEMA_MAPS},
    **{key: 3 for key in SCHEMA_LISTS},
}


def subschemas(schema: Any, path: SchemaPath = ()) -> Iterator[tuple[SchemaPath, dict[str, Any]]]:
    """Every schema object in `schema`, itself first, each with its path inside `schema`.

    (`true` and `false` are schemas too, without keywords: they are not yielded.)
    """
    todo: list[tuple[SchemaPath, Any]] = [(path, schema)] if isinstance(schema, dict) else []
    seen: set[int] = set()  # a schema built in Python may share (or even contain) itself
    while todo:
        where, node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield where, node
        inner: list[tuple[SchemaPath, Any]] = []
        for key, value in node.items():
            holds = _HOLDS.get(key)
            if holds is None:
                continue
            if holds == 2:
                if isinstance(value, dict):
                    inner += [
                        ((*where, key, str(k)), v) for k, v in value.items() if isinstance(v, dict)
                    ]
            elif isinstance(value, list):
                inner += [((*where, key, i), v) for i, v in enumerate(value) if isinstance(v, dict)]
            elif holds == 1 and isinstance(value, dict):
                inner.append(((*where, key), value))
        if inner:
            todo += reversed(inner)  # depth-first, in the order they are written


def value_at(schema: Any, path: SchemaPath) -> Any:
    """The value at `path` inside `schema`, or None when there is none."""
    node = schema
    for part in path:
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if not (in_list or (isinstance(node, dict) and part in node)):
            return None
        node = node[part]
    return node
