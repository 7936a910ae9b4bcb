"""Schema regexes matched in linear time, for every JSON Schema keyword that matches one.

A contract's `pattern` and `patternProperties` come from a graph author and are matched against
text a model wrote. Python's `re` backtracks: `^(a+)+$` against 45 `a`s and a `b` runs for
hours. RE2 (the `google-re2` package) matches in time linear in the text, whatever the pattern,
and its syntax is close to the ECMA-262 regexes JSON Schema specifies (`\\d` is ASCII, `$` is the
end of the text). It has no lookarounds or backreferences; a pattern it cannot compile (or one
too large for its memory budget) makes the value it should check fail with an error that says
so, naming the field, rather than pass unchecked.

jsonschema matches patterns in four keywords: `pattern`, `patternProperties`, and the two that
ask which keys `patternProperties` covers, `additionalProperties` and `unevaluatedProperties`.
`BOUNDED_KEYWORDS` replaces all four; they behave as jsonschema's own apart from the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from typing import Any

import re2
from jsonschema.exceptions import ValidationError
from referencing.jsonschema import lookup_recursive_ref

# RE2's memory budget for one compiled pattern: it refuses patterns larger than this (such as
# `a{1000}{1000}`) instead of building them.
_MAX_MEM = 8 << 20

_OPTIONS = re2.Options()
_OPTIONS.max_mem = _MAX_MEM
_OPTIONS.log_errors = False  # the refusal is reported to the user; RE2's own log is noise

Keyword = Callable[[Any, Any, Any, Any], Iterator[ValidationError]]


class PatternUnusable(Exception):
    """A schema pattern the bounded engine cannot match; `str()` is a clause for a sentence."""

    def __init__(self, pattern: str, reason: str):
        self.pattern = pattern
        self.reason = reason
        super().__init__(f"the schema's pattern {pattern!r} cannot be used: {reason}")


@lru_cache(maxsize=512)
def _compile(pattern: str) -> Any:
    """The compiled pattern, or the reason RE2 refuses it (cached either way)."""
    try:
        return re2.compile(pattern, options=_OPTIONS)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        reason = detail.decode(errors="replace") if isinstance(detail, bytes) else str(detail)
        return f"{reason} (RE2 syntax: no lookarounds or backreferences)"
    except (UnicodeError, TypeError) as exc:  # a lone surrogate, a pattern that is not text
        return str(exc)


def search(pattern: str, text: str) -> bool:
    """Whether `pattern` matches somewhere in `text`, in linear time; raises `PatternUnusable`."""
    compiled = _compile(pattern)
    if isinstance(compiled, str):
        raise PatternUnusable(pattern, compiled)
    try:
        return compiled.search(text) is not None
    except UnicodeError as exc:  # text RE2 cannot encode (a lone surrogate); YAML never gives it
        raise PatternUnusable(pattern, f"the text cannot be matched ({exc})") from None


def _matches_any(patterns: Iterable[str], key: str) -> bool:
    """Whether a `patternProperties` pattern covers `key`.

    An unusable pattern covers nothing here: the `patternProperties` keyword next to it reports
    it, so the reply fails either way, with the error that says why.
    """
    for pattern in patterns:
        try:
            if search(pattern, key):
                return True
        except PatternUnusable:
            continue
    return False


def _unusable(exc: PatternUnusable) -> ValidationError:
    return ValidationError(str(exc), cause=exc)


def pattern(validator: Any, patrn: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    try:
        if not search(patrn, instance):
            yield ValidationError(f"{instance!r} does not match {patrn!r}")
    except PatternUnusable as exc:
        yield _unusable(exc)


def pattern_properties(
    validator: Any, patterns: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for patrn, subschema in patterns.items():
        for key, value in instance.items():
            try:
                matched = search(patrn, key)
            except PatternUnusable as exc:
                yield _unusable(exc)
                break  # once per pattern, not once per key
            if matched:
                yield from validator.descend(value, subschema, path=key, schema_path=patrn)


def additional_properties(
    validator: Any, ap: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [k for k in instance if k not in properties and not _matches_any(patterns, k)]
    if validator.is_type(ap, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], ap, path=extra)
    elif not ap and extras:
        listed = ", ".join(repr(k) for k in sorted(extras))
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            regexes = ", ".join(repr(p) for p in sorted(patterns))
            yield ValidationError(f"{listed} {verb} not match any of the regexes: {regexes}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(
                f"Additional properties are not allowed ({listed} {verb} unexpected)"
            )


def _is_valid(errors: Iterator[ValidationError]) -> bool:
    return next(errors, None) is None


def _evaluated_keys(validator: Any, instance: dict[str, Any], schema: Any) -> set[str]:
    """The keys of `instance` that `schema` evaluates, for `unevaluatedProperties`.

    jsonschema's `find_evaluated_property_keys_by_schema` for draft 2020-12, with bounded
    pattern matching; draft 2019-09 (the other draft with `unevaluatedProperties`) gets the
    same reading, with its `$recursiveRef` in place of `$dynamicRef`.
    """
    if not isinstance(schema, dict):
        return set()
    keys: set[str] = set()
    for ref_keyword in ("$ref", "$dynamicRef", "$recursiveRef"):
        ref = schema.get(ref_keyword)
        if ref is None or ref_keyword not in validator.VALIDATORS:
            continue
        if ref_keyword == "$recursiveRef":
            resolved = lookup_recursive_ref(validator._resolver)
        else:
            resolved = validator._resolver.lookup(ref)
        inner = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
        keys |= _evaluated_keys(inner, instance, resolved.contents)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        keys |= properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        subschema = schema.get(keyword)
        if subschema is not None:
            keys |= {k for k, v in instance.items() if _is_valid(validator.descend(v, subschema))}
    patterns = list(schema.get("patternProperties", {}))
    keys |= {k for k in instance if _matches_any(patterns, k)}
    for name, subschema in schema.get("dependentSchemas", {}).items():
        if name in instance:
            keys |= _evaluated_keys(validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if _is_valid(validator.descend(instance, subschema)):
                keys |= _evaluated_keys(validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys |= _evaluated_keys(validator, instance, schema["if"])
            if "then" in schema:
                keys |= _evaluated_keys(validator, instance, schema["then"])
        elif "else" in schema:
            keys |= _evaluated_keys(validator, instance, schema["else"])
    return keys


def unevaluated_properties(
    validator: Any, up: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    evaluated = _evaluated_keys(validator, instance, schema)
    failed = [
        k
        for k in instance
        if k not in evaluated
        and not _is_valid(validator.descend(instance[k], up, path=k, schema_path=k))
    ]
    if not failed:
        return
    listed = ", ".join(repr(k) for k in sorted(failed))
    verb = "was" if len(failed) == 1 else "were"
    if up is False:
        yield ValidationError(
            f"Unevaluated properties are not allowed ({listed} {verb} unexpected)"
        )
    else:
        yield ValidationError(
            "Unevaluated properties are not valid under the given schema "
            f"({listed} {verb} unevaluated and invalid)"
        )


BOUNDED_KEYWORDS: dict[str, Keyword] = {
    "pattern": pattern,
    "patternProperties": pattern_properties,
    "additionalProperties": additional_properties,
    "unevaluatedProperties": unevaluated_properties,
}
