"""Pass 3c', guard types: a guard checked against the types the contracts declare (guard-type).

CEL does not convert between types: `output.confidence >= '0.8'` on a number compiles, then
fails at run time with "No such overload" and the thread suspends. The `common-expression-language`
package has no static type checker (no declarations API: only compile, evaluate and the names a
program reads), so its own evaluator is the checker: the guard runs against sample values of the
declared types (a number field holds a number, a string field a string, ...) and an operation
CEL has no overload for, or a result that is not a boolean, is reported.

Samples are built so that a guard that is fine at run time is never reported:
- a field of unknown type is left out: reading it fails with a missing key, which is ignored;
- a `number` may hold an int or a double at run time (`1` or `0.5`), and CEL mixes them in
  comparisons but not in arithmetic: an error counts only when both forms give it;
- `&&` and `||` stop early, so the guard runs with every boolean true, then every boolean false,
  and with small and large numbers, and an error in any of these runs counts.
Optional fields are given a value, not null: a guard is checked as if every field were present
(`has()` and null tests are about presence, not types).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from ..core.guards import GUARD_NAMES, GuardError, compile_guard, evaluate
from ..definition.models import START
from .view import EdgeKind, GraphView, ResolvedEdge, contract_usable

# The words of CEL's messages for an operation between types it has no overload for.
TYPE_ERRORS = ("No such overload", "Unsupported operation")
NOT_BOOLEAN = "gives a value that is not true or false"
NOT_BOOLEAN_HINT = (
    "a guard is a condition: compare the value (`output.count > 0`, not `output.count`)"
)
TYPES_HINT = (
    "CEL does not convert types: compare a field with a value of its declared type (0.8, not "
    "'0.8'), or convert it explicitly with int(), double() or string()"
)
MAX_DEPTH = 6  # nested objects sampled at most this deep (a recursive-looking schema stops)


@dataclass(frozen=True)
class Sample:
    """How one run of the guard fills in values: booleans, magnitude, and the form of numbers."""

    flag: bool
    large: bool
    double: bool

    def number(self) -> float | int:
        if self.double:
            return 1_000_000.5 if self.large else 0.5
        return 1_000_000 if self.large else 0

    def integer(self) -> int:
        return 1_000_000 if self.large else 0


def check_guard_types(view: GraphView) -> None:
    for edge in view.edges:
        if not (edge.kind is EdgeKind.PLAIN or (edge.kind is EdgeKind.BRANCH and not edge.branch)):
            continue  # the guard belongs to the whole edge: checked once, with its first target
        when = view.raw_edge(edge).when
        if when is None:
            continue
        try:
            compile_guard(when)
        except GuardError:
            continue  # guard-syntax
        found = type_problem(view, edge, when)
        if found is not None:
            view.report(
                view.at(*edge.edge_path, "when"),
                "guard-type",
                f"the guard `{when}` {found}",
                NOT_BOOLEAN_HINT if found.startswith(NOT_BOOLEAN) else TYPES_HINT,
            )


def type_problem(view: GraphView, edge: ResolvedEdge, when: str) -> str | None:
    """Why the guard fails on values of the declared types, or None."""
    for flag, large in itertools.product((True, False), (False, True)):
        outcomes = [
            _outcome(when, _names(view, edge, Sample(flag, large, double)))
            for double in (True, False)
        ]
        if all(o is not None for o in outcomes):
            return outcomes[0]
    return None


def _outcome(when: str, names: dict[str, Any]) -> str | None:
    try:
        evaluate(when, names)
    except GuardError as exc:
        text = str(exc)
        if text.startswith("it gave"):
            return f"{NOT_BOOLEAN} (on a sample of the declared types it gave {text[8:].split(', not')[0]})"
        if any(word in text for word in TYPE_ERRORS):
            return "mixes types that CEL cannot compare or combine: " + text.split(". ", 1)[0]
    except LookupError:  # a field left out (unknown type) or undeclared (guard-var): no type
        pass
    return None  # true, false, or an error about presence (a missing key), not types


def _names(view: GraphView, edge: ResolvedEdge, sample: Sample) -> dict[str, Any]:
    output: dict[str, Any] = {}
    if edge.source != START and edge.role_source is not None:
        contract = view.roles[edge.role_source].contract
        found = contract.for_status(edge.status) if contract_usable(contract) else None
        if found is not None:
            output = _fields(found.field_schemas, sample)
        output["status"] = edge.status
    steps: dict[str, Any] = {}
    for name, role in view.roles.items():
        contract = role.contract
        if not contract_usable(contract):
            continue
        schemas: dict[str, Any] = {}
        for status in contract.statuses.values():
            for field, schema in status.field_schemas.items():
                schemas.setdefault(field, schema)
        steps[name] = {**_fields(schemas, sample), "status": contract.status_names[0]}
    names = {
        "output": output,
        "inputs": _fields(_properties(view.graph.input_schema), sample),
        "steps": steps,
        "visits": dict.fromkeys(view.roles, sample.integer()),
        "thread": {"step": sample.integer() + 1},
    }
    assert set(names) == set(GUARD_NAMES)  # a new guard name must be sampled here too
    return names


def _properties(schema: Any) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema, dict) else None
    return props if isinstance(props, dict) else {}


def _fields(schemas: dict[str, Any], sample: Sample, depth: int = 0) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, schema in schemas.items():
        if name.startswith("$"):
            continue  # `$status` is `status` in a guard
        known, value = _value(schema, sample, depth)
        if known:
            values[name] = value
    return values


def _value(schema: Any, sample: Sample, depth: int) -> tuple[bool, Any]:
    """(True, a value of the schema's type), or (False, None) when the type is not known."""
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return False, None
    if "const" in schema:
        return True, schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return True, enum[0]
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else []
    kinds = [k for k in kinds if k != "null"]
    if len(kinds) != 1:
        return False, None  # no type, or several: any operation may be meant for one of them
    match kinds[0]:
        case "string":
            return True, "text"
        case "integer":
            return True, sample.integer()
        case "number":
            return True, sample.number()
        case "boolean":
            return True, sample.flag
        case "object":
            return True, _fields(_properties(schema), sample, depth + 1)
        case "array":
            known, item = _value(schema.get("items"), sample, depth + 1)
            return True, [item] if known else []
    return False, None
