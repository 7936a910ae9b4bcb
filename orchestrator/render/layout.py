"""Where each box, arrow and label of a graph's drawing goes, computed by Graphviz's `dot`.

The drawing (`render/drawing.py`) needs coordinates, not pictures: `dot -Tjson` gives every
node's centre and size, every edge's Bézier control points and its label's centre, in
points. The SVG is then written here, in Python, so it carries the page's
ids, classes, `data-` attributes and colours, and every text in it is escaped by us; with
`-Tsvg` we would have to rewrite Graphviz's SVG (its own ids, its own text escaping, inline
fonts) to get the same, and trust its escaping of hostile names. `dot` is a program
(Debian's `graphviz`), run with a timeout; there is no Python binding to install.

**What is laid out.** The graph's nodes (`nodes_of`: `$START`, the roles, names that are only
referred to, `$END`) with ids of our own (`n0`, `n1`, ...); a subgraph role as a box of two
borders with `graph: CHILD` under its name (a cluster's label would sit where the edges into
the role come in, and be crossed); an edge per route with its status (and guard) as a `label`:
dot makes each label a node of its own in the ranking, so labels keep off nodes and off each
other. Measured with tests/graph_geometry.py over the 126 graphs of the tests, the bundled
graphs and the examples (2026-11-26): `label` with `splines=true` left no fault; `xlabel`
(placed after the layout) put two labels on each other in one graph; `splines=ortho` put
labels on boxes in 23. A `parallel` fan-out leaves its source as one arrow into a fork bar,
and the bar reaches each branch; every branch of a fan-out with a `join` reaches a join bar,
whose one arrow leads to the join's role (docs/format.md section 15). A `for_each` has one
branch role: its arrow is drawn with a crow's foot.

**Hostile text.** Role names, statuses and guards come from graph files. They reach `dot` only
inside double-quoted strings escaped by `dot_label` (backslash, quote, `&` as `&amp;`), after
control characters (newlines too) are replaced by spaces; they never name a node (ids are
ours). Labels are sized with room for a visit count (" ×99") so that one layout serves every
thread of the graph and the drawing does not move while a thread runs.

**Cache.** A layout depends only on the DOT text; the last `CACHE_SIZE` layouts are kept by
the SHA-256 of that text, so a page that refreshes itself (the live thread page) runs `dot`
once per graph, not once per refresh. Failures are not kept: `dot` installed later is used.

`ORCHESTRATOR_DOT` names the program to run (default: `dot` on `PATH`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..definition.models import END, START, Graph
from .diagram import EdgeKey, Taken, dot_label, ending_note, guard_label, nodes_of, subgraph_label

CACHE_SIZE = 64
TIMEOUT = 20.0  # seconds: a graph of a few hundred roles lays out in well under one
NODE_FONT = 14.0  # what dot measures with; the drawing writes 13px: a margin for other fonts
LABEL_FONT = 12.5  # the drawing's edge labels are 11.5px
FONT = "sans-serif"  # fontconfig's choice, the same for Graphviz (pango) and Chromium
COUNT_ROOM = " ×99"

Point = tuple[float, float]


class LayoutUnavailable(Exception):
    """`dot` is missing, failed or took too long; the message is one line for a person."""


@dataclass(frozen=True)
class Arrow:
    """One arrow of the drawing, between two laid-out nodes (roles or bars).

    `key` is the edge a thread's path names when it takes this arrow (None: the trunk of a
    fan-out, taken when any branch is); `edge` is the `data-edge` text of the drawing."""

    tail: str
    head: str
    label: str
    key: EdgeKey | None
    edge: str
    kind: str = "edge"  # edge | fork | branch | for-each | join
    keys: tuple[EdgeKey, ...] = ()  # a trunk: its branches' edges


@dataclass(frozen=True)
class Shape:
    """A node of the drawing: a role, a terminal, or a fork/join bar (`bar`)."""

    id: str
    name: str
    kind: str  # terminal | role | missing | bar
    box: str | None = None  # a subgraph role: its cluster's label


@dataclass(frozen=True)
class Plan:
    """What to lay out, before `dot`: shapes and arrows in file order."""

    shapes: tuple[Shape, ...]
    arrows: tuple[Arrow, ...]


@dataclass(frozen=True)
class Placed:
    """A laid-out box: centre, width and height, in points, y downwards."""

    x: float
    y: float
    w: float
    h: float


@dataclass(frozen=True)
class Route:
    """A laid-out arrow: cubic Bézier points (1 + 3n), the arrow tip, the label's centre."""

    points: tuple[Point, ...]
    tip: Point | None
    label_at: Point | None


