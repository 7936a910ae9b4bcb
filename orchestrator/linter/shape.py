"""Pass 3a, shape: `$START` and `$END`, edges into unknown names, status keys against statuses.

The keys under `graph.ROLE` must equal the statuses ROLE's schema can emit (docs/format.md section 5). When one
status is missing and one unknown key is there (or the unknown key is close to a missing one),
the key is read as the status misspelled: one problem with a did-you-mean, not two.
"""

from __future__ import annotations

import re
from typing import Any

from ..definition.models import END, RESUME, SINGLE_EXIT, START, SUSPEND
from ..definition.problems import did_you_mean
from .codes import Where
from .flow import reachable_roles
from .view import GraphView


def check_start_and_end(view: GraphView) -> None:
    graph = view.graph.graph
    if START not in graph:
        hint = did_you_mean(START, list(graph)) or "add `$START: {_: {role: ..., prompt: ...}}`"
        view.report(
            view.at("graph", key=True),
            "start-edge",
            "the graph has no `$START` entry, so a thread cannot begin",
            hint,
        )
    else:
        start = graph[START]
        if SINGLE_EXIT not in start:
            view.report(
                view.at("graph", START, key=True),
                "start-edge",
                "`$START` has no `_` edge, the edge every new thread takes",
                did_you_mean(SINGLE_EXIT, [k for k in start if k != RESUME]),
            )
        for key in start:
            if key not in (SINGLE_EXIT, RESUME):
                view.report(
                    view.at("graph", START, key, key=True),
                    "start-edge",
                    f"`$START` may only have `_` and `resume` edges, not '{key}'",
                    did_you_mean(key, [SINGLE_EXIT, RESUME])
                    or "`_` starts a thread; `resume` continues a completed one",
                )
    if END in graph:
        view.report(
            view.at("graph", END, key=True),
            "end-has-edges",
            "`$END` ends the thread, so it cannot have edges",
            "remove the `$END:` entry; route to `role: $END` instead",
        )


def check_edges(view: GraphView) -> None:
    _check_graph_keys(view)
    for edge in view.edges:
        if edge.role_target is not None and edge.target in (END, *view.roles):
            continue
        where = view.at(*edge.path, "role")
        if edge.target in (START, SUSPEND):
            view.report(
                where,
                "reserved-name",
                f"an edge cannot lead to `{edge.target}`",
                "route to a role, or to `$END` to finish"
                if edge.target == START
                else "any role may reply `$status: $SUSPEND` without an edge",
            )
            continue
        view.report(
            where,
            "unknown-role",
            f"edge {edge.source}.{edge.status} leads to '{edge.target}', which is not in roles:",
            did_you_mean(edge.target, [*view.roles, END])
            or f"roles: {', '.join(view.roles) or '(none)'}; `$END` finishes the thread",
        )
    reachable: set[str] | None = None  # only needed for a role without edges: computed once
    branch_roles = view.branch_roles()  # one step each, no edges: branch-has-edges says more
    for role in view.roles:
        statuses = view.statuses(role)
        if statuses is None or role in branch_roles:
            continue  # the schema problem is reported; its statuses are unknown
        if view.entry(role) is None:
            if reachable is None:
                reachable = reachable_roles(view)
            if role in reachable:
                _report_no_entry(view, role, statuses)
            continue
        _check_status_keys(view, role, statuses)


def _check_graph_keys(view: GraphView) -> None:
    for key in view.graph.graph:
        if key in (START, END) or key in view.roles:
            continue
        view.report(
            view.at("graph", key, key=True),
            "unknown-role",
            f"graph: has edges for '{key}', which is not in roles:",
            did_you_mean(key, [*view.roles, START]) or "declare the role under roles:",
        )


def _report_no_entry(view: GraphView, role: str, statuses: list[str]) -> None:
    view.report(
        view.at("roles", role, key=True),
        "missing-status-edge",
        f"role '{role}' is reached but has no edges under graph:",
        f"add `{role}: {{_: {{role: ..., prompt: ...}}}}` under graph:"
        if statuses == [SINGLE_EXIT]
        else f"add `{role}:` under graph: with an edge for each of: {', '.join(statuses)}",
    )


