"""A short description of what a role's reply may carry, for prompts and repair messages."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..definition.contract import StatusContract
from ..definition.models import SINGLE_EXIT
from .status import allowed
from .wording import expected_types, show

if TYPE_CHECKING:
    from ..definition.models import Role


def _describe_type(schema: Any) -> str:
    if not isinstance(schema, dict) or not schema:
        return "any"
    if "const" in schema:
        return show(schema["const"])
    if isinstance(schema.get("enum"), list):
        return "one of " + " | ".join(show(v) for v in schema["enum"])
    types = schema.get("type")
    if types == "array" and isinstance(schema.get("items"), dict):
        return f"array of {_describe_type(schema['items'])}"
    if types is not None:
        return expected_types(types)
    for key in ("oneOf", "anyOf"):
        if isinstance(schema.get(key), list):
            return " or ".join(_describe_type(s) for s in schema[key])
    return "any"


def _describe_fields(sc: StatusContract) -> str:
    def fields(names: Iterable[str]) -> str:
        return ", ".join(f"{n} ({_describe_type(sc.field_schemas.get(n))})" for n in sorted(names))

    parts = []
    if sc.required:
        parts.append(f"required {fields(sc.required)}")
    if sc.optional:
        parts.append(f"optional {fields(sc.optional)}")
    return "; ".join(parts) or "no fields"


def describe_contract(role: Role) -> str:
    """A short, deterministic description of the statuses and fields a reply may carry."""
    contract = role.contract
    if contract.single_exit:
        sc = contract.statuses[SINGLE_EXIT]
        return f"This role has a single exit: write no `$status`. Fields: {_describe_fields(sc)}."
    if not contract.statuses:
        return "This role's frontmatter schema declares no usable statuses."
    lines = [f"`$status` is one of: {allowed(contract)}."]
    for status, sc in contract.statuses.items():
        lines.append(f"- `$status: {status}`: {_describe_fields(sc)}")
    return "\n".join(lines)
