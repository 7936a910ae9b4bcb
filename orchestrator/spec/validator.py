"""The one way a contract's JSON Schema becomes a validator: bounded on a hostile schema.

A role's `frontmatter` schema is written by a graph author and run against text a model wrote,
inside a long-running thread. jsonschema as it comes trusts the schema more than that allows, so
`compile_validator` builds every contract validator with these limits:

- patterns are matched in linear time (`patterns.BOUNDED_KEYWORDS`, RE2).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jsonschema import Draft202012Validator, validators

from .patterns import BOUNDED_KEYWORDS

_KEYWORDS = dict(BOUNDED_KEYWORDS)


@cache
def _bounded(base: Any) -> Any:
    """`base` (a jsonschema validator class) with the bounded keywords it has."""
    replaced = {k: v for k, v in _KEYWORDS.items() if k in base.VALIDATORS}
    return validators.extend(base, replaced)


def compile_validator(schema: Any) -> Any:
    """A validator for `schema` (its `$schema` draft, 2020-12 by default) with the limits above."""
    base = validators.validator_for(schema, default=Draft202012Validator)
    return _bounded(base)(schema)