@dataclass(frozen=True)
class Laid:
    """`dot`'s answer: boxes by node id, routes in arrow order, the drawing's size."""

    width: float
    height: float
    nodes: Mapping[str, Placed]
    routes: tuple[Route, ...]


def clean(text: str) -> str:
    """One line of text: control characters (newlines, tabs, NUL) become spaces."""
    return re.sub(r"[\x00-\x1f\x7f]", " ", text)


def plan_of(graph: Graph) -> Plan:
    """The shapes and arrows of `graph`'s drawing."""
    names = nodes_of(graph)
    ids = {name: f"n{i}" for i, name in enumerate(names)}
    shapes: list[Shape] = []
    for name in names:
        kind = (
            "terminal" if name in (START, END) else ("role" if name in graph.roles else "missing")
        )
        shapes.append(Shape(ids[name], name, kind, subgraph_label(graph, name)))
    arrows: list[Arrow] = []
    for n, (source, status, _, edge) in enumerate(graph.routes()):
        label = guard_label(status, edge)
        if not edge.fans_out:
            assert edge.role is not None  # the model: an edge that does not fan out has one
            key = (source, status, edge.role)
            arrows.append(
                Arrow(ids[source], ids[edge.role], label + ending_note(edge), key, _text(key))
            )
            continue
        branches = list(dict.fromkeys(b.role for b in edge.branches()))
        if edge.for_each is not None:
            key = (source, status, branches[0])
            label += f" for each {edge.item_name}"
            arrows.append(Arrow(ids[source], ids[branches[0]], label, key, _text(key), "for-each"))
        else:
            fork = f"f{n}"
            shapes.append(Shape(fork, f"{source} {status}: fork", "bar"))
            keys = tuple((source, status, role) for role in branches)
            trunk = _text((source, status, "parallel"))
            arrows.append(Arrow(ids[source], fork, label, None, trunk, "fork", keys))
            for key in keys:
                arrows.append(Arrow(fork, ids[key[2]], "", key, _text(key), "branch"))
        if edge.join is not None:
            join = f"j{n}"
            shapes.append(Shape(join, f"{source} {status}: join", "bar"))
            key = (source, status, edge.join.role)
            for role in branches:
                arrows.append(Arrow(ids[role], join, "", key, _text((role, "join", key[2]))))
            arrows.append(
                Arrow(join, ids[key[2]], "join" + ending_note(edge.join), key, _text(key), "join")
            )
    return Plan(tuple(shapes), tuple(arrows))


def _text(key: EdgeKey) -> str:
    return "|".join(key)