def _check_status_keys(view: GraphView, role: str, statuses: list[str]) -> None:
    found = view.entry(role)
    assert found is not None  # roles without an entry are handled by the caller
    key, edges = found
    missing = [s for s in statuses if s not in edges]
    unknown = [s for s in edges if s not in statuses]
    paired = _pair_renames(missing, unknown)
    for status in unknown:
        _report_unknown_status(view, role, key, status, statuses, paired.get(status))
    for status in missing:
        if status in paired.values():
            continue
        shown = "`_`" if status == SINGLE_EXIT else f"'{status}'"
        view.report(
            view.at("graph", key, key=True),
            "missing-status-edge",
            f"role '{role}' can reply {shown} but graph.{key} has no edge for it",
            f"add `{status}: {{role: ..., prompt: ...}}` under graph.{key}",
        )


def _pair_renames(missing: list[str], unknown: list[str]) -> dict[str, str]:
    """Unknown edge keys that are most likely a missing status misspelled."""
    paired: dict[str, str] = {}
    for status in unknown:
        hint = did_you_mean(status, [m for m in missing if m not in paired.values()])
        if hint:
            paired[status] = hint.split("'")[1]
    rest_missing = [m for m in missing if m not in paired.values()]
    rest_unknown = [u for u in unknown if u not in paired and u != SUSPEND]
    if len(rest_missing) == 1 and len(rest_unknown) == 1:
        paired[rest_unknown[0]] = rest_missing[0]
    return paired


def _report_unknown_status(
    view: GraphView, role: str, key: str, status: str, statuses: list[str], pair: str | None
) -> None:
    where = view.at("graph", key, status, key=True)
    if status == SUSPEND:
        view.report(
            where,
            "unknown-status-edge",
            "`$SUSPEND` needs no edge: a role that replies it suspends the thread",
            f"remove graph.{key}.$SUSPEND",
        )
        return
    if statuses == [SINGLE_EXIT]:
        hint = "this role's schema declares no `$status`, so its one exit is `_`"
    elif pair is not None:
        hint = _pair_hint(view, role, status, pair)
    else:
        hint = f"'{role}' can reply: {', '.join(statuses)}"
    view.report(
        where,
        "unknown-status-edge",
        f"graph.{key} has an edge for '{status}', a status role '{role}' cannot reply",
        hint,
    )


def _pair_hint(view: GraphView, role: str, status: str, pair: str) -> str:
    """The hint for an edge key one typo from a status the schema declares.

    Either side may be the typo, and a misspelt `const` must not be copied into the graph: the
    spelling the file uses more often (prompts and `output:` texts name statuses too) is taken
    as the real one; on a tie, both fixes are offered. The schema's place is named either way.
    """
    file, line, _ = _declared_at(view, role, pair)
    place = f"line {line}" if file == view.at()[0] else f"{file}:{line}"
    text = "\n".join(view.file_lines())
    uses = {
        w: len(re.findall(rf"(?<![\w$-]){re.escape(w)}(?![\w-])", text)) for w in (status, pair)
    }
    if uses[status] > uses[pair]:
        return (
            f"the schema of '{role}' declares '{pair}' ({place}): did you mean '{status}' "
            f"there? (or rename this edge to '{pair}')"
        )
    if uses[pair] > uses[status]:
        return f"did you mean '{pair}'? (the status the schema of '{role}' declares, {place})"
    return (
        f"the schema of '{role}' declares '{pair}' ({place}): correct whichever is misspelt, "
        f"'{pair}' there or '{status}' here"
    )


def _declared_at(view: GraphView, role: str, status: str) -> Where:
    """Where a role's schema declares a status: the `const` or `enum` entry under a `$status`
    property (the frontmatter itself when it cannot be found)."""
    base: tuple[str | int, ...] = ("roles", role, "frontmatter")

    def find(node: Any, path: tuple[str | int, ...]) -> tuple[str | int, ...] | None:
        if isinstance(node, dict):
            status_schema = node.get("properties", {})
            status_schema = (
                status_schema.get("$status") if isinstance(status_schema, dict) else None
            )
            if isinstance(status_schema, dict):
                if status_schema.get("const") == status:
                    return (*path, "properties", "$status", "const")
                enum = status_schema.get("enum")
                if isinstance(enum, list) and status in enum:
                    return (*path, "properties", "$status", "enum", enum.index(status))
            items: list[tuple[str | int, Any]] = list(node.items())
        elif isinstance(node, list):
            items = list(enumerate(node))
        else:
            return None
        for key, value in items:
            found = find(value, (*path, key))
            if found is not None:
                return found
        return None

    return view.at(*base, *(find(view.roles[role].frontmatter, ()) or ()))
