"""The compiled fast check of valid replies never accepts what jsonschema refuses."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.definition.contract import derive_contract
from orchestrator.definition.fastcheck import compile_fast_check
from orchestrator.definition.validator import compile_validator

SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "object",
        "properties": {
            "$status": {"const": "draft"},
            "title": {"type": "string", "minLength": 1, "maxLength": 8},
            "score": {"type": "integer", "minimum": 0, "maximum": 5},
            "ratio": {"type": "number", "exclusiveMaximum": 1},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "ok": {"type": "boolean"},
            "kind": {"enum": ["a", 1, True, None, 1.5]},
            "nested": {
                "type": "object",
                "properties": {"n": {"type": ["integer", "null"]}},
                "required": ["n"],
                "additionalProperties": False,
            },
        },
        "required": ["$status", "title"],
        "additionalProperties": False,
    },
    {
        "oneOf": [
            {"properties": {"$status": {"const": "x"}, "v": {"type": "integer"}}},
            {"properties": {"$status": {"const": "y"}, "v": {"type": "string"}}},
        ],
        "required": ["$status", "v"],
    },
    {
        "type": "object",
        "properties": {
            "items": {"type": "array", "minItems": 1, "maxItems": 3, "contains": {"const": 0}}
        },
        "not": {"required": ["forbidden"]},
        "if": {"required": ["a"]},
        "then": {"required": ["b"]},
    },
]

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=10)
    | st.sampled_from(["a", "draft", "x", "y", 0, 1, 1.0, 1.5, True, False])
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "title",
                    "score",
                    "ratio",
                    "tags",
                    "ok",
                    "kind",
                    "nested",
                    "n",
                    "v",
                    "a",
                    "b",
                    "items",
                    "forbidden",
                    "$status",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=12,
)
replies = st.dictionaries(
    st.sampled_from(
        [
            "$status",
            "title",
            "score",
            "ratio",
            "tags",
            "ok",
            "kind",
            "nested",
            "v",
            "a",
            "b",
            "items",
            "forbidden",
        ]
    ),
    values,
    max_size=7,
)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(len(SCHEMAS))), replies)
def test_what_the_fast_check_accepts_jsonschema_accepts(index: int, data: dict[str, Any]) -> None:
    schema = SCHEMAS[index]
    fast = compile_fast_check(schema)
    assert fast is not None
    if fast(data):
        assert not list(compile_validator(schema).iter_errors(data)), data


def test_schemas_whose_meaning_could_differ_get_no_fast_check() -> None:
    for keyword in ({"pattern": "^a"}, {"format": "email"}, {"multipleOf": 0.5}):
        schema = {"type": "object", "properties": {"f": {"type": "string", **keyword}}}
        assert compile_fast_check(schema) is None
    assert compile_fast_check({"$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s"}) is None


def test_a_contract_compiles_its_checks_once_per_status() -> None:
    contract = derive_contract(SCHEMAS[1])
    x = contract.for_status("x")
    assert x is not None
    assert x.fast_check is x.fast_check and x.validator is x.validator
    assert x.fast_check({"$status": "x", "v": 3})
    assert not x.fast_check({"$status": "x", "v": "3"})