def dot_source(plan: Plan, digits: int = 2) -> str:
    """The DOT text `dot` lays out: sizes only, every name quoted and escaped."""
    room = " ×" + "9" * digits
    lines = [
        "digraph layout {",
        "    graph [rankdir=TB, splines=true, nodesep=0.35, ranksep=0.45, pad=0.15, "
        f'fontname="{FONT}", fontsize={LABEL_FONT}];',
        f'    node [shape=box, fontname="{FONT}", fontsize={NODE_FONT}, height=0.4, '
        'margin="0.16,0.06"];',
        f'    edge [fontname="{FONT}", fontsize={LABEL_FONT}];',
    ]
    for shape in plan.shapes:
        if shape.kind == "bar":
            node = f'{shape.id} [label="", width=0.9, height=0.07, fixedsize=true];'
        elif shape.box is not None:  # a subgraph role: two borders, its child graph below
            text = clean(shape.name) + room + "\n" + clean(shape.box)
            node = f"{shape.id} [label={dot_label(text)}, peripheries=2];"
        else:
            text = clean(shape.name) + ("" if shape.kind == "terminal" else room)
            node = f"{shape.id} [label={dot_label(text)}];"
        lines.append(f"    {node}")
    ends = [s.id for s in plan.shapes if s.kind == "terminal"]
    if len(ends) == 2:  # $START on the top row, $END alone on the bottom one
        lines += [f"    {{rank=source; {ends[0]}}}", f"    {{rank=sink; {ends[1]}}}"]
    for n, arrow in enumerate(plan.arrows):
        label = f", label={dot_label(clean(arrow.label) + room)}" if arrow.label else ""
        lines.append(f'    {arrow.tail} -> {arrow.head} [id="a{n}"{label}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def digits_for(taken: Taken | None, visits: Mapping[str, int]) -> int:
    """How many digits of count the labels need room for: 2, unless a count is larger."""
    counts = [*visits.values(), *(taken.counts.values() if taken is not None else ())]
    return max(2, len(str(max(counts, default=0))))


_cache: OrderedDict[str, Laid] = OrderedDict()
_lock = threading.Lock()


def lay_out(source: str) -> Laid:
    """`dot`'s layout of `source`, from the cache when this text was laid out lately."""
    digest = hashlib.sha256(source.encode()).hexdigest()
    with _lock:
        if digest in _cache:
            _cache.move_to_end(digest)
            return _cache[digest]
    laid = _parse(_run_dot(source))
    with _lock:
        _cache[digest] = laid
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return laid


def dot_program() -> str | None:
    """The `dot` to run: `ORCHESTRATOR_DOT`, else `dot` on PATH; None when there is none."""
    named = os.environ.get("ORCHESTRATOR_DOT")
    if named:
        return named if os.access(named, os.X_OK) else None
    return shutil.which("dot")


def _run_dot(source: str) -> dict[str, Any]:
    program = dot_program()
    if program is None:
        raise LayoutUnavailable(
            "Graphviz's `dot` was not found (install the `graphviz` package, "
            "or set ORCHESTRATOR_DOT)"
        )
    try:
        done = subprocess.run(
            [program, "-Tjson"],
            input=source.encode(),
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise LayoutUnavailable(f"Graphviz's `dot` took more than {TIMEOUT:.0f}s") from None
    except OSError as exc:
        raise LayoutUnavailable(f"Graphviz's `dot` could not start: {exc.strerror}") from None
    if done.returncode != 0:
        said = clean(done.stderr.decode(errors="replace").strip())[:200]
        raise LayoutUnavailable(f"Graphviz's `dot` failed (exit {done.returncode}): {said}")
    try:
        found: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        raise LayoutUnavailable("Graphviz's `dot` gave no JSON layout") from None
    return found


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",")]


def _parse(found: Mapping[str, Any]) -> Laid:
    """Points from dot's JSON: inches to points for sizes, y flipped to grow downwards."""
    left, bottom, right, top = _floats(found["bb"])
    height = top - bottom

    def at(x: float, y: float) -> Point:
        return (x - left, top - y)

    objects: list[Mapping[str, Any]] = found.get("objects", [])
    nodes: dict[str, Placed] = {}
    for obj in objects:
        if "nodes" in obj:  # a subgraph (the rows of $START and $END): no box of its own
            continue
        x, y = at(*_floats(obj["pos"]))
        nodes[obj["name"]] = Placed(x, y, float(obj["width"]) * 72, float(obj["height"]) * 72)
    routes: list[Route] = []
    # by our ids: dot lists edges in an order of its own, not the order of the source; an
    # edge without one is none of ours and is not drawn
    ours = [e for e in found.get("edges", []) if re.fullmatch(r"a\d+", str(e.get("id", "")))]
    for edge in sorted(ours, key=lambda e: int(e["id"][1:])):
        points: list[Point] = []
        tip: Point | None = None
        for part in edge["pos"].split():
            if part.startswith("e,"):
                tip = at(*_floats(part[2:]))
            elif not part.startswith("s,"):
                points.append(at(*_floats(part)))
        label_at = at(*_floats(edge["lp"])) if "lp" in edge else None
        routes.append(Route(tuple(points), tip, label_at))
    return Laid(right - left, height, nodes, tuple(routes))
