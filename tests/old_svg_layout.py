"""KEPT FOR THE TESTS ONLY: the hand-written layout the web page used before Graphviz
(orchestrator/web/svg.py until issue 26), so that tests/test_graph_geometry.py can show its
geometry check finds the overlaps and crossings this layout made (the control).

A graph drawn as SVG on the server, with the path a thread took: no JavaScript, no network.

Layout, in three passes, enough for graphs of a few dozen roles:

1. Ranks. The graph's loops (`views/loops.py`: back edges of a depth-first walk from `$START`,
   shared with the live view) are set aside. Without them the graph is acyclic, and each role's rank is its
   longest distance from `$START`; `$END` sits alone below the deepest role, and roles the
   walk never reached sit in one row above it.
2. Order within a rank: file order, then one pass that sorts each rank by the mean position of
   its parents in the rank above (fewer crossings for the usual planner/developer/reviewer
   shapes).
3. Edges: forward edges are vertical Bézier curves between the boxes; back edges and
   self-loops leave a box on its right and bulge to the right by how many ranks they climb, so
   a rework loop reads as one. Parallel edges between the same two boxes fan out.

What a thread took is drawn as `orchestrator graph --thread` draws it in Mermaid: its edges
thick and red with "×N" when taken more than once, the roles it visited shaded, with their visit
count; the role of the step in flight gets a blue outline. Every box and edge carries `data-`
attributes naming it, so a page (or a test) can find it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from html import escape

from orchestrator.definition.models import END, START, Graph
from orchestrator.render.diagram import TAKEN_COLOUR, VISITED_FILL, Taken, drawn_edges, nodes_of
from orchestrator.views.loops import Arrow as EdgeKey
from orchestrator.views.loops import arrows_of, back_edges

CHAR_W = 7.4  # px per character of the 13px sans-serif label font, near enough
BOX_H = 34
RANK_GAP = 96
BOX_GAP = 48
MARGIN = 24
CURRENT_COLOUR = "#1f6feb"


@dataclass(frozen=True)
class Box:
    name: str
    label: str
    x: float  # centre
    y: float  # top
    w: float

    @property
    def bottom(self) -> float:
        return self.y + BOX_H

    @property
    def right(self) -> float:
        return self.x + self.w / 2


def ranks_of(graph: Graph, loops: set[EdgeKey]) -> dict[str, int]:
    """Each node's row: the longest path from `$START` over the edges that are not loops."""
    forward = [e for e in arrows_of(graph) if e not in loops and e[2] != END]
    rank: dict[str, int] = {START: 0}
    for _ in range(len(nodes_of(graph))):  # relaxation: at most one pass per node
        changed = False
        for source, _, target in forward:
            if source in rank and rank.get(target, -1) < rank[source] + 1:
                rank[target] = rank[source] + 1
                changed = True
        if not changed:
            break
    deepest = max(rank.values(), default=0)
    lost = [n for n in nodes_of(graph) if n not in rank and n != END]
    for name in lost:
        rank[name] = deepest + 1
    rank[END] = deepest + (2 if lost else 1)
    return rank


def layout(graph: Graph, visits: Mapping[str, int]) -> tuple[dict[str, Box], float, float]:
    """Boxes by node name, and the drawing's width and height."""
    loops = back_edges(graph)
    rank = ranks_of(graph, loops)
    rows: dict[int, list[str]] = {}
    for name in nodes_of(graph):
        rows.setdefault(rank[name], []).append(name)
    parents: dict[str, list[str]] = {}
    for source, _, target in arrows_of(graph):
        if (source, _, target) not in loops:
            parents.setdefault(target, []).append(source)
    labels = {n: _node_label(n, visits.get(n, 0)) for n in nodes_of(graph)}
    widths = {n: max(70.0, len(labels[n]) * CHAR_W + 28) for n in labels}
    row_w = {
        r: sum(widths[n] for n in names) + BOX_GAP * (len(names) - 1) for r, names in rows.items()
    }
    width = max(row_w.values(), default=200) + 2 * MARGIN + 140  # room for loops on the right
    boxes: dict[str, Box] = {}
    for r in sorted(rows):
        names = rows[r]
        if r > 0:  # barycentre: under the mean of the parents already placed
            names.sort(key=lambda n: _mean([boxes[p].x for p in parents.get(n, []) if p in boxes]))
        x = (width - 140 - row_w[r]) / 2
        for name in names:
            boxes[name] = Box(
                name, labels[name], x + widths[name] / 2, MARGIN + r * RANK_GAP, widths[name]
            )
            x += widths[name] + BOX_GAP
    height = MARGIN * 2 + max(rank.values()) * RANK_GAP + BOX_H
    return boxes, width, height


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("inf")


def _node_label(name: str, visits: int) -> str:
    return f"{name} ×{visits}" if visits > 1 else name


def to_svg(
    graph: Graph,
    taken: Taken | None = None,
    *,
    visits: Mapping[str, int] | None = None,
    current: str | None = None,
) -> str:
    """The graph as an inline `<svg>` element; `taken` highlights a thread's path."""
    visits = visits or {}
    boxes, width, height = layout(graph, visits)
    loops = back_edges(graph)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" role="img" '
        f'aria-label="graph {escape(graph.name)}" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'width="{width:.0f}" height="{height:.0f}">',
        "<defs>",
        _marker("arrow", "#666"),
        _marker("arrow-taken", TAKEN_COLOUR),
        "</defs>",
    ]
    fan: Counter[tuple[str, str]] = Counter()
    places: list[Rect] = [(b.x - b.w / 2, b.y, b.x + b.w / 2, b.bottom) for b in boxes.values()]
    for drawn in drawn_edges(graph):
        source, target, text = drawn.source, drawn.target, drawn.label
        key = (source, drawn.key[1], target)
        if source not in boxes or target not in boxes:
            continue
        count = taken.count(drawn.key) if taken is not None else 0  # the edge the path names
        nth = fan[(source, target)]
        fan[(source, target)] += 1
        edge = _edge(
            boxes[source], boxes[target], key, text, count, key in loops, nth, graph, places
        )
        out.append(edge)
    visited = taken.visited if taken is not None else set()
    for name, box in boxes.items():
        out.append(_box(box, graph, name in visited, visits.get(name, 0), name == current))
    out.append("</svg>")
    return "\n".join(out)


