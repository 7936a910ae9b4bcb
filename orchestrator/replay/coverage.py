"""Edge coverage: which edges of a graph a set of recordings takes, and how often."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..actors.recording import Recording
from ..core.events import Event
from ..core.steps import thread_view
from ..definition.loader import load_graph
from ..definition.models import Graph
from .replayer import replay_recording
from .report import ReplayReport, _label

# --------------------------------------------------------------------------- edge coverage


@dataclass(frozen=True)
class EdgeCount:
    """One edge of the graph and how often the recordings take it."""

    source: str
    status: str
    target: str
    recordings: int  # how many recordings take it at least once
    traversals: int  # how many times in all

    @property
    def label(self) -> str:
        return _label((self.source, self.status, self.target))

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "status": self.status,
            "target": self.target,
            "recordings": self.recordings,
            "traversals": self.traversals,
        }


@dataclass
class CoverageReport:
    """Every edge of a graph with the number of recordings taking it."""

    graph: str
    edges: list[EdgeCount]
    reports: list[ReplayReport]

    @property
    def uncovered(self) -> list[EdgeCount]:
        return [e for e in self.edges if e.recordings == 0]

    @property
    def covered(self) -> int:
        return len(self.edges) - len(self.uncovered)

    @property
    def diverging(self) -> list[ReplayReport]:
        return [r for r in self.reports if not r.same_route]

    def to_dict(self) -> dict[str, Any]:
        return {
            "graph": self.graph,
            "recordings": [
                {
                    "recording": r.name,
                    "same_route": r.same_route,
                    "divergence": None if r.divergence is None else r.divergence.to_dict(),
                }
                for r in self.reports
            ],
            "edges": [e.to_dict() for e in self.edges],
            "covered": self.covered,
            "total": len(self.edges),
            "uncovered": [e.to_dict() for e in self.uncovered],
        }

    def describe(self) -> str:
        n = len(self.reports)
        lines = [
            f"edge coverage of '{self.graph}' by {n} recording{'s' if n != 1 else ''} "
            "(how many take each edge):"
        ]
        w_src = max((len(e.source) for e in self.edges), default=0)
        w_mid = max((len(f"--{e.status}-->") for e in self.edges), default=0)
        w_dst = max((len(e.target) for e in self.edges), default=0)
        for e in self.edges:
            arrow = f"--{e.status}-->"
            mark = "   not covered" if e.recordings == 0 else ""
            line = f"  {e.recordings:>3}  {e.source:<{w_src}} {arrow:<{w_mid}} {e.target:<{w_dst}}"
            lines.append((line + mark).rstrip())
        total = len(self.edges)
        percent = f" ({100 * self.covered // total}%)" if total else ""
        lines.append(f"{self.covered} of {total} edges covered{percent}")
        if self.uncovered:
            lines.append("not covered:")
            lines.extend(f"  {e.label}" for e in self.uncovered)
        for r in self.diverging:
            lines.append(
                f"note: {r.summary()}; its edges count only up to the divergence "
                f"(run `orchestrator replay` on it for details)"
            )
        return "\n".join(lines)


def edges_taken(events: list[Event]) -> list[tuple[str, str, str]]:
    """The edges a replayed thread took, in order: into each committed step, then into $END."""
    return thread_view(events).edges(committed_only=True)


def coverage(
    graph: Graph | str | Path, recordings: Iterable[Recording | str | Path]
) -> CoverageReport:
    """Replay every recording through `graph` and count the edges they take.

    Only edges the recordings back count: the edges into committed steps and into `$END`.
    A recording that diverges counts up to its divergence. The `$START.resume` edge is taken
    by the recording of a thread continued after an ending (its `resumed:` marks).
    """
    graph = graph if isinstance(graph, Graph) else load_graph(graph)
    reports = [replay_recording(graph, r) for r in recordings]
    counts: dict[tuple[str, str, str], list[int]] = {}
    for report in reports:
        taken = edges_taken(report.events)
        for key in set(taken):
            counts.setdefault(key, [0, 0])[0] += 1
        for key in taken:
            counts.setdefault(key, [0, 0])[1] += 1
    edges = [  # a fan-out edge counts once per branch role and for its join
        EdgeCount(source, status, target.role, *counts.get((source, status, target.role), [0, 0]))
        for source, status, _, edge in graph.routes()
        for target in edge.targets()
    ]
    return CoverageReport(graph.name, edges, reports)
