"""What is known when an edge is taken: the forward analysis behind `$steps.ROLE.FIELD` checks.

For every role the analysis computes, on entry, (a) the roles that have *certainly* completed on
every path from `$START` (intersection over incoming edges: the roles that dominate it) and (b)
for each role that *may* have run, the statuses its latest reply may carry (union over incoming
edges). Taking the edge `graph[S][st]` adds S to (a) and makes `{st}` S's only latest status in
(b). `$steps.ROLE.FIELD` is then sound when ROLE is in (a) and FIELD is declared for every status
in (b)[ROLE]. `$START.resume` is taken after a thread completed, so it starts from what holds on
entry to `$END`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..spec.models import END, RESUME, START
from .view import EdgeKind, GraphView, ResolvedEdge


@dataclass(frozen=True)
class Facts:
    """What holds at one point of the graph."""

    ran: frozenset[str]  # roles that completed on every path to here
    latest: Mapping[str, frozenset[str]]  # role -> statuses its latest reply may have

    def after(self, role: str, status: str) -> Facts:
        return Facts(self.ran | {role}, {**self.latest, role: frozenset({status})})

    def meet(self, other: Facts) -> Facts:
        latest = dict(self.latest)
        for role, statuses in other.latest.items():
            latest[role] = latest.get(role, frozenset()) | statuses
        return Facts(self.ran & other.ran, latest)


EMPTY_FACTS = Facts(frozenset(), {})


def flow(view: GraphView) -> dict[str, Facts]:
    """Facts on entry to each reached role and to $END (absent: never reached).

    A worklist fixpoint: facts only shrink (`ran`) or grow (`latest`), so meeting a node's facts
    with each new fact that reaches it converges, and only the successors of a changed node
    are looked at again.
    """
    successors: dict[str, list[ResolvedEdge]] = {}
    for edge in view.edges:
        if view.live(edge) and edge.role_target is not None:
            # $START.resume is taken after $END: it runs again whenever $END's facts change
            node = END if edge.status == RESUME and edge.source == START else edge.role_source
            successors.setdefault(node or START, []).append(edge)
    state: dict[str, Facts] = {}
    todo = [START]
    while todo:
        for edge in successors.get(todo.pop(), ()):
            out = edge_facts(edge, state, view)
            target = edge.role_target
            if out is None or target is None:
                continue
            new = state[target].meet(out) if target in state else out
            if new != state.get(target):
                state[target] = new
                todo.append(target)
    return state


def edge_facts(
    edge: ResolvedEdge, state: Mapping[str, Facts], view: GraphView | None = None
) -> Facts | None:
    """What holds right after the edge is taken (when its template renders); None: never taken.

    A join edge is taken once every branch committed: a `parallel` edge's branch roles have
    surely run, a `for_each` edge's may have (its list may be empty); either may have replied
    any of its statuses. A fan-out's `$START` edge has no source step.
    """
    if edge.source == START:
        facts = state.get(END) if edge.status == RESUME else EMPTY_FACTS
    elif edge.role_source is None or edge.role_source not in state:
        return None
    else:
        facts = state[edge.role_source].after(edge.role_source, edge.status)
    if facts is None or edge.kind is not EdgeKind.JOIN or view is None:
        return facts
    latest = dict(facts.latest)
    for role in edge.joined:
        statuses = view.statuses(role) or []
        latest[role] = latest.get(role, frozenset()) | frozenset(statuses)
    ran = facts.ran | set(edge.joined) if edge.joined_surely else facts.ran
    return Facts(frozenset(ran), latest)
