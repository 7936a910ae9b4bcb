"""Stage 4: check the frontmatter against the chosen status's validator; word every error.

Nothing is coerced: the data is validated as written. Every jsonschema error becomes one sentence
naming the status and the field (`items[2].name`), sorted by field path; a failed nested
`oneOf`/`anyOf` is reported through its closest alternative, never as "not valid under any of
the given schemas". Keys starting with `$` other than `$status` are reserved (docs/format.md section 4).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from jsonschema.exceptions import ValidationError
from referencing.exceptions import Unresolvable

from ..definition.contract import STATUS_KEY, StatusContract
from ..definition.patterns import PatternUnusable, search
from ..definition.problems import did_you_mean
from ..definition.validator import refused_ref
from .output import ExtractError
from .wording import clip, expected_types, field, json_type, names, plural, show, suggest

_SortKey = tuple[tuple[int, int | str], ...]
_At = Callable[[str, str], tuple[_SortKey, str]]


def _sort_key(path: Iterable[Any]) -> _SortKey:
    # Paths mix list indexes and keys; order indexes numerically and before keys.
    return tuple((0, p) if isinstance(p, int) else (1, str(p)) for p in path)


def _extras(err: ValidationError) -> list[str]:
    """The keys an object carries that its `additionalProperties: false` schema forbids."""
    schema = err.schema if isinstance(err.schema, dict) else {}
    props = schema.get("properties") or {}
    patterns = schema.get("patternProperties") or {}
    instance = err.instance if isinstance(err.instance, dict) else {}
    return sorted(
        k
        for k in instance
        if k not in props and not any(_search(p, k) for p in patterns if isinstance(p, str))
    )


def _search(pattern: str, text: str) -> bool:
    try:
        return search(pattern, text)
    except PatternUnusable:  # the patternProperties keyword reports it
        return False


def _describe(err: ValidationError, owner: str) -> Iterator[tuple[_SortKey, str]]:
    """(sort key, sentence) for one jsonschema error; `owner` names the variant in sentences
    about required fields ("status 'ready'" or "the role")."""
    path = list(err.absolute_path)
    name = field(path)
    subject = f"field '{name}'" if name else "the frontmatter"
    kind, expected, instance = err.validator, err.validator_value, err.instance

    def at(sub: str, text: str) -> tuple[_SortKey, str]:
        return _sort_key([*path, sub] if sub else path), text

    if isinstance(err.cause, PatternUnusable):
        # The schema's fault, not the reply's: say what could not be checked, and why.
        yield at("", f"{subject} cannot be checked: {err.cause}")
    elif kind == "required" and isinstance(instance, dict) and isinstance(expected, list):
        needs = f"{name} requires" if name else f"{owner} requires"
        for missing in (r for r in expected if r not in instance):
            where = field([*path, missing])
            yield at(str(missing), f"field '{where}' is required ({needs}: {names(expected)})")
    elif kind in ("additionalProperties", "unevaluatedProperties") and expected is False:
        extras = _extras(err) if kind == "additionalProperties" else []
        if not extras:
            yield at("", f"{subject}: {clip(err.message, 200)}")
        allowed = (err.schema.get("properties") or {}) if isinstance(err.schema, dict) else {}
        for extra in extras:
            hint = did_you_mean(extra, [k for k in allowed if k != STATUS_KEY])
            yield at(
                extra,
                f"field '{field([*path, extra])}' is not allowed ({kind} is false; "
                f"allowed: {names(allowed)})" + (f"; {hint}" if hint else ""),
            )
    elif kind == "type":
        text = f"{subject} must be of type {expected_types(expected)}, got {json_type(instance)}"
        wants_text = expected == "string" or (isinstance(expected, list) and "string" in expected)
        if instance is None:
            text += " (the value is empty): write a value after the colon"
        else:
            text += f" ({show(instance)})"
        if wants_text and isinstance(instance, bool | int | float):
            text += "; write it in double quotes to make it text"
        yield at("", text)
    elif kind == "enum" and isinstance(expected, list):
        choices = ", ".join(show(v) for v in expected)
        text = f"{subject} must be one of: {choices}; got {show(instance)}"
        if isinstance(instance, str):
            hint = suggest(instance, [v for v in expected if isinstance(v, str)])
            text += f"; {hint}" if hint else ""
        yield at("", text)
    elif kind == "const":
        yield at("", f"{subject} must be {show(expected)}, got {show(instance)}")
    elif kind in ("minLength", "maxLength") and isinstance(instance, str):
        bound = "at least" if kind == "minLength" else "at most"
        yield at(
            "",
            f"{subject} must be {bound} {plural(expected, 'character')} long, got {len(instance)} "
            f"({show(instance)})",
        )
    elif kind in ("minItems", "maxItems") and isinstance(instance, list):
        bound = "at least" if kind == "minItems" else "at most"
        yield at("", f"{subject} must have {bound} {plural(expected, 'item')}, got {len(instance)}")
    elif kind in ("minProperties", "maxProperties") and isinstance(instance, dict):
        bound = "at least" if kind == "minProperties" else "at most"
        yield at(
            "", f"{subject} must have {bound} {plural(expected, 'field')}, got {len(instance)}"
        )
    elif kind == "pattern":
        yield at("", f"{subject} must match the pattern {expected!r}, got {show(instance)}")
    elif kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        op = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
        yield at("", f"{subject} must be {op[kind]} {expected}, got {show(instance)}")
    elif kind == "multipleOf":
        yield at("", f"{subject} must be a multiple of {expected}, got {show(instance)}")
    elif kind == "uniqueItems":
        yield at("", f"{subject} must not contain the same item twice")
    elif kind in ("oneOf", "anyOf") and err.context:
        yield from _describe_alternatives(err, subject, owner, at)
    elif kind == "oneOf":
        yield at("", f"{subject} matches more than one of the allowed shapes; it must match one")
    elif kind is None and err.schema is False:
        # jsonschema drops the path of a `false` subschema's error; validate() names top-level
        # fields itself, this covers nested ones.
        yield at("", f"a value ({show(instance)}) is not allowed where it stands (schema `false`)")
    else:
        yield at("", f"{subject}: {clip(err.message, 200)}")


def _describe_alternatives(
    err: ValidationError, subject: str, owner: str, at: _At
) -> Iterator[tuple[_SortKey, str]]:
    """The most helpful reading of a failed `oneOf`/`anyOf`, never "not valid under any"."""
    by_variant: dict[Any, list[ValidationError]] = {}
    for sub in err.context or []:
        index = sub.relative_schema_path[0] if sub.relative_schema_path else 0
        by_variant.setdefault(index, []).append(sub)
    # A variant whose very type is wrong is the least likely meant; among the others, the one
    # with the fewest errors is the closest.
    fitting = {
        i: subs
        for i, subs in by_variant.items()
        if not any(s.validator == "type" and not s.relative_path for s in subs)
    }
    if not fitting:
        types: list[str] = []
        for subs in by_variant.values():
            for sub in subs:
                if sub.validator == "type" and not sub.relative_path:
                    vals = sub.validator_value
                    for t in vals if isinstance(vals, list) else [vals]:
                        if t not in types:
                            types.append(str(t))
        yield at(
            "",
            f"{subject} must be of type {' or '.join(types)}, got {json_type(err.instance)} "
            f"({show(err.instance)})",
        )
        return
    closest = min(fitting.values(), key=len)
    for sub in closest:
        yield from _describe(sub, owner)


def validate(chosen: StatusContract, data: dict[str, Any], single_exit: bool) -> list[str]:
    """Every error of `data` against the chosen status, sorted by field, each a sentence."""
    fast = chosen.fast_check
    if (
        fast is not None
        and fast(data)
        and not any(k.startswith("$") and k != STATUS_KEY for k in data)
    ):
        return []  # the common case: a compiled check says valid (definition/fastcheck.py)
    try:
        errors = list(chosen.validator.iter_errors(data))
    except (Unresolvable, RecursionError) as exc:
        # A schema that check_schema accepts can still fail to evaluate (a `$ref` to nowhere or
        # outside the schema, a `$ref` loop). That is the graph's fault, not the reply's; say
        # so, don't crash.
        detail = clip(" ".join(str(refused_ref(exc) or exc).split()), 200)
        raise ExtractError([f"the role's frontmatter schema cannot be used: {detail}"]) from None
    if not errors and not any(k.startswith("$") and k != STATUS_KEY for k in data):
        return []  # the common case, kept cheap
    declared = chosen.fields | {STATUS_KEY}
    described: list[tuple[_SortKey, str]] = []
    for key in data:
        if key.startswith("$") and key not in declared:
            text = f"field '{field([key])}' is not allowed: keys starting with `$` are reserved"
            described.append((_sort_key([key]), text))
        elif chosen.field_schemas.get(key) is False:
            described.append((_sort_key([key]), f"field '{field([key])}' is not allowed"))
    named_false = any(chosen.field_schemas.get(k) is False for k in data)
    owner = "the role" if single_exit else f"status '{chosen.status}'"
    for err in errors:
        if named_false and err.validator is None and not err.absolute_path:
            continue  # already named above
        described.extend(_describe(err, owner))
    prefix = "" if single_exit else f"status '{chosen.status}': "
    out: list[str] = []
    for _, text in sorted(described, key=lambda item: item[0]):
        if prefix + text not in out:
            out.append(prefix + text)
    return out
