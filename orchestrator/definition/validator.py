"""The one way a contract's JSON Schema becomes a validator: bounded on a hostile schema.

A role's `frontmatter` schema is written by a graph author and run against text a model wrote,
inside a long-running thread. jsonschema as it comes trusts the schema more than that allows, so
`compile_validator` builds every contract validator with these limits:

- patterns are matched in linear time (`patterns.BOUNDED_KEYWORDS`, RE2);
- a `$ref` resolves only inside the schema itself (and the JSON Schema metaschemas, which
  jsonschema ships): one to a URL or a file raises `RefRefused` when evaluated, instead of a
  network call or a file read at run time;
- `multipleOf` falls back to exact arithmetic where a float would overflow (a 400-digit value
  against `multipleOf: 0.5`), and nothing is a multiple of a non-finite number or is one.

Numbers too long for Python to print are refused before this, with the schema
(`metaschema.check_schema`, which `derive_contract` runs).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError
from referencing import Registry

from .patterns import BOUNDED_KEYWORDS


class RefRefused(Exception):
    """A `$ref` that points outside the schema; raised when it is evaluated."""

    def __init__(self, uri: str):
        self.uri = uri
        super().__init__(
            f"its `$ref` to {uri!r} points outside the schema; only references inside it "
            "(such as `#/$defs/name`) are resolved, nothing is fetched or read"
        )


def _refuse(uri: str) -> Any:
    raise RefRefused(uri)


# Holds nothing and retrieves nothing: jsonschema combines it with the metaschemas it ships, so
# the schema's own resources and those are all a `$ref` can reach.
# (`retrieve` is an attrs alias of `Registry._retrieve`, which mypy does not see.)
_NO_RETRIEVAL: Registry[Any] = Registry(retrieve=_refuse)  # type: ignore[call-arg]


def multiple_of(validator: Any, db: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    """jsonschema's `multipleOf`, without its OverflowError and ValueError on such numbers."""
    if not validator.is_type(instance, "number"):
        return
    if not all(math.isfinite(n) for n in (instance, db) if isinstance(n, float)):
        failed = True
    elif isinstance(db, float) or isinstance(instance, float):
        try:
            quotient = instance / db
            failed = int(quotient) != quotient
        except OverflowError:  # past the float range; exact arithmetic cannot overflow
            failed = (Fraction(instance) / Fraction(db)).denominator != 1
    else:
        failed = instance % db != 0
    if failed:
        yield ValidationError(f"{instance!r} is not a multiple of {db}")


_KEYWORDS = {**BOUNDED_KEYWORDS, "multipleOf": multiple_of}


@cache
def _bounded(base: Any) -> Any:
    """`base` (a jsonschema validator class) with the bounded keywords it has."""
    replaced = {k: v for k, v in _KEYWORDS.items() if k in base.VALIDATORS}
    return validators.extend(base, replaced)  # type: ignore[no-untyped-call]


def refused_ref(exc: BaseException) -> RefRefused | None:
    """The `RefRefused` behind a resolution error (jsonschema and referencing wrap it twice)."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, RefRefused):
        cause = cause.__cause__
    return cause


def compile_validator(schema: Any) -> Any:
    """A validator for `schema` (its `$schema` draft, 2020-12 by default) with the limits above.

    Evaluating a `$ref` that leaves the schema raises `referencing.exceptions.Unresolvable`
    caused by `RefRefused`.
    """
    base = validators.validator_for(schema, default=Draft202012Validator)
    return _bounded(base)(schema, registry=_NO_RETRIEVAL)
