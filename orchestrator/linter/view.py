"""The linter's reading of one graph, shared by every pass: edges, statuses, positions, problems.

Misspelled role names (an unknown name with one close match in `roles:`) are read as the role
they resemble, so one typo gives one problem (from the shape pass), not a cascade from the
passes that follow edges.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from ..definition.contract import Contract
from ..definition.models import END, RESUME, SINGLE_EXIT, START, Edge, Graph, Join, Target
from ..definition.problems import Problem, did_you_mean
from .codes import Where, internal_error, problem

# One route of `graph:` (source, status, its place in a guarded list, the edge) and its targets.
_Route = tuple[str, str, int, Edge, list[Target]]


class EdgeKind(Enum):
    """What one target of an edge is (docs/format.md section 15)."""

    PLAIN = "plain"  # an edge that does not fan out
    BRANCH = "branch"  # one branch of a `parallel` list, or a `for_each` edge's role
    JOIN = "join"  # a fan-out's `join` edge


@dataclass(frozen=True)
class ResolvedEdge:
    """One target of an edge of `graph:` (the edge itself, a branch of it or its join), with its
    source and target read as roles (typos as their match)."""

    source: str  # $START or a role (as written in graph:)
    status: str
    target: str  # as written in the edge
    role_source: str | None  # the role the source resolves to (typos read as their match)
    role_target: str | None  # the role or $END the target resolves to, None when unknown
    index: int | None = None  # its place in a guarded list of edges; None for a lone edge
    kind: EdgeKind = EdgeKind.PLAIN
    branch: int | None = None  # its place in a `parallel` list
    # On a join: the branch roles (resolved) and whether each surely ran (`parallel`: yes;
    # `for_each`: no, the list may be empty).
    joined: tuple[str, ...] = ()
    joined_surely: bool = False

    @property
    def edge_path(self) -> tuple[str | int, ...]:
        """Where the whole edge is written: `graph.SOURCE.STATUS`, plus its index in a list."""
        base: tuple[str | int, ...] = ("graph", self.source, self.status)
        return base if self.index is None else (*base, self.index)

    @property
    def path(self) -> tuple[str | int, ...]:
        """Where this target is written: the edge, one of its `parallel` branches, or its join."""
        if self.kind is EdgeKind.JOIN:
            return (*self.edge_path, "join")
        if self.branch is not None:
            return (*self.edge_path, "parallel", self.branch)
        return self.edge_path

    @property
    def label(self) -> str:
        """How problems name it: `SOURCE.STATUS[i]`, plus `.parallel[j]` or `.join`."""
        index = "" if self.index is None else f"[{self.index}]"
        tail = (
            ".join"
            if self.kind is EdgeKind.JOIN
            else ("" if self.branch is None else f".parallel[{self.branch}]")
        )
        return f"{self.source}.{self.status}{index}{tail}"


def contract_usable(contract: Contract) -> bool:
    """Statuses can be trusted unless the schema itself is broken."""
    return not any(
        i.code in ("invalid-json-schema", "bad-status-schema", "bad-type") for i in contract.issues
    )


class GraphView:
    """One graph as the passes see it; the passes add what they find to `problems`."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.problems: list[Problem] = []
        self.roles = graph.roles
        # Each edge's targets, asked for once: `Edge.targets()` builds new models at every call.
        routes: list[_Route] = [(s, st, i, e, e.targets()) for s, st, i, e in graph.routes()]
        self.alias = self._aliases(routes)
        # The raw edge and target of each of `edges`, by the resolved edge's identity (`edges`
        # keeps each alive): the passes ask for them again and again.
        self._raw: dict[int, tuple[Edge, Target]] = {}
        self.edges = self._edges(routes)
        self._file_lines: list[str] | None = None
        self._statuses: dict[str, list[str] | None] = {}

    # ----------------------------------------------------------------- reporting

    def at(self, *path: str | int, key: bool = False) -> Where:
        return self.graph.position(*path, key=key)

    def report(self, where: Where, code: str, message: str, hint: str = "") -> None:
        self.problems.append(problem(where, code, message, hint))

    def internal_error(self, exc: BaseException) -> None:
        self.problems.append(internal_error(self.at()[0], exc))

    def file_lines(self) -> list[str]:
        """The graph file's lines (for positions inside block-scalar prompts); [] if unknown."""
        if self._file_lines is None:
            self._file_lines = []
            if self.graph.path is not None:
                with contextlib.suppress(OSError, UnicodeDecodeError):
                    self._file_lines = Path(self.graph.path).read_text("utf-8-sig").split("\n")
        return self._file_lines

    # ----------------------------------------------------------------- names

    def _aliases(self, routes: list[_Route]) -> dict[str, str]:
        """Unknown role names (edge targets, graph keys) with one close match in roles:."""
        names = {t.role for *_, targets in routes for t in targets}
        names |= set(self.graph.graph)
        alias: dict[str, str] = {}
        for name in names - set(self.roles) - {START, END}:
            hint = did_you_mean(name, list(self.roles))
            if hint:
                alias[name] = hint.split("'")[1]
        return alias

    def role_of(self, name: str) -> str | None:
        if name in self.roles:
            return name
        return self.alias.get(name)

    def _edges(self, routes: list[_Route]) -> list[ResolvedEdge]:
        found = []
        for source, status, i, edge, targets in routes:
            source_role = None if source == START else self.role_of(source)
            index = i if isinstance(self.graph.graph[source][status], list) else None
            joined = tuple(r for b in edge.branches() if (r := self.role_of(b.role)) is not None)
            for j, goal in enumerate(targets):
                kind, branch = EdgeKind.PLAIN, None
                if isinstance(goal, Join):
                    kind = EdgeKind.JOIN
                elif edge.fans_out:
                    kind, branch = EdgeKind.BRANCH, (j if edge.parallel is not None else None)
                target = END if goal.role == END else self.role_of(goal.role)
                found.append(
                    ResolvedEdge(
                        source,
                        status,
                        goal.role,
                        source_role,
                        target,
                        index,
                        kind,
                        branch,
                        joined if kind is EdgeKind.JOIN else (),
                        kind is EdgeKind.JOIN and edge.parallel is not None,
                    )
                )
                self._raw[id(found[-1])] = (edge, goal)
        return found

    def branch_roles(self) -> set[str]:
        """The roles some fan-out edge starts as a branch (they have no graph: section)."""
        return {
            e.role_target
            for e in self.edges
            if e.kind is EdgeKind.BRANCH and e.role_target not in (None, END)
        }

    # ----------------------------------------------------------------- statuses and edges

    def statuses(self, role: str) -> list[str] | None:
        """The statuses a role can reply, or None when its schema is broken."""
        if role not in self._statuses:
            contract = self.roles[role].contract
            self._statuses[role] = contract.status_names if contract_usable(contract) else None
        return self._statuses[role]

    def entry(self, role: str) -> tuple[str, dict[str, object]] | None:
        """The graph: key holding a role's edges (its own, or one misspelling of it)."""
        if role in self.graph.graph:
            return role, dict(self.graph.graph[role])
        keys = [k for k in self.graph.graph if self.alias.get(k) == role]
        return (keys[0], dict(self.graph.graph[keys[0]])) if len(keys) == 1 else None

    def live(self, edge: ResolvedEdge) -> bool:
        """Can this edge be taken at all (its source can emit its status)?"""
        if edge.source == START:
            return edge.status in (SINGLE_EXIT, RESUME)
        if edge.role_source is None:
            return False
        statuses = self.statuses(edge.role_source)
        return statuses is None or edge.status in statuses

    def raw_edge(self, edge: ResolvedEdge) -> Edge:
        """The whole edge as written in the graph."""
        known = self._raw.get(id(edge))
        if known is not None:
            return known[0]
        return self.graph.edges(edge.source, edge.status)[edge.index or 0]

    def raw_target(self, edge: ResolvedEdge) -> Target:
        """This target as written: the edge, one of its branches, or its join."""
        known = self._raw.get(id(edge))
        if known is not None:
            return known[1]
        raw = self.raw_edge(edge)
        if edge.kind is EdgeKind.JOIN and raw.join is not None:
            return raw.join
        if edge.branch is not None and raw.parallel is not None:
            return raw.parallel[edge.branch]
        return raw.targets()[0]
