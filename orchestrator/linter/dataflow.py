"""What is known when an edge is taken: the forward analysis behind `$steps.ROLE.FIELD` checks.

For every role the analysis computes, on entry, (a) the roles that have *certainly* completed on
every path from `$START` (intersection over incoming edges: the roles that dominate it) and (b)
for each role that *may* have run, the statuses its latest reply may carry (union over incoming
edges). Taking the edge `graph[S][st]` adds S to (a) and makes `{st}` S's only latest status in
(b). `$steps.ROLE.FIELD` is then sound when ROLE is in (a) and FIELD is declared for every status
in (b)[ROLE]. `$START.resume` is taken after a thread completed, so it starts from what holds on
entry to `$END`.

Theory of operation
-------------------
Both facts are kept as bit sets that only grow: (a) as its complement, the roles that *may not*
have run (one bit per role), (b) as the (role, status) pairs that may be a latest reply (one bit
per pair, numbered as they are first met: `FactSpace`). Every edge is then a gen/kill function,
`out = (in & keep) | gen` on each set, and the facts on entry to a node are the union of what
its incoming edges carry from reached nodes. The fixpoint is found by a work-list: a node is
looked at again only when what reaches it grew, and then only its own outgoing edges are
recomputed. Information travels forward along a graph and backward along its loops (a review
chain's `back` edges carry what later roles did to every earlier one), so the work-list takes
the dirty nodes in sweeps that alternate direction: in reverse postorder, then in postorder,
and so on; a node made dirty ahead of the sweep is taken in the same sweep. A chain of n roles
whose roles each may send work back one step settles in three sweeps; `Flow.visits` counts the
edges looked at. Whatever the order, the result is the same least fixpoint (the functions are
monotone), so the order is only a matter of speed.
"""

from __future__ import annotations

import heapq
import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from ..definition.models import END, RESUME, START
from .view import EdgeKind, GraphView, ResolvedEdge


class FactSpace:
    """The numbering of one graph's bits: one per role, one per (role, status) pair."""

    def __init__(self, roles: Iterable[str]):
        self.role_bits = {role: 1 << i for i, role in enumerate(roles)}
        self.all_roles = (1 << len(self.role_bits)) - 1
        self.pair_bits: dict[tuple[str, str], int] = {}
        self.by_role: dict[str, list[tuple[str, int]]] = {}  # role -> its (status, bit)s
        self.role_pairs: dict[str, int] = {}  # role -> the union of its pairs' bits

    def pair(self, role: str, status: str) -> int:
        """The bit of (role, status), numbered when first asked for."""
        bit = self.pair_bits.get((role, status))
        if bit is None:
            bit = 1 << len(self.pair_bits)
            self.pair_bits[(role, status)] = bit
            self.by_role.setdefault(role, []).append((status, bit))
            self.role_pairs[role] = self.role_pairs.get(role, 0) | bit
        return bit

    def role(self, role: str) -> int:
        return self.role_bits.get(role, 0)


@dataclass(frozen=True)
class Facts:
    """What holds at one point of the graph, as bit sets over a `FactSpace`."""

    space: FactSpace
    unsure: int  # roles that may not have run on some path to here (the complement of `ran`)
    pairs: int  # (role, status) pairs a role's latest reply may have here

    def has_run(self, role: str) -> bool:
        """Has the role completed on every path to here?"""
        bit = self.space.role(role)
        return bool(bit) and not self.unsure & bit

    def statuses(self, role: str) -> frozenset[str]:
        """The statuses the role's latest reply may have here (empty: it has not run)."""
        if not self.pairs & self.space.role_pairs.get(role, 0):
            return frozenset()
        return frozenset(s for s, bit in self.space.by_role[role] if self.pairs & bit)

    @property
    def ran(self) -> frozenset[str]:
        return frozenset(r for r, bit in self.space.role_bits.items() if not self.unsure & bit)

    @property
    def latest(self) -> dict[str, frozenset[str]]:
        return {r: found for r in self.space.by_role if (found := self.statuses(r))}

    def after(self, role: str, status: str) -> Facts:
        """Once `role` replied `status`: it has run, and that is its latest status."""
        space = self.space
        pair = space.pair(role, status)  # first, so that the kill below covers it
        pairs = (self.pairs & ~space.role_pairs[role]) | pair
        return Facts(space, self.unsure & ~space.role(role), pairs)

    def joined(
        self, roles: Iterable[str], statuses: Mapping[str, Iterable[str]], surely: bool
    ) -> Facts:
        """After a fan-out's join: its branch roles may have replied any of their statuses,
        and surely ran when the fan-out was `parallel`."""
        space = self.space
        pairs, ran = self.pairs, 0
        for role in roles:
            for status in statuses.get(role, ()):
                pairs |= space.pair(role, status)
            ran |= space.role(role)
        return Facts(space, self.unsure & ~ran if surely else self.unsure, pairs)


class Flow(Mapping[str, Facts]):
    """The facts on entry to each reached role and to $END (absent: never reached)."""

    def __init__(self, space: FactSpace, facts: dict[str, Facts], visits: int):
        self.space = space
        self.facts = facts
        self.visits = visits  # how many times the work-list computed an edge's facts
        self.start = Facts(space, space.all_roles, 0)  # nothing has run yet

    def __getitem__(self, node: str) -> Facts:
        return self.facts[node]

    def __iter__(self) -> Iterator[str]:
        return iter(self.facts)

    def __len__(self) -> int:
        return len(self.facts)


