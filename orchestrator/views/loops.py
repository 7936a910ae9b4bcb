"""The loops of a graph: the arrows that send work back to a role still on the way to them.

A depth-first walk from `$START` follows the arrows in file order (a fan-out's to each branch,
and from each branch to the join's target, as `render/diagram.py` draws them); an arrow into a
role still on the walk's path is a back edge. For a graph written in the order work flows
(planner, developer, reviewer, tester) they are exactly the arrows that return to an earlier
role. The live terminal view (`cli/live.py`) says "back to ROLE" when a step takes one. (The
web page's drawing is laid out by Graphviz's `dot`, `render/layout.py`, which finds loops
itself.)
"""

from __future__ import annotations

from ..definition.models import END, START, Graph
from ..render.diagram import drawn_edges

Arrow = tuple[str, str, str]  # (from, status, to) as drawn


def arrows_of(graph: Graph) -> list[Arrow]:
    """Every arrow as (from, status, to), in file order."""
    return [(d.source, d.key[1], d.target) for d in drawn_edges(graph)]


def back_edges(graph: Graph) -> set[Arrow]:
    """The arrows into a node that is on the depth-first path from `$START`: the loops."""
    arrows = arrows_of(graph)
    found: set[Arrow] = set()
    done: set[str] = set()
    on_path: list[str] = []

    def walk(node: str) -> None:
        on_path.append(node)
        for arrow in arrows:
            source, _, target = arrow
            if source != node:
                continue
            if target in on_path:
                found.add(arrow)
            elif target not in done and target != END:
                walk(target)
        on_path.pop()
        done.add(node)

    walk(START)
    return found


def sends_back(graph: Graph) -> set[tuple[str, str]]:
    """(role, status) of the steps' answers whose edge is a loop."""
    return {(source, status) for source, status, _ in back_edges(graph)}
