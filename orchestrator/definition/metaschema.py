"""Checking that a role's `frontmatter` (or a graph's `inputs`) is a valid JSON Schema, fast.

jsonschema's `check_schema` validates against the draft 2020-12 metaschema, whose `$dynamicRef`
resolution costs about 3 ms per role schema: most of the time `validate` spends on a graph. Almost
every schema in a graph uses a handful of keywords with plain values (`type`, `properties`,
`required`, `enum`, `oneOf`, ...), so `_surely_valid` recognises those by hand; anything else
(another keyword, `$schema`, `$ref`, `pattern`, a value it does not vouch for) goes to the full
metaschema check. The fast path only ever says "valid"; every error comes from jsonschema, so
messages and paths are the same as before. Where jsonschema itself fails (a `pattern` that re
cannot compile at all, such as a{99999999999} or thousands of nested groups, or a schema too
deep to check), that is a `SchemaProblem` too, not an exception. A property test checks that
the fast path never vouches for a schema the metaschema rejects.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from typing import Any


class SchemaProblem(Exception):
    """A schema is not a valid JSON Schema: jsonschema's message and where in the schema."""

    def __init__(self, message: str, path: tuple[Any, ...]):
        super().__init__(message)
        self.message = message
        self.path = path


SIMPLE_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})
MAX_DEPTH = 64  # deeper schemas take the full check


def check_schema(schema: Any) -> None:
    """Raise `SchemaProblem` when `schema` is not a valid JSON Schema, or not a usable one."""
    _check_numbers(schema, ())
    if isinstance(schema, dict) and "$schema" not in schema and _surely_valid(schema, 0):
        return
    # Imported here: jsonschema costs ~70 ms at start-up, and plain schemas never need it.
    from jsonschema import Draft202012Validator, validators
    from jsonschema.exceptions import SchemaError

    if isinstance(schema, dict) and not isinstance(schema.get("$schema", ""), str):
        raise SchemaProblem("`$schema` must be the URI of a JSON Schema draft", ("$schema",))
    try:
        validators.validator_for(schema, default=Draft202012Validator).check_schema(schema)
    except SchemaError as exc:
        raise SchemaProblem(exc.message, tuple(exc.path)) from None
    except RecursionError:  # jsonschema recurses per level, the regex compiler per group
        raise _bad_pattern(schema) or SchemaProblem(
            "the schema nests too deep to be checked", ()
        ) from None
    except OverflowError:  # re.compile on a repetition such as a{99999999999}
        raise _bad_pattern(schema) or SchemaProblem(
            "a number in the schema is too large", ()
        ) from None


