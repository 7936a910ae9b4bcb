"""A role's output contract: which statuses it can emit and, per status, which fields.

docs/format.md section 4 allows three schema shapes:
1. `oneOf` (or `anyOf`) variants, each with `properties.$status.const` (or a one-value enum);
2. a flat object whose `$status` has a `const` or an `enum`;
3. no `$status` at all: a single-exit role, routed by the graph key `_`.
Top-level `properties`/`required` next to `oneOf` apply to every variant.

For each status the contract keeps the required and optional field names and a JSON Schema that
checks a reply with that status, so validation errors can name the variant instead of saying
"not valid under any of the given schemas". Validators are compiled once per role and status
(`Role.contract` is computed once per role), as is the fast check of valid replies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .metaschema import SchemaProblem, check_schema
from .reserved import SINGLE_EXIT, SUSPEND

STATUS_KEY = "$status"


@dataclass(frozen=True)
class StatusContract:
    """What a reply with one status must carry."""

    status: str
    required: frozenset[str]
    optional: frozenset[str]
    schema: dict[str, Any]
    # JSON Schema of each declared field (may be {} when the field is required but undescribed)
    field_schemas: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def fields(self) -> frozenset[str]:
        return self.required | self.optional

    @cached_property
    def validator(self) -> Any:
        # Imported on first use only: jsonschema and RE2 cost start-up time most commands skip.
        from .validator import compile_validator

        return compile_validator(self.schema)

    @cached_property
    def fast_check(self) -> Any:
        """A compiled check that may only say "valid" (fastcheck.py), or None."""
        # Imported on first use only, as the validator is.
        from .fastcheck import compile_fast_check

        return compile_fast_check(self.schema)


@dataclass(frozen=True)
class ContractIssue:
    """A reason the schema cannot serve as a routing contract (lint code in `code`)."""

    code: str  # bad-status-schema | invalid-json-schema
    message: str
    path: tuple[str | int, ...] = ()


@dataclass(frozen=True)
class Contract:
    statuses: dict[str, StatusContract]
    single_exit: bool  # shape 3: no $status declared; the reply's status is "_"
    issues: tuple[ContractIssue, ...] = ()

    @property
    def status_names(self) -> list[str]:
        return list(self.statuses)

    def for_status(self, status: str) -> StatusContract | None:
        return self.statuses.get(status)


def _names(schema: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    req = schema.get("required")
    req = {r for r in req if isinstance(r, str)} if isinstance(req, list) else set()
    return props, req


def _status_values(prop: Any) -> list[str] | None:
    """The statuses a `$status` property schema allows, or None when it names none."""
    if not isinstance(prop, dict):
        return None
    if "const" in prop:
        return [str(prop["const"])]
    enum = prop.get("enum")
    if isinstance(enum, list) and enum:
        return [str(v) for v in enum]
    return None


def derive_contract(schema: Any) -> Contract:
    issues: list[ContractIssue] = []
    if not isinstance(schema, dict):
        return Contract(
            {}, False, (ContractIssue("bad-type", "frontmatter must be a JSON Schema object"),)
        )
    try:
        check_schema(schema)  # a fast path for plain schemas, else the full metaschema
    except SchemaProblem as exc:
        where = exc.path
        issues.append(
            ContractIssue("invalid-json-schema", f"invalid JSON Schema: {exc.message}", where)
        )
        return Contract({}, False, tuple(issues))

    top_props, top_req = _names(schema)
    base = {k: v for k, v in schema.items() if k not in ("oneOf", "anyOf")}
    variants_key = "oneOf" if "oneOf" in schema else ("anyOf" if "anyOf" in schema else None)
    statuses: dict[str, StatusContract] = {}

    def add(status: str, props: dict[str, Any], req: set[str], check: dict[str, Any]) -> None:
        names = {k for k in props if k != STATUS_KEY} | {r for r in req if r != STATUS_KEY}
        required = frozenset(r for r in req if r != STATUS_KEY)
        if status in statuses:
            issues.append(
                ContractIssue("bad-status-schema", f"status '{status}' is declared twice")
            )
            return
        statuses[status] = StatusContract(
            status=status,
            required=required,
            optional=frozenset(names - required),
            schema=check,
            field_schemas={k: props.get(k, {}) for k in names},
        )

    if variants_key is not None:
        variants = schema[variants_key]
        for i, variant in enumerate(variants):
            if not isinstance(variant, dict):
                continue
            v_props, v_req = _names(variant)
            values = _status_values(v_props.get(STATUS_KEY))
            if values is None:
                values = _status_values(top_props.get(STATUS_KEY)) if len(variants) == 1 else None
            if values is None:
                issues.append(
                    ContractIssue(
                        "bad-status-schema",
                        f"{variants_key} variant {i + 1} has no `$status` with a `const`",
                        (variants_key, i),
                    )
                )
                continue
            props = {**top_props, **v_props}
            req = top_req | v_req
            for value in values:
                check = {**base, "allOf": [*base.get("allOf", []), variant]}
                add(value, props, req, check)
    elif STATUS_KEY in top_props:
        values = _status_values(top_props[STATUS_KEY])
        if values is None:
            issues.append(
                ContractIssue(
                    "bad-status-schema",
                    "`$status` must have a `const` or an `enum` listing the statuses",
                    ("properties", STATUS_KEY),
                )
            )
        else:
            for value in values:
                add(value, top_props, top_req, schema)
    else:
        add(SINGLE_EXIT, top_props, top_req, schema)
        return Contract(statuses, True, tuple(issues))

    if SUSPEND in statuses:
        issues.append(ContractIssue("reserved-name", f"`{SUSPEND}` is reserved; do not declare it"))
        statuses.pop(SUSPEND)
    return Contract(statuses, False, tuple(issues))
