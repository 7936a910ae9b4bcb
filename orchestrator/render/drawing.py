"""A graph drawn as SVG from `dot`'s layout (`render/layout.py`), with the path a thread took.

`to_svg(graph, taken, visits=..., current=...)` lays the graph out (cached) and writes one
`<svg class="graph">`: the web page inlines it, `orchestrator graph --format svg` prints it. It
raises `LayoutUnavailable` (one line) when `dot` cannot be run; the caller says so.

What is drawn:

- each role a box with its name (and "×N" when a thread visited it N > 1 times), `$START` and
  `$END` rounded, a name that is not a role dashed; a subgraph role a box of two borders with
  `graph: CHILD` under its name;
- each edge a curve with its status (and guard, and ending) as label, and an arrowhead; a
  `parallel` fan-out as a fork bar with an arrow to each branch, the branches of a fan-out
  into a join bar whose arrow to the join's role is labelled `join`, a `for_each` edge ending
  in a crow's foot (many steps of one role);
- a thread's path as `orchestrator graph --thread` draws it in Mermaid: the edges it took
  thick and red with "×N" when taken more than once, the roles it visited shaded; the role of
  the step in flight gets a blue outline.

Every box and arrow carries `data-` attributes naming it (`data-node`, `data-edge`
"source|status|target", `data-taken`, `data-visits`) so a page, or a test, can find it. Every
text is escaped here (`html.escape`, quotes too): names from a graph file are text, never
markup. Fonts, sizes and colours are presentation attributes, so the drawing reads the same
inline (the page's style sheet may refine it) and alone in a file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from html import escape

from ..definition.models import Graph
from .diagram import TAKEN_COLOUR, VISITED_FILL, Taken
from .layout import (
    Arrow,
    Laid,
    LayoutUnavailable,
    Placed,
    Plan,
    Point,
    Shape,
    clean,
    digits_for,
    dot_source,
    lay_out,
    plan_of,
)

CURRENT_COLOUR = "#1f6feb"
EDGE_COLOUR = "#5f5f5f"
FONT = 'font-family="sans-serif"'
MARGIN = 8


def to_svg(
    graph: Graph,
    taken: Taken | None = None,
    *,
    visits: Mapping[str, int] | None = None,
    current: str | None = None,
) -> str:
    """The graph as an `<svg>` element; `taken` highlights a thread's path.

    Raises `LayoutUnavailable` when `dot` is missing, fails or times out."""
    visits = visits or {}
    plan = plan_of(graph)
    laid = lay_out(dot_source(plan, digits_for(taken, visits)))
    if len(laid.routes) != len(plan.arrows) or any(s.id not in laid.nodes for s in plan.shapes):
        raise LayoutUnavailable("Graphviz's `dot` laid out another graph than the one given")
    return draw(graph.name, plan, laid, taken, visits, current)


def draw(
    name: str,
    plan: Plan,
    laid: Laid,
    taken: Taken | None,
    visits: Mapping[str, int],
    current: str | None,
) -> str:
    """The SVG text of a laid-out plan."""
    width, height = math.ceil(laid.width), math.ceil(laid.height)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" role="img" '
        f'aria-label="graph {_e(name)}" viewBox="{-MARGIN} {-MARGIN} {width + 2 * MARGIN} '
        f'{height + 2 * MARGIN}" width="{width + 2 * MARGIN}" height="{height + 2 * MARGIN}" '
        f'{FONT} font-size="13">'
    ]
    visited = taken.visited if taken is not None else set()
    for arrow, route in zip(plan.arrows, laid.routes, strict=True):
        count = _count(arrow, taken)
        dashed = _shape(plan, arrow.head).kind == "missing"
        out.append(_arrow(arrow, route.points, route.tip, route.label_at, count, dashed))
    for shape in plan.shapes:
        placed = laid.nodes[shape.id]
        if shape.kind == "bar":
            out.append(_bar(shape, placed))
        else:
            seen = shape.name in visited
            here = shape.name == current
            out.append(_node(shape, placed, seen, visits.get(shape.name, 0), here))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _e(text: str) -> str:
    return escape(clean(text), quote=True)


def _shape(plan: Plan, node_id: str) -> Shape:
    return next(s for s in plan.shapes if s.id == node_id)


def _count(arrow: Arrow, taken: Taken | None) -> int:
    if taken is None:
        return 0
    if arrow.key is None:  # a fork's trunk: taken as often as its most taken branch
        return max((taken.count(k) for k in arrow.keys), default=0)
    return taken.count(arrow.key)


def _f(value: float) -> str:
    return f"{value:.1f}"


def _node(shape: Shape, at: Placed, visited: bool, visits: int, current: bool) -> str:
    terminal = shape.kind == "terminal"
    fill = VISITED_FILL if visited else ("#eef1f5" if terminal else "#ffffff")
    stroke = CURRENT_COLOUR if current else (TAKEN_COLOUR if visited else "#555")
    attrs = [
        f'x="{_f(at.x - at.w / 2)}"',
        f'y="{_f(at.y - at.h / 2)}"',
        f'width="{_f(at.w)}"',
        f'height="{_f(at.h)}"',
        f'rx="{_f(at.h / 2) if terminal else 6}"',
        f'fill="{fill}"',
        f'stroke="{stroke}"',
        f'stroke-width="{3 if current else 1.5}"',
    ]
    if shape.kind == "missing":
        attrs.append('stroke-dasharray="4 4"')
    label = f"{shape.name} ×{visits}" if visits > 1 else shape.name
    classes = ["node"] + (["visited"] if visited else []) + (["current"] if current else [])
    classes += ["subgraph"] if shape.box is not None else []
    inner = ""
    y = at.y + 4.5
    if shape.box is not None:  # the second border, and the child graph's name under the role's
        inset = [*attrs[:4], 'rx="4"', 'fill="none"', f'stroke="{stroke}"', 'stroke-width="1"']
        inset[:4] = [
            f'x="{_f(at.x - at.w / 2 + 4)}"',
            f'y="{_f(at.y - at.h / 2 + 4)}"',
            f'width="{_f(at.w - 8)}"',
            f'height="{_f(at.h - 8)}"',
        ]
        inner = (
            f"<rect {' '.join(inset)}/>"
            f'<text class="subgraph-label" x="{_f(at.x)}" y="{_f(at.y + 13)}" '
            f'text-anchor="middle" font-size="11.5" fill="#424a53">{_e(shape.box)}</text>'
        )
        y = at.y - 3
    return (
        f'<g class="{" ".join(classes)}" data-node="{_e(shape.name)}" data-id="{shape.id}" '
        f'data-visits="{visits}">'
        f"<title>{_e(shape.name)}{f' — visited {visits}×' if visits else ''}</title>"
        f"<rect {' '.join(attrs)}/>"
        f'<text x="{_f(at.x)}" y="{_f(y)}" text-anchor="middle" fill="#1d2430">'
        f"{_e(label)}</text>{inner}</g>"
    )


def _bar(shape: Shape, at: Placed) -> str:
    kind = "fork" if shape.name.endswith(": fork") else "join"
    return (
        f'<g class="bar {kind}" data-bar="{_e(shape.name)}" data-id="{shape.id}"><title>{kind}</title>'
        f'<rect x="{_f(at.x - at.w / 2)}" y="{_f(at.y - at.h / 2)}" width="{_f(at.w)}" '
        f'height="{_f(at.h)}" rx="2" fill="#3b4250"/></g>'
    )


def _arrow(
    arrow: Arrow,
    points: tuple[Point, ...],
    tip: Point | None,
    label_at: Point | None,
    count: int,
    dashed: bool,
) -> str:
    colour = TAKEN_COLOUR if count else EDGE_COLOUR
    width = 3 if count else 1.3
    d = f"M{_f(points[0][0])},{_f(points[0][1])}"
    for i in range(1, len(points) - 2, 3):
        (x1, y1), (x2, y2), (x3, y3) = points[i : i + 3]
        d += f" C{_f(x1)},{_f(y1)} {_f(x2)},{_f(y2)} {_f(x3)},{_f(y3)}"
    dash = ' stroke-dasharray="5 4"' if dashed else ""
    classes = (
        ["edge"] + (["taken"] if count else []) + ([arrow.kind] if arrow.kind != "edge" else [])
    )
    parts = [
        f'<g class="{" ".join(classes)}" data-edge="{_e(arrow.edge)}" data-taken="{count}" '
        f'data-tail="{arrow.tail}" data-head="{arrow.head}">',
        f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="{width}"{dash}/>',
    ]
    if tip is not None:
        parts.append(_head(points[-1], tip, colour, crow=arrow.kind == "for-each"))
    if arrow.label and label_at is not None:
        text = f"{arrow.label} ×{count}" if count > 1 else arrow.label
        parts.append(
            f'<text class="edge-label" x="{_f(label_at[0])}" y="{_f(label_at[1] + 4)}" '
            f'text-anchor="middle" font-size="11.5" fill="{colour}" paint-order="stroke" '
            f'stroke="#fff" stroke-width="4" stroke-linejoin="round">{_e(text)}</text>'
        )
    parts.append("</g>")
    return "".join(parts)


def _head(base: Point, tip: Point, colour: str, *, crow: bool) -> str:
    """An arrowhead from `base` (where dot's curve ends) to `tip`; a crow's foot for many."""
    dx, dy = tip[0] - base[0], tip[1] - base[1]
    length = math.hypot(dx, dy) or 1.0
    px, py = -dy / length * 4.5, dx / length * 4.5  # half the head's width, across the line
    if crow:  # three toes spreading from the base to the tip: one role, many steps
        toes = " ".join(
            f"M{_f(base[0])},{_f(base[1])} L{_f(tip[0] + k * px * 1.5)},{_f(tip[1] + k * py * 1.5)}"
            for k in (-1, 0, 1)
        )
        return f'<path class="crow" d="{toes}" fill="none" stroke="{colour}" stroke-width="1.6"/>'
    corners = [tip, (base[0] + px, base[1] + py), (base[0] - px, base[1] - py)]
    drawn = " ".join(f"{_f(x)},{_f(y)}" for x, y in corners)
    return f'<polygon class="head" points="{drawn}" fill="{colour}"/>'
