"""A compiled yes/no check of a contract's schema, for the common case: a valid reply.

`bench/validate.py` measured it: jsonschema takes ~40 µs to find no error in a typical reply
(it builds a validator object per subschema it descends into), jsonschema-rs ~0.6 µs and
fastjsonschema ~1.5 µs. jsonschema stays the judge: the fast check may only say "valid". When
it says anything else, or cannot be built, or fails, the reply goes through jsonschema as
before, which words every error (extract/validate.py). So a difference between the two can
only cost time, never accept a reply jsonschema would refuse, provided the fast check never
calls valid what jsonschema calls invalid. Where the two could disagree that way it is not
used at all:

- regular expressions (`pattern`, `patternProperties`): ours are RE2 (patterns.py), its are
  Rust's, and the dialects differ at the edges;
- `format` (jsonschema does not assert formats; it may), `multipleOf` (our exact arithmetic
  past the float range, validator.py);
- references (`$ref`, `$dynamicRef`, ...), anchors, ids and `$schema`: ours resolve only
  inside the schema and refuse the rest with a message; a reference loop must not reach a
  native stack.

`tests/test_fastcheck.py` checks on generated replies that the two agree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Keywords with which the fast check is not used (see above). A property *named* like one of
# them also turns it off: harmless, only slower.
_UNSUPPORTED = frozenset(
    {
        "pattern",
        "patternProperties",
        "format",
        "multipleOf",
        "$ref",
        "$dynamicRef",
        "$recursiveRef",
        "$anchor",
        "$dynamicAnchor",
        "$recursiveAnchor",
        "$id",
        "id",
        "$schema",
        "$vocabulary",
        "dependencies",
    }
)

FastCheck = Callable[[Any], bool]


def _supported(node: Any, depth: int = 0) -> bool:
    if depth > 64:  # a schema that deep is not the common case
        return False
    if isinstance(node, dict):
        return all(k not in _UNSUPPORTED and _supported(v, depth + 1) for k, v in node.items())
    if isinstance(node, list):
        return all(_supported(v, depth + 1) for v in node)
    return True


def compile_fast_check(schema: Any) -> FastCheck | None:
    """A function saying whether `data` is valid under `schema`, or None where none is used."""
    if not isinstance(schema, dict) or not _supported(schema):
        return None
    try:
        # Imported on first use only: a native extension most commands never need.
        import jsonschema_rs
    except ImportError:  # an optional speed-up: without it, jsonschema alone
        return None
    try:
        compiled = jsonschema_rs.Draft202012Validator(schema, validate_formats=False)
    except Exception:  # whatever it cannot compile, jsonschema judges alone
        return None
    is_valid = compiled.is_valid

    def check(data: Any) -> bool:
        try:
            return bool(is_valid(data))
        except Exception:  # a value it cannot take (an infinite float, a huge integer)
            return False

    return check