def _bezier(p0: float, p1: float, p2: float, p3: float, t: float) -> float:
    u = 1 - t
    return u * u * u * p0 + 3 * u * u * t * p1 + 3 * u * t * t * p2 + t * t * t * p3


def _marker(name: str, colour: str) -> str:
    return (
        f'<marker id="{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        f'fill="{colour}"/></marker>'
    )


def _box(box: Box, graph: Graph, visited: bool, visits: int, current: bool) -> str:
    terminal = box.name in (START, END)
    known = terminal or box.name in graph.roles
    fill = VISITED_FILL if visited else ("#eef1f5" if terminal else "#ffffff")
    stroke = CURRENT_COLOUR if current else (TAKEN_COLOUR if visited else "#555")
    attrs = [
        f'x="{box.x - box.w / 2:.1f}"',
        f'y="{box.y:.1f}"',
        f'width="{box.w:.1f}"',
        f'height="{BOX_H}"',
        f'rx="{BOX_H / 2 if terminal else 6}"',
        f'fill="{fill}"',
        f'stroke="{stroke}"',
        f'stroke-width="{3 if current else 1.5}"',
    ]
    if not known:
        attrs.append('stroke-dasharray="4 4"')
    classes = ["node"] + (["visited"] if visited else []) + (["current"] if current else [])
    return (
        f'<g class="{" ".join(classes)}" data-node="{escape(box.name)}" data-visits="{visits}">'
        f"<title>{escape(box.name)}{f' — visited {visits}×' if visits else ''}</title>"
        f"<rect {' '.join(attrs)}/>"
        f'<text x="{box.x:.1f}" y="{box.y + BOX_H / 2 + 4.5:.1f}" text-anchor="middle">'
        f"{escape(box.label)}</text></g>"
    )


Rect = tuple[float, float, float, float]  # left, top, right, bottom
LABEL_CHAR_W = 6.6  # px per character of the 11.5px edge label font
TRIES = (0.3, 0.5, 0.7, 0.2, 0.4, 0.6, 0.8, 0.15, 0.85)  # where along an edge a label may sit


def _edge(
    a: Box,
    b: Box,
    key: EdgeKey,
    text: str,
    count: int,
    loop: bool,
    nth: int,
    graph: Graph,
    taken_places: list[Rect],
) -> str:
    """One edge and its label; the label goes at the first place along the edge that covers
    no box and no label placed before (`taken_places`, which it joins)."""
    spread = nth * 26
    if loop or b.y <= a.y:  # back to an earlier (or the same) row: out and in on the right
        climb = max(1.0, (a.y - b.y) / RANK_GAP)
        out_x = a.right + 40 + 28 * climb + spread
        y1, y2 = a.y + BOX_H / 2, b.y + BOX_H / 2
        if a.name == b.name:
            y1, y2 = a.y + 8, a.y + BOX_H - 8
        xs: Curve = (a.right, out_x, out_x, b.right)
        ys: Curve = (y1, y1, y2, y2)
    else:
        x1, y1 = a.x + spread - (spread and 13), a.bottom
        x2, y2 = b.x + spread - (spread and 13), b.y
        mid = (y1 + y2) / 2
        xs, ys = (x1, x1, x2, x2), (y1, mid, mid, y2)
    d = (
        f"M{xs[0]:.1f},{ys[0]:.1f} C{xs[1]:.1f},{ys[1]:.1f} {xs[2]:.1f},{ys[2]:.1f} "
        f"{xs[3]:.1f},{ys[3]:.1f}"
    )
    label = f"{text} ×{count}" if count > 1 else text
    lx, ly = _place(label, xs, ys, taken_places)
    colour = TAKEN_COLOUR if count else "#666"
    width = 3 if count else 1.3
    dashed = key[2] != END and key[2] not in graph.roles
    source, status, target = key
    dash = ' stroke-dasharray="5 4"' if dashed else ""
    return (
        f'<g class="edge{" taken" if count else ""}" data-edge="{escape(source)}|{escape(status)}|'
        f'{escape(target)}" data-taken="{count}">'
        f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="{width}"'
        f"{dash} "
        f'marker-end="url(#{"arrow-taken" if count else "arrow"})"/>'
        f'<text class="edge-label" x="{lx:.1f}" y="{ly:.1f}" text-anchor="start" '
        f'fill="{colour}">{escape(label)}</text></g>'
    )


Curve = tuple[float, float, float, float]  # a cubic Bézier's x (or y) coordinates


def _place(label: str, xs: Curve, ys: Curve, taken_places: list[Rect]) -> tuple[float, float]:
    width = len(label) * LABEL_CHAR_W
    first: tuple[float, float, Rect] | None = None
    for t in TRIES:
        x, y = _bezier(*xs, t) + 6, _bezier(*ys, t) + 4
        rect = (x - 2, y - 11, x + width + 2, y + 3)
        if first is None:
            first = (x, y, rect)
        if not any(_overlap(rect, other) for other in taken_places):
            taken_places.append(rect)
            return x, y
    assert first is not None
    taken_places.append(first[2])
    return first[0], first[1]


def _overlap(a: Rect, b: Rect) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
