"""Pass 3b, flow: which roles `$START` reaches, and which reached roles can never reach `$END`.

A role no edge leads to is unused (a warning: the graph runs, the role never does); a role that
only unreachable roles lead to is unreachable; a reached role from which no sequence of edges
that can be taken reaches `$END` would loop until a limit suspends the thread.
"""

from __future__ import annotations

from ..definition.models import END, SINGLE_EXIT, START
from .view import EdgeKind, GraphView


def reachable_roles(view: GraphView) -> set[str]:
    """Roles reachable from $START (typos read as their match)."""
    successors: dict[str, set[str]] = {}
    for edge in view.edges:
        source = START if edge.source == START else edge.role_source
        if source is not None and edge.role_target not in (None, END):
            successors.setdefault(source, set()).add(str(edge.role_target))
    seen: set[str] = set()
    todo = [START]
    while todo:
        for target in successors.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def check_reachability(view: GraphView) -> None:
    first = view.graph.edge(START, SINGLE_EXIT)
    if first is None or any(
        t.role != END and view.role_of(t.role) is None for t in first.targets()
    ):
        return  # start-edge or unknown-role is reported; everything would be unreachable
    reachable = reachable_roles(view)
    targeted = {e.role_target for e in view.edges if e.role_target is not None}
    for role in view.roles:
        if role in reachable:
            continue
        if role not in targeted:
            view.report(
                view.at("roles", role, key=True),
                "unused-role",
                f"role '{role}' is declared but no edge leads to it",
                "route an edge to it, or remove it",
            )
        else:
            found = view.entry(role)
            where = (
                view.at("graph", found[0], key=True) if found else view.at("roles", role, key=True)
            )
            view.report(
                where,
                "unreachable-role",
                f"role '{role}' cannot be reached from $START: only unreachable roles lead to it",
                "route an edge from $START or a reachable role to it",
            )
    _check_paths_to_end(view, reachable)


def _check_paths_to_end(view: GraphView, reachable: set[str]) -> None:
    # Roles whose exits are incomplete count as reaching $END: missing-status-edge already
    # says what to add, and guessing where the missing edge goes would only add noise.
    # The same goes for a role with an edge into an unknown name.
    finishing: set[str] = {END}
    branch_roles = view.branch_roles()
    for role in view.roles:
        found = view.entry(role)
        statuses = view.statuses(role)
        if role in branch_roles:
            # a branch is one step, it has no edges; its fan-out goes on through the join
            # (whose role is checked on its own, and branch edges are not followed back)
            finishing.add(role)
        elif found is None or statuses is None or any(s not in found[1] for s in statuses):
            finishing.add(role)
    finishing.update(e.role_source for e in view.edges if e.role_source and e.role_target is None)
    predecessors: dict[str, set[str]] = {}
    for edge in view.edges:
        # a fan-out goes on through its join: its branches lead nowhere of their own
        if edge.kind is EdgeKind.BRANCH:
            continue
        if edge.role_source and edge.role_target and view.live(edge):
            predecessors.setdefault(edge.role_target, set()).add(edge.role_source)
    todo = list(finishing)
    while todo:
        for source in predecessors.get(todo.pop(), ()):
            if source not in finishing:
                finishing.add(source)
                todo.append(source)
    for role in sorted(reachable - finishing, key=list(view.roles).index):
        found = view.entry(role)
        assert found is not None  # roles without an entry count as finishing
        view.report(
            view.at("graph", found[0], key=True),
            "no-path-to-end",
            f"no sequence of edges from role '{role}' reaches $END",
            "the thread could only stop at a limit; route one status towards $END",
        )