def _bad_pattern(schema: Any) -> SchemaProblem | None:
    """The first `pattern` (or `patternProperties` name) Python's re cannot compile at all.

    jsonschema checks patterns with `re.compile` and expects only `re.error`; a repetition
    count past re's limit raises OverflowError and thousands of nested groups RecursionError.
    """
    todo: list[tuple[tuple[Any, ...], Any]] = [((), schema)]
    while todo:
        path, node = todo.pop()
        if isinstance(node, list):
            todo.extend(((*path, i), v) for i, v in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue
        patterns = [(("pattern",), node.get("pattern"))]
        if isinstance(node.get("patternProperties"), dict):
            patterns += [(("patternProperties",), k) for k in node["patternProperties"]]
        for where, pattern in patterns:
            if isinstance(pattern, str) and (reason := _uncompilable(pattern)):
                shown = pattern if len(pattern) <= 40 else pattern[:37] + "..."
                return SchemaProblem(
                    f"{shown!r} is not a regex Python can use: {reason}", (*path, *where)
                )
        todo.extend(((*path, k), v) for k, v in node.items())
    return None


def _uncompilable(pattern: str) -> str:
    try:
        re.compile(pattern)
    except RecursionError:
        return "it nests too deep"
    except (OverflowError, re.error) as exc:
        return str(exc)
    return ""


def _printable(n: int) -> bool:
    """Whether Python prints `n`: it refuses more than `sys.get_int_max_str_digits()` digits."""
    if n.bit_length() <= 2000:  # about 600 digits, under the lowest limit Python allows (640)
        return True
    try:
        str(n)
    except ValueError:
        return False
    return True


def _check_numbers(schema: Any, root: tuple[Any, ...]) -> None:
    """Refuse numbers Python cannot print (every error message showing one would crash, the
    metaschema check's included) and a `multipleOf` no number can be a multiple of.

    A walk with a list, not recursion: a schema nested thousands deep is reported, not a crash.
    """
    if _no_odd_numbers(schema):  # nearly every schema: no path is built
        return
    todo: list[tuple[tuple[Any, ...], Any]] = [(root, schema)]
    while todo:
        path, node = todo.pop()
        if isinstance(node, dict):
            todo.extend(((*path, key), value) for key, value in node.items())
        elif isinstance(node, list):
            todo.extend(((*path, i), value) for i, value in enumerate(node))
        elif isinstance(node, int) and not isinstance(node, bool) and not _printable(node):
            digits = math.floor(math.log10(abs(node))) + 1
            limit = sys.get_int_max_str_digits()
            raise SchemaProblem(
                f"{_where(path)} is a number of {digits} digits; at most {limit} can be used", path
            )
        elif isinstance(node, float) and path[-1:] == ("multipleOf",) and not math.isfinite(node):
            raise SchemaProblem(f"{_where(path)} must be a finite number, not {node}", path)


def _no_odd_numbers(schema: Any) -> bool:
    """True when the schema holds no integer past `_printable`'s quick bound and no infinite or
    NaN float anywhere: then `_check_numbers` has nothing to refuse. (Otherwise its walk, which
    keeps every value's path for the message, decides.)"""
    todo = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
        elif isinstance(node, int):
            if node.bit_length() > 2000 and not isinstance(node, bool):
                return False
        elif isinstance(node, float) and not math.isfinite(node):
            return False
    return True


def _where(path: tuple[Any, ...]) -> str:
    return "`" + "/".join(str(p) for p in path) + "`" if path else "the schema"


def _surely_valid(node: Any, depth: int) -> bool:
    if isinstance(node, bool):
        return True
    if not isinstance(node, dict) or depth > MAX_DEPTH:
        return False
    for key, value in node.items():
        check = KEYWORDS.get(key)
        if check is None or not check(value, depth + 1):
            return False
    return True


def _type(value: Any, depth: int) -> bool:
    if isinstance(value, str):
        return value in SIMPLE_TYPES
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(v, str) and v in SIMPLE_TYPES for v in value)
        and len(set(value)) == len(value)
    )


def _schema_map(value: Any, depth: int) -> bool:
    return isinstance(value, dict) and all(_surely_valid(v, depth) for v in value.values())


def _schema_list(value: Any, depth: int) -> bool:
    return isinstance(value, list) and bool(value) and all(_surely_valid(v, depth) for v in value)


def _string_set(value: Any, depth: int) -> bool:
    return (
        isinstance(value, list)
        and all(isinstance(v, str) for v in value)
        and len(set(value)) == len(value)
    )


def _count(value: Any, depth: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number(value: Any, depth: int) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _positive(value: Any, depth: int) -> bool:
    return _number(value, depth) and value > 0


def _kind(kind: type | tuple[type, ...]) -> Callable[[Any, int], bool]:
    return lambda value, depth: isinstance(value, kind)


def _anything(value: Any, depth: int) -> bool:
    return True


KEYWORDS: dict[str, Callable[[Any, int], bool]] = {
    "type": _type,
    "properties": _schema_map,
    "$defs": _schema_map,
    "dependentSchemas": _schema_map,
    "required": _string_set,
    "enum": _kind(list),
    "const": _anything,
    "default": _anything,
    "examples": _kind(list),
    "items": _surely_valid,
    "additionalProperties": _surely_valid,
    "unevaluatedProperties": _surely_valid,
    "unevaluatedItems": _surely_valid,
    "propertyNames": _surely_valid,
    "contains": _surely_valid,
    "not": _surely_valid,
    "if": _surely_valid,
    "then": _surely_valid,
    "else": _surely_valid,
    "oneOf": _schema_list,
    "anyOf": _schema_list,
    "allOf": _schema_list,
    "prefixItems": _schema_list,
    "title": _kind(str),
    "description": _kind(str),
    "$comment": _kind(str),
    "format": _kind(str),
    "deprecated": _kind(bool),
    "readOnly": _kind(bool),
    "writeOnly": _kind(bool),
    "uniqueItems": _kind(bool),
    "minLength": _count,
    "maxLength": _count,
    "minItems": _count,
    "maxItems": _count,
    "minProperties": _count,
    "maxProperties": _count,
    "minContains": _count,
    "maxContains": _count,
    "minimum": _number,
    "maximum": _number,
    "exclusiveMinimum": _number,
    "exclusiveMaximum": _number,
    "multipleOf": _positive,
}
