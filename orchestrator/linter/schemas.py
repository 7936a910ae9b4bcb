"""Pass 2, schemas: each role's output contract and the graph's `inputs:` schema.

A role's contract (`Contract.issues`) says what keeps its statuses from being read; this pass
turns those issues into problems at their place in the file, and checks what the contract does
not: reserved field names, what the schema's text shows (schema_findings.py) and the `inputs:`
schema. Library role files checked on their own get the same role checks (`role_problems`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..definition.contract import STATUS_KEY
from ..definition.metaschema import SchemaProblem, check_schema
from ..definition.models import Role
from ..definition.problems import Problem, did_you_mean
from .codes import CODES, Locate, Where, problem
from .schema_findings import findings
from .schema_walk import TYPE_ALIASES, TYPES, SchemaPath, value_at
from .view import GraphView


def check_schemas(view: GraphView) -> None:
    for name, role in view.roles.items():

        def locate(*where: str | int, key: bool = False, _n: str = name) -> Where:
            return view.at("roles", _n, *where, key=key)

        view.problems.extend(role_problems(name, role, locate))
    _check_inputs(view)


def role_problems(name: str, role: Role, locate: Locate) -> Iterator[Problem]:
    """Problems of one role on its own: reserved statuses and fields, schema issues."""
    contract = role.contract
    for issue in contract.issues:
        code = issue.code if issue.code in CODES else "bad-status-schema"
        hint = ""
        if code == "reserved-name":
            hint = "any role may reply `$status: $SUSPEND`; the runtime handles it"
        elif code == "bad-status-schema":
            hint = "give `$status` a `const` (one status) or an `enum` (several)"
        message = issue.message
        if code == "invalid-json-schema" and (bad := _bad_type(role.frontmatter, issue.path)):
            message, hint = f"invalid JSON Schema: {bad[0]}", bad[1]
        yield problem(locate("frontmatter", *issue.path), code, f"role '{name}': {message}", hint)
    for found in findings(role.frontmatter):
        yield problem(
            locate("frontmatter", *found.path, key=found.key),
            found.code,
            f"role '{name}': {found.message}",
            found.hint,
        )
    for prop, where in _declared_properties(role.frontmatter).items():
        if prop.startswith("$") and prop != STATUS_KEY:
            yield problem(
                locate("frontmatter", *where, key=True),
                "reserved-name",
                f"role '{name}' declares the field '{prop}'; names starting with `$` are reserved",
                "rename the field without the `$`",
            )


def _declared_properties(schema: Any) -> dict[str, tuple[str | int, ...]]:
    """Property names declared at the top level or in oneOf/anyOf variants, each with the path
    (inside the schema) of its first declaration."""
    names: dict[str, tuple[str | int, ...]] = {}
    if not isinstance(schema, dict):
        return names
    parts: list[tuple[tuple[str | int, ...], Any]] = [((), schema)]
    for key in ("oneOf", "anyOf"):
        group = schema.get(key)
        if isinstance(group, list):
            parts += [((key, i), v) for i, v in enumerate(group) if isinstance(v, dict)]
    for prefix, part in parts:
        props = part.get("properties")
        if isinstance(props, dict):
            for prop in props:
                names.setdefault(str(prop), (*prefix, "properties", str(prop)))
    return names


def _check_inputs(view: GraphView) -> None:
    schema = view.graph.inputs
    if schema is None:
        return
    for found in findings(schema):
        where = view.at("inputs", *found.path, key=found.key)
        view.report(where, found.code, f"inputs: {found.message}", found.hint)
    try:
        check_schema(schema)
    except SchemaProblem as exc:
        message, hint = _bad_type(schema, exc.path) or (exc.message, "")
        view.report(
            view.at("inputs", *exc.path),
            "invalid-json-schema",
            f"inputs: invalid JSON Schema: {message}",
            hint,
        )
        return
    kind = schema.get("type")
    if kind is not None and kind != "object" and not (isinstance(kind, list) and "object" in kind):
        view.report(
            view.at("inputs", "type"),
            "invalid-json-schema",
            f"inputs must describe an object (the named inputs), not {kind!r}",
            "use `type: object` with `properties:` naming each input",
        )


def _bad_type(schema: Any, path: SchemaPath) -> tuple[str, str] | None:
    """A message and hint for a metaschema error at a `type:`, instead of jsonschema's own
    ("'int' is not valid under any of the given schemas"); None for any other error."""
    if not path or path[-1] != "type":
        return None
    value = value_at(schema, path)
    names = value if isinstance(value, list) else [value]
    types = "JSON Schema types: " + ", ".join(TYPES)
    for name in names:
        if not isinstance(name, str) or name not in TYPES:
            if not isinstance(name, str):
                return f"{name!r} is not a JSON Schema type", types
            meant = TYPE_ALIASES.get(name.lower())
            guess = f"did you mean '{meant}'?" if meant else did_you_mean(name, TYPES)
            return f"'{name}' is not a JSON Schema type", f"{guess} {types}".lstrip()
    return "`type` lists a type twice, or none", types
