"""What a template on one edge can see, and how each name it uses resolves there (docs/format.md section 6).

A name resolves to a value with a JSON Schema (when known) and a flag saying whether it may be
null, or to an error saying why it will not exist when the edge is taken. `$steps.ROLE.FIELD`
rests on the dataflow facts: ROLE must have run on every path, FIELD be declared for every
status ROLE's latest reply may have.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..definition.contract import Contract, StatusContract
from ..definition.models import RESUME, SINGLE_EXIT, START
from ..definition.problems import did_you_mean
from .dataflow import Facts, Flow, edge_facts
from .view import EdgeKind, GraphView, ResolvedEdge, contract_usable

THREAD_FACTS = ("id", "step", "workspace")
DOLLAR_ROOTS = ("$body", "$inputs", "$steps", "$thread", "$status", "$branches")
# The message given to `threads resume --message` reaches `$START.resume` as `$inputs.message`.
RESUME_MESSAGE = "message"
# Value types a section does not enter: names inside resolve as they do outside it. (A section
# over anything else, a list, an object or a value of unknown type, may look names up in it.)
SCALAR_TYPES = frozenset({"string", "integer", "number", "boolean", "null"})


def schema_type(schema: Any) -> frozenset[str] | None:
    """The JSON types a schema allows, or None when it does not say."""
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if isinstance(kind, str):
        return frozenset({kind})
    if isinstance(kind, list) and all(isinstance(k, str) for k in kind):
        return frozenset(kind)
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
        return frozenset({"string"})
    if "const" in schema and isinstance(schema["const"], str):
        return frozenset({"string"})
    return None


@dataclass
class Resolved:
    """How a name used by a template resolves on one edge."""

    ok: bool
    optional: bool = False  # declared but may be null
    schema: Any = None  # the value's JSON Schema, when known
    message: str = ""
    hint: str = ""
    subject: str = ""  # the optional name a section must test (for optional-var)
    opaque: bool = True  # a section over it may enter an object or list

    @classmethod
    def value(cls, schema: Any, *, optional: bool = False, subject: str = "") -> Resolved:
        types = schema_type(schema)
        return cls(
            ok=True,
            optional=optional,
            schema=schema,
            subject=subject,
            opaque=types is None or not types <= SCALAR_TYPES,
        )

    @classmethod
    def error(cls, message: str, hint: str = "") -> Resolved:
        return cls(ok=False, message=message, hint=hint)


@dataclass
class Scope:
    """What a template on one edge can see."""

    view: GraphView
    edge: ResolvedEdge
    facts: Facts | None  # None: the edge's source is never reached
    source: StatusContract | None  # the reply that took the edge; None on $START or if unknown
    inputs: dict[str, Any]
    required_inputs: frozenset[str]
    resolved: dict[str, Resolved] = field(default_factory=dict)

    @classmethod
    def for_edge(cls, view: GraphView, edge: ResolvedEdge, flow: Flow) -> Scope:
        source: StatusContract | None = None
        if edge.role_source is not None:
            contract = view.roles[edge.role_source].contract
            if contract_usable(contract):
                source = contract.for_status(edge.status)
        inputs, required = _declared_inputs(view)
        return cls(
            view=view,
            edge=edge,
            facts=edge_facts(edge, flow, view),
            source=source,
            inputs=inputs,
            required_inputs=required,
        )

    @property
    def at_start(self) -> bool:
        return self.edge.source == START

    def resolve(self, name: str) -> Resolved:
        if name not in self.resolved:
            self.resolved[name] = self._resolve(name)
        return self.resolved[name]

    @property
    def for_each(self) -> str | None:
        """The list a `for_each` branch is one item of (None on any other edge)."""
        if self.edge.kind is not EdgeKind.BRANCH:
            return None
        return self.view.raw_edge(self.edge).for_each

    def the_list(self) -> Resolved:
        """How a `for_each` edge's list resolves where the edge is taken (docs/format.md
        section 15): a field of the output, `$inputs.NAME` or `$steps.ROLE.FIELD`."""
        return self._resolve(self.for_each or "", item=False)

    def _resolve(self, name: str, *, item: bool = True) -> Resolved:
        parts = name.split(".")
        head = parts[0]
        if item and self.for_each is not None and head == self.view.raw_edge(self.edge).item_name:
            return self._item(parts)
        if head == "$branches":
            return self._branches(parts)
        if head == "$body":
            return self._body(parts)
        if head == "$inputs":
            return self._inputs(parts)
        if head == "$steps":
            return self._steps(parts)
        if head == "$thread":
            return self._thread(parts)
        if head == "$status":
            return self._status(parts)
        if head.startswith("$"):
            return Resolved.error(
                f"'{name}' is not a name templates can use",
                did_you_mean(head, DOLLAR_ROOTS)
                or "names starting with `$`: " + ", ".join(DOLLAR_ROOTS),
            )
        return self._field(parts)

    def _item(self, parts: list[str]) -> Resolved:
        """A `for_each` item, and its fields checked against the items' schema: a field an
        object schema with `properties` does not declare is a typo (at run time the name is
        missing and the branch suspends)."""
        listed = self.the_list()
        schema: Any = listed.schema.get("items") if isinstance(listed.schema, dict) else None
        for depth, part in enumerate(parts[1:], start=1):
            props = schema.get("properties") if isinstance(schema, dict) else None
            if not isinstance(props, dict):
                return Resolved.value(None, subject=parts[0])  # its fields are not declared
            if part not in props:
                here = ".".join(parts[:depth])
                return Resolved.error(
                    f"'{'.'.join(parts)}': the item '{here}' has no field '{part}'",
                    did_you_mean(part, list(props))
                    or f"its fields: {', '.join(props) or '(none)'}",
                )
            schema = props[part]
        return Resolved.value(schema, subject=parts[0])

    def _branches(self, parts: list[str]) -> Resolved:
        if self.edge.kind is not EdgeKind.JOIN:
            return Resolved.error(
                "'$branches' is the branches' outputs, seen only on the `join` edge of a fan-out",
                "use it in the prompt of a `join:` edge",
            )
        if len(parts) > 1:
            return Resolved.error(
                f"'{'.'.join(parts)}': $branches is a list; go over it with "
                "{{#$branches}}...{{/$branches}}"
            )
        return Resolved.value({"type": "array"})

    def _status(self, parts: list[str]) -> Resolved:
        if self.at_start:
            return Resolved.error(
                "'$status' is the status of the edge being taken, and no step precedes a $START "
                "edge",
                "use {{{$inputs.NAME}}} for the thread's inputs",
            )
        if len(parts) > 1:
            return Resolved.error(f"'{'.'.join(parts)}': $status is text; it has no fields")
        return Resolved.value({"type": "string"})

    def _body(self, parts: list[str]) -> Resolved:
        if self.at_start:
            return Resolved.error(
                "'$body' is the previous step's body, and no step precedes a $START edge",
                "use {{{$inputs.NAME}}} for the thread's inputs",
            )
        if len(parts) > 1:
            return Resolved.error(f"'{'.'.join(parts)}': $body is text; it has no fields")
        return Resolved.value({"type": "string"})

    def _inputs(self, parts: list[str]) -> Resolved:
        if len(parts) == 1:
            return Resolved.value({"type": "object"})
        name = parts[1]
        if self.edge.status == RESUME and self.at_start and name == RESUME_MESSAGE:
            return Resolved.value({"type": "string"} if len(parts) == 2 else None)
        if name not in self.inputs:
            declared = ", ".join(f"$inputs.{n}" for n in self.inputs) or "none"
            return Resolved.error(
                f"'$inputs.{name}' is not a declared input",
                did_you_mean(name, list(self.inputs))
                or f"declared inputs: {declared}; declare it under inputs:",
            )
        schema = self.inputs[name] if len(parts) == 2 else None
        return Resolved.value(
            schema, optional=name not in self.required_inputs, subject=f"$inputs.{name}"
        )

    def _thread(self, parts: list[str]) -> Resolved:
        if len(parts) == 1:
            return Resolved.value({"type": "object"})
        if len(parts) == 2 and parts[1] in THREAD_FACTS:
            return Resolved.value({"type": "integer" if parts[1] == "step" else "string"})
        return Resolved.error(
            f"'{'.'.join(parts)}' is not a thread fact",
            did_you_mean(parts[1], THREAD_FACTS)
            or "thread facts: " + ", ".join(f"$thread.{f}" for f in THREAD_FACTS),
        )

    def _steps(self, parts: list[str]) -> Resolved:
        if len(parts) == 1:
            return Resolved.value({"type": "object"})
        name = ".".join(parts)
        role = self.view.role_of(parts[1])
        if role is None:
            return Resolved.error(
                f"'{name}': there is no role '{parts[1]}'",
                did_you_mean(parts[1], list(self.view.roles)),
            )
        facts = self.facts
        if facts is None:
            return Resolved.value(None)  # the edge is never taken; nothing more to know
        if not facts.has_run(role):
            return Resolved.error(
                f"'{name}': role '{role}' has not run on every path that reaches this edge",
                f"a path from $START gets here without passing '{role}'; "
                "use a field of the previous step, or a role that always runs before",
            )
        if len(parts) == 2:
            return Resolved.value({"type": "object"})
        contract = self.view.roles[role].contract
        if parts[2] in ("$body", "$status"):
            return Resolved.value({"type": "string"} if len(parts) == 3 else None)
        if parts[2].startswith("$") or not contract_usable(contract):
            if parts[2].startswith("$"):
                return Resolved.error(
                    f"'{name}': a step has fields, `$body` and `$status`, not '{parts[2]}'"
                )
            return Resolved.value(None)
        return self._step_field(role, parts, contract, facts.statuses(role))

    def _step_field(
        self, role: str, parts: list[str], contract: Contract, latest: Iterable[str]
    ) -> Resolved:
        name, fld = ".".join(parts), parts[2]
        absent = sorted(
            s for s in latest if s in contract.statuses and not _declares(contract.statuses[s], fld)
        )
        if absent:
            statuses = " or ".join(f"'{s}'" for s in absent)
            where = [s for s in contract.statuses if fld in contract.statuses[s].fields]
            hint = (
                f"'{fld}' is only in replies with $status {', '.join(where)}"
                if where
                else did_you_mean(
                    fld, sorted({f for s in contract.statuses.values() for f in s.fields})
                )
            )
            return Resolved.error(
                f"'{name}': role '{role}' may last have replied {statuses} here, "
                f"which has no field '{fld}'",
                hint,
            )
        present = [contract.statuses[s] for s in latest if s in contract.statuses]
        optional = any(fld in s.optional for s in present)
        schema = present[0].field_schemas.get(fld) if present and len(parts) == 3 else None
        return Resolved.value(schema, optional=optional, subject=".".join(parts[:3]))

    def _field(self, parts: list[str]) -> Resolved:
        name, fld = ".".join(parts), parts[0]
        edge = self.edge
        if self.at_start:
            declared = ", ".join(f"$inputs.{n}" for n in self.inputs) or "none"
            hint = (
                f"use {{{{{{$inputs.{fld}}}}}}}"
                if fld in self.inputs
                else f"declare '{fld}' under inputs: and use {{{{{{$inputs.{fld}}}}}}} "
                f"(inputs now: {declared})"
            )
            return Resolved.error(
                f"'{name}' is not available: no step precedes a $START edge, so nothing provides it",
                hint,
            )
        source = self.source
        if source is None:
            return Resolved.value(None)  # the source's fields are unknown; reported elsewhere
        if fld in source.required or fld in source.optional:
            schema = source.field_schemas.get(fld) if len(parts) == 1 else None
            return Resolved.value(schema, optional=fld in source.optional, subject=fld)
        role = edge.role_source or edge.source
        contract = self.view.roles[role].contract
        elsewhere = [s for s, c in contract.statuses.items() if fld in c.fields]
        shown = "`_`" if edge.status == SINGLE_EXIT else f"'{edge.status}'"
        if elsewhere:
            hint = f"'{fld}' is only in replies with $status {', '.join(elsewhere)}"
        else:
            hint = did_you_mean(fld, sorted(source.fields)) or (
                f"the {shown} reply has: {', '.join(sorted(source.fields))}"
                if source.fields
                else f"the {shown} reply of '{role}' declares no fields"
            )
        return Resolved.error(
            f"'{name}' is not a field of role '{role}' when it replies {shown}", hint
        )


_INPUTS: weakref.WeakKeyDictionary[GraphView, tuple[dict[str, Any], frozenset[str]]] = (
    weakref.WeakKeyDictionary()
)


def _declared_inputs(view: GraphView) -> tuple[dict[str, Any], frozenset[str]]:
    """The graph's declared inputs and the required ones, read once per view (every edge's
    scope asks)."""
    found = _INPUTS.get(view)
    if found is None:
        schema = view.graph.input_schema
        props = schema.get("properties") if isinstance(schema, dict) else None
        req = schema.get("required") if isinstance(schema, dict) else None
        found = _INPUTS[view] = (
            props if isinstance(props, dict) else {},
            frozenset(r for r in req if isinstance(r, str))
            if isinstance(req, list)
            else frozenset(),
        )
    return found


def _declares(contract: StatusContract, name: str) -> bool:
    return name in contract.required or name in contract.optional
