"""Pass 3c, guards and endings: the `when:` of guarded edges, and `ending:` keys.

- guard-no-default: the last edge of a list has `when`, or a lone edge has one: some reply would
  find no edge to take.
- guard-syntax: the CEL expression does not compile (CEL's own message, with its column).
- guard-var: a name the guard cannot see on that edge: a top-level name other than output,
  inputs, steps, visits and thread; `output` on a $START edge; `output.FIELD` that the status
  taking the edge does not declare; `steps.ROLE` or `visits.ROLE` of no role; an input the graph
  does not declare.
- guard-cost: comprehensions nested more than twice (core/guard_cost.py: the cost grows with
  the lists' length to that power; at run time a budget bounds what is left).
- misplaced-ending: `ending`, `outcome` or `recovery` on an edge that does not lead to $END.
"""

from __future__ import annotations

import re

from ..core.guard_cost import MAX_NESTING, shape
from ..core.guards import GUARD_NAMES, GuardError, compile_guard, names_used
from ..definition.models import END, START, Edge, Join
from ..definition.problems import did_you_mean
from .view import EdgeKind, GraphView, ResolvedEdge

# Strings are taken out before names are read, so 'output.x' inside quotes is no name.
_STRINGS = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_SELECT = re.compile(r"(?<![\w.])(output|inputs|steps|visits)((?:\.[A-Za-z_]\w*)+)")


def check_guards(view: GraphView) -> None:
    for edge in view.edges:
        raw = view.raw_edge(edge)
        if edge.kind is EdgeKind.PLAIN or (edge.kind is EdgeKind.BRANCH and not edge.branch):
            # the guard belongs to the whole edge: checked once, with its first target
            _check_default(view, edge, raw)
            if raw.when is not None:
                _check_guard(view, edge, raw.when)
        if edge.kind is EdgeKind.JOIN and raw.join is not None:
            _check_ending(view, edge, raw.join)
        elif edge.kind is EdgeKind.PLAIN or not edge.branch:
            _check_ending(view, edge, raw)


def _check_default(view: GraphView, edge: ResolvedEdge, raw: Edge) -> None:
    listed = view.graph.edges(edge.source, edge.status)
    last = edge.index is None or edge.index == len(listed) - 1
    if last and raw.when is not None:
        view.report(
            view.at(*edge.edge_path, "when"),
            "guard-no-default",
            f"the last edge for {edge.source}.{edge.status} has a guard, so a reply for which "
            "no guard holds has no edge to take",
            "end the list with an edge without `when:` (the default)",
        )
    elif not last and raw.when is None:
        view.report(
            view.at(*edge.edge_path),
            "guard-no-default",
            f"edge {edge.index + 1 if edge.index is not None else 1} of {len(listed)} for "
            f"{edge.source}.{edge.status} has no `when`, so the edges after it are never taken",
            "only the last edge of a list goes without `when:`",
        )


def _check_guard(view: GraphView, edge: ResolvedEdge, when: str) -> None:
    where = view.at(*edge.edge_path, "when")
    try:
        compile_guard(when)
    except GuardError as exc:
        view.report(where, "guard-syntax", f"the guard `{when}` does not parse: {exc}")
        return
    depth = shape(when).depth
    if depth > MAX_NESTING:
        view.report(
            where,
            "guard-cost",
            f"the guard nests comprehensions {depth} deep; at most {MAX_NESTING} are allowed",
            "nest less, or let a role compute the answer and return it as a field",
        )
    for name in names_used(when):
        if name not in GUARD_NAMES:
            view.report(
                where,
                "guard-var",
                f"the guard uses '{name}', which guards do not see",
                did_you_mean(name, list(GUARD_NAMES))
                or "a guard sees output, inputs, steps.ROLE, visits.ROLE and thread.step",
            )
    for head, rest in _SELECT.findall(_STRINGS.sub("''", when)):
        problem = _select_problem(view, edge, head, rest.lstrip(".").split("."))
        if problem is not None:
            view.report(where, "guard-var", *problem)


def _select_problem(
    view: GraphView, edge: ResolvedEdge, head: str, parts: list[str]
) -> tuple[str, str] | None:
    name = f"{head}.{'.'.join(parts)}"
    if head == "output":
        if edge.source == START:
            return (f"'{name}': no step precedes a $START edge", "use inputs.NAME")
        return _field_problem(view, edge.role_source, [edge.status], parts[0], name)
    if head == "inputs":
        declared = list((view.graph.input_schema.get("properties") or {}).keys())
        if parts[0] not in declared:
            return (
                f"'{name}': the graph has no input '{parts[0]}'",
                did_you_mean(parts[0], declared),
            )
        return None
    role = view.role_of(parts[0])
    if role is None or role not in view.roles:
        return (
            f"'{name}': there is no role '{parts[0]}'",
            did_you_mean(parts[0], list(view.roles)),
        )
    if head == "steps" and len(parts) > 1:
        return _field_problem(view, role, None, parts[1], name)
    return None


def _field_problem(
    view: GraphView, role: str | None, statuses: list[str] | None, field: str, name: str
) -> tuple[str, str] | None:
    """None when `field` is `status` or declared by the role (for these statuses, or any)."""
    if field == "status" or role is None:
        return None
    contract = view.roles[role].contract
    chosen = [contract.for_status(s) for s in statuses] if statuses else contract.statuses.values()
    declared = {f for c in chosen if c is not None for f in c.fields}
    if not declared or field in declared:
        return None
    return (
        f"'{name}': role '{role}' does not declare '{field}'"
        + (f" for status '{statuses[0]}'" if statuses else ""),
        did_you_mean(field, sorted(declared)) or "fields: " + ", ".join(sorted(declared)),
    )


def _check_ending(view: GraphView, edge: ResolvedEdge, raw: Edge | Join) -> None:
    if edge.target == END and edge.kind is not EdgeKind.BRANCH:
        return
    path = edge.path if edge.kind is EdgeKind.JOIN else edge.edge_path
    leads = (
        "a fan-out edge ends nothing itself; its join does"
        if edge.kind is EdgeKind.BRANCH
        else f"this edge leads to '{edge.target}'"
    )
    for key in ("ending", "outcome", "recovery"):
        if getattr(raw, key) is not None:
            view.report(
                view.at(*path, key),
                "misplaced-ending",
                f"`{key}` is only for edges into $END; {leads}",
                "move it to the edge that ends the thread, or remove it",
            )
