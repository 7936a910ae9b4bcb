"""Pass 3d, fan-outs and subgraphs: what only these edges can get wrong (docs/format.md
sections 14 and 15).

- branch-has-edges: a role some fan-out starts as a branch has a section under graph:. A branch
  is exactly one step; what follows it is the fan-out's join.
- for-each-not-list: a `for_each` names nothing known where the edge is taken, or a value
  declared with a type other than array.
- inputs-not-subgraph: `inputs:` on an edge into a role that is not a subgraph role.
- missing-input / unknown-input: an edge into a subgraph role gives its graph fewer inputs than
  it requires, or one it does not declare (without `inputs:` the prompt is the child's `task`).
"""

from __future__ import annotations

from typing import Any

from ..definition.models import END
from ..definition.problems import did_you_mean
from .dataflow import flow
from .scope import Scope, schema_type
from .view import EdgeKind, GraphView, ResolvedEdge


def check_fanouts(view: GraphView) -> None:
    for role in sorted(view.branch_roles(), key=list(view.roles).index):
        found = view.entry(role)
        if found is not None:
            view.report(
                view.at("graph", found[0], key=True),
                "branch-has-edges",
                f"role '{role}' runs as a branch of a fan-out, so it has no edges of its own",
                "a branch is one step; route what follows from the fan-out's `join:` edge",
            )
    facts = flow(view)
    for edge in view.edges:
        if edge.kind is EdgeKind.BRANCH and view.raw_edge(edge).for_each is not None:
            _check_list(view, edge, Scope.for_edge(view, edge, facts))
        _check_inputs(view, edge)


def _check_list(view: GraphView, edge: ResolvedEdge, scope: Scope) -> None:
    name = view.raw_edge(edge).for_each
    where = view.at(*edge.edge_path, "for_each")
    listed = scope.the_list()
    if not listed.ok:
        view.report(
            where,
            "for-each-not-list",
            f"{edge.label}: `for_each: {name}` names no list here: {listed.message}",
            listed.hint or "name a field of this output, $inputs.NAME or $steps.ROLE.FIELD",
        )
        return
    types = schema_type(listed.schema)
    if types is not None and "array" not in types:
        view.report(
            where,
            "for-each-not-list",
            f"{edge.label}: `for_each: {name}` is declared as {' or '.join(sorted(types))}, "
            "not a list",
            "declare it with `type: array`, or name a list",
        )


def _check_inputs(view: GraphView, edge: ResolvedEdge) -> None:
    if edge.role_target in (None, END):
        return
    role = str(edge.role_target)
    raw = view.raw_target(edge)
    if not view.roles[role].is_subgraph:
        if raw.inputs is not None:
            view.report(
                view.at(*edge.path, "inputs", key=True),
                "inputs-not-subgraph",
                f"{edge.label}: `inputs:` is for an edge into a subgraph role; '{role}' is not one",
                "say what the role should do in `prompt:`",
            )
        return
    child = view.graph.subgraph(role)
    if child is None:
        return  # unknown-graph or graph-cycle is reported by the loader
    schema = child.input_schema
    props: Any = schema.get("properties")
    declared = list(props) if isinstance(props, dict) else []
    required_raw: Any = schema.get("required")
    required = (
        [r for r in required_raw if isinstance(r, str)] if isinstance(required_raw, list) else []
    )
    given = list(raw.inputs) if raw.inputs is not None else ["task"]
    for name in given:
        if name not in declared:
            view.report(
                view.at(*edge.path, "inputs", name, key=True)
                if raw.inputs is not None
                else view.at(*edge.path, "prompt"),
                "unknown-input",
                f"{edge.label}: graph '{child.name}' (role '{role}') has no input '{name}'"
                + ("; without `inputs:` the prompt is its `task`" if raw.inputs is None else ""),
                did_you_mean(name, declared)
                or f"its inputs: {', '.join(declared) or '(none)'}; give them under `inputs:`",
            )
    missing = [r for r in required if r not in given]
    if missing:
        view.report(
            view.at(*edge.path, "inputs" if raw.inputs is not None else "role", key=True),
            "missing-input",
            f"{edge.label}: graph '{child.name}' (role '{role}') requires input "
            + ", ".join(f"'{m}'" for m in missing),
            "give each under `inputs:` on this edge, as a template",
        )