_FLOWS: weakref.WeakKeyDictionary[GraphView, Flow] = weakref.WeakKeyDictionary()


def flow(view: GraphView) -> Flow:
    """Facts on entry to each reached role and to $END; computed once per view (the fan-out and
    template passes both ask)."""
    found = _FLOWS.get(view)
    if found is None:
        found = _FLOWS[view] = _solve(view)
    return found


# One edge as the work-list sees it: its target, and `out = (in & keep) | gen` on each bit set
# (keep_unsure, keep_pairs, gen_pairs).
_Step = tuple[str, int, int, int]


def _steps(view: GraphView, space: FactSpace) -> dict[str, list[_Step]]:
    """Each node's outgoing edges that can be taken, as gen/kill functions."""
    statuses = _join_statuses(view)
    taken = [e for e in view.edges if view.live(e) and e.role_target is not None]
    # Number every pair first: a role's kill must cover each of its pairs that any edge gens.
    for edge in taken:
        if edge.role_source is not None:
            space.pair(edge.role_source, edge.status)
    for role, found in statuses.items():
        for status in found:
            space.pair(role, status)
    successors: dict[str, list[_Step]] = {}
    for edge in taken:
        keep_unsure, keep_pairs, gen_pairs = -1, -1, 0  # -1: every bit kept
        if edge.source == START:
            # $START.resume is taken after $END: it runs again whenever $END's facts change
            node = END if edge.status == RESUME else START
        else:
            node = str(edge.role_source)
            gen_pairs = space.pair(node, edge.status)
            keep_unsure = ~space.role(node)
            keep_pairs = ~space.role_pairs[node]
        if edge.kind is EdgeKind.JOIN:
            for role in edge.joined:
                for status in statuses[role]:
                    gen_pairs |= space.pair(role, status)
                if edge.joined_surely:
                    keep_unsure &= ~space.role(role)
        successors.setdefault(node, []).append(
            (str(edge.role_target), keep_unsure, keep_pairs, gen_pairs)
        )
    return successors


def _join_statuses(view: GraphView) -> dict[str, list[str]]:
    return {
        role: view.statuses(role) or []
        for edge in view.edges
        if edge.kind is EdgeKind.JOIN
        for role in edge.joined
    }


def _order(successors: Mapping[str, list[_Step]]) -> dict[str, int]:
    """Each node reachable from $START, numbered in reverse postorder of a depth-first walk."""
    post: list[str] = []
    seen = {START}
    stack = [(START, iter(successors.get(START, ())))]
    while stack:
        node, rest = stack[-1]
        step = next(rest, None)
        if step is None:
            stack.pop()
            post.append(node)
        elif step[0] not in seen:
            seen.add(step[0])
            stack.append((step[0], iter(successors.get(step[0], ()))))
    return {node: i for i, node in enumerate(reversed(post))}


def _solve(view: GraphView) -> Flow:
    space = FactSpace(view.roles)
    successors = _steps(view, space)
    rank = _order(successors)
    unsure: dict[str, int] = {START: space.all_roles}
    pairs: dict[str, int] = {START: 0}
    sign = 1  # the sweep's direction: 1 in reverse postorder, -1 in postorder
    now = [0]  # the sweep's heap of dirty nodes, as sign * rank ($START's rank is 0)
    queued = {START}  # the nodes in `now`
    later: set[str] = set()  # dirty nodes behind the sweep: the next sweep's
    node_at = {i: node for node, i in rank.items()}
    visits = 0
    while now or later:
        if not now:
            sign = -sign
            now = [sign * rank[n] for n in later]
            heapq.heapify(now)
            queued, later = later, set()
        node = node_at[sign * heapq.heappop(now)]
        queued.discard(node)
        here_unsure, here_pairs = unsure[node], pairs[node]
        for target, keep_unsure, keep_pairs, gen_pairs in successors.get(node, ()):
            visits += 1
            out_unsure = here_unsure & keep_unsure
            out_pairs = (here_pairs & keep_pairs) | gen_pairs
            if target in unsure:
                out_unsure |= unsure[target]
                out_pairs |= pairs[target]
                if out_unsure == unsure[target] and out_pairs == pairs[target]:
                    continue
            unsure[target], pairs[target] = out_unsure, out_pairs
            if target in queued:
                continue
            if sign * rank[target] > sign * rank[node]:  # ahead: this sweep takes it
                queued.add(target)
                heapq.heappush(now, sign * rank[target])
            elif target not in later:
                later.add(target)
    facts = {n: Facts(space, unsure[n], pairs[n]) for n in unsure if n != START}
    return Flow(space, facts, visits)


def edge_facts(edge: ResolvedEdge, state: Flow, view: GraphView) -> Facts | None:
    """What holds right after the edge is taken (when its template renders); None: never taken.

    A join edge is taken once every branch committed: a `parallel` edge's branch roles have
    surely run, a `for_each` edge's may have (its list may be empty); either may have replied
    any of its statuses. A fan-out's `$START` edge has no source step.
    """
    facts: Facts | None
    if edge.source == START:
        facts = state.get(END) if edge.status == RESUME else state.start
    elif edge.role_source is None or edge.role_source not in state:
        return None
    else:
        facts = state[edge.role_source].after(edge.role_source, edge.status)
    if facts is None or edge.kind is not EdgeKind.JOIN:
        return facts
    statuses = {role: view.statuses(role) or [] for role in edge.joined}
    return facts.joined(edge.joined, statuses, edge.joined_surely)
