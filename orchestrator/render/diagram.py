"""A graph as a Mermaid flowchart or a Graphviz DOT digraph, optionally with a thread's path.

Every edge is drawn with its status as the label (`_` for a single exit), from `$START` and into
`$END`, which are drawn as rounded terminals. A fan-out is drawn to each branch and from each
branch to its join's target; a subgraph role sits in a box labelled with its child graph. Edges into names that are not roles are drawn too,
dashed, so a diagram of a broken graph shows the mistake. When a thread's taken path is given,
the edges it took are drawn thick and red with how often they were taken, and the roles it
visited are shaded.

Both formats get node ids of their own (`n0`, `n1`, ...) with the names as labels: role names
may hold characters Mermaid ids cannot, and Graphviz names anonymous parts `%N` itself. Labels
are escaped for each format so that they are shown as written: Mermaid gets entity codes
(`#quot;`, `#38;` for `&`, which it would decode), DOT backslash escapes inside double quotes and
`&amp;` for `&` (Graphviz decodes HTML entities in labels).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..definition.models import END, START, Edge, Graph, Join

EdgeKey = tuple[str, str, str]  # (source, status, target)

TAKEN_COLOUR = "#d62728"
VISITED_FILL = "#fde2e1"


@dataclass(frozen=True)
class Taken:
    """The edges a thread took, in order, and how many times each."""

    edges: tuple[EdgeKey, ...] = ()
    counts: Mapping[EdgeKey, int] = field(default_factory=dict)

    @classmethod
    def from_edges(cls, edges: Iterable[EdgeKey]) -> Taken:
        ordered = tuple(edges)
        return cls(ordered, dict(Counter(ordered)))

    def count(self, edge: EdgeKey) -> int:
        return self.counts.get(edge, 0) or self.edges.count(edge)

    @property
    def visited(self) -> set[str]:
        return {name for source, _, target in self.edges for name in (source, target)}


TakenLike = Taken | Iterable[EdgeKey] | None


def as_taken(taken: TakenLike) -> Taken | None:
    """Accept a `Taken` or a plain list of (source, status, target) triples."""
    if taken is None or isinstance(taken, Taken):
        return taken
    return Taken.from_edges(taken)


@dataclass(frozen=True)
class Drawn:
    """One arrow of the diagram: an edge, an edge to one branch of a fan-out, or from a branch
    to the join's target."""

    source: str
    target: str
    label: str
    key: EdgeKey  # the edge a thread's path names when it takes this arrow


def guard_label(status: str, edge: Edge) -> str:
    label = status
    if edge.when is not None:
        when = edge.when if len(edge.when) <= 40 else edge.when[:39] + "…"
        label += f" if {when}"
    return label


def ending_note(target: Edge | Join) -> str:
    if target.ending in (None, "done"):
        return ""
    return f" ({target.ending}{', failure' if target.outcome == 'failure' else ''})"


def drawn_edges(graph: Graph) -> list[Drawn]:
    """Every arrow, in file order. A fan-out is drawn to each branch (a `for_each` as one branch
    marked `for each ITEM`) and from each branch to the join's target (docs/format.md section 15).
    """
    out: list[Drawn] = []
    for source, status, _, edge in graph.routes():
        label = guard_label(status, edge)
        if not edge.fans_out:
            assert edge.role is not None  # the model: an edge that does not fan out has one
            key = (source, status, edge.role)
            out.append(Drawn(source, edge.role, label + ending_note(edge), key))
            continue
        marker = f" for each {edge.item_name}" if edge.for_each is not None else ""
        branches = [b.role for b in edge.branches()]
        for role in branches:
            out.append(Drawn(source, role, label + marker, (source, status, role)))
        if edge.join is not None:
            join = edge.join
            key = (source, status, join.role)
            for role in dict.fromkeys(branches):
                out.append(Drawn(role, join.role, "join" + ending_note(join), key))
    return out


def edges_of(graph: Graph) -> list[EdgeKey]:
    """Every arrow as the edge (source, status, target) a thread takes along it, in file order."""
    return [d.key for d in drawn_edges(graph)]


def nodes_of(graph: Graph) -> list[str]:
    """$START, the roles (declared or only referred to), then $END."""
    names: list[str] = [START]
    for name in [*graph.roles, *graph.graph]:
        if name not in names and name not in (START, END):
            names.append(name)
    for drawn in drawn_edges(graph):
        if drawn.target not in names and drawn.target != END:
            names.append(drawn.target)
    return [*names, END]


def subgraph_label(graph: Graph, name: str) -> str | None:
    """`graph: CHILD` for a subgraph role (the child's name when it loaded), else None."""
    role = graph.roles.get(name)
    if role is None or role.graph is None:
        return None
    child = graph.subgraph(name)
    return f"graph: {child.name if child is not None else role.graph}"


def _label(status: str, count: int) -> str:
    return f"{status} ×{count}" if count > 1 else status


# --------------------------------------------------------------------------- Mermaid


def mermaid_text(text: str) -> str:
    """Text safe inside a quoted Mermaid label: entity codes for what Mermaid would parse."""
    out = text.replace("#", "#35;")
    # `&` too: Mermaid decodes HTML entities, so a role named `a&amp;b` would be drawn `a&b`
    for char, code in (
        ('"', "#quot;"),
        ("&", "#38;"),
        ("<", "#lt;"),
        (">", "#gt;"),
        ("|", "#124;"),
    ):
        out = out.replace(char, code)
    return out.replace("\n", " ")


def to_mermaid(graph: Graph, taken: TakenLike = None) -> str:
    """A Mermaid flowchart of the graph; the taken path, if given, is highlighted."""
    path = as_taken(taken)
    names = nodes_of(graph)
    ids = {name: f"n{i}" for i, name in enumerate(names)}
    lines = ["flowchart TD"]
    for name in names:
        label = mermaid_text(name)
        shape = f'(["{label}"])' if name in (START, END) else f'["{label}"]'
        box = subgraph_label(graph, name)
        if box is None:
            lines.append(f"    {ids[name]}{shape}")
        else:  # a subgraph role: its node inside a box labelled with the child graph
            lines.append(f'    subgraph s{ids[name]}["{mermaid_text(box)}"]')
            lines.append(f"        {ids[name]}{shape}")
            lines.append("    end")
    highlighted: list[int] = []
    dashed: list[int] = []
    for index, drawn in enumerate(drawn_edges(graph)):
        source, target = drawn.source, drawn.target
        count = path.count(drawn.key) if path else 0
        label = mermaid_text(_label(drawn.label, count))
        lines.append(f'    {ids[source]} -->|"{label}"| {ids[target]}')
        if count:
            highlighted.append(index)
        if target != END and target not in graph.roles:
            dashed.append(index)
    for name in names:
        if name not in (START, END) and name not in graph.roles:
            lines.append(f"    style {ids[name]} stroke-dasharray: 4 4")
    if dashed:
        lines.append(f"    linkStyle {','.join(map(str, dashed))} stroke-dasharray: 4 4")
    if path is not None:
        visited = [ids[n] for n in names if n in path.visited]
        lines.append(f"    classDef visited fill:{VISITED_FILL},stroke:{TAKEN_COLOUR}")
        if visited:
            lines.append(f"    class {','.join(visited)} visited")
        if highlighted:
            lines.append(
                f"    linkStyle {','.join(map(str, highlighted))} "
                f"stroke:{TAKEN_COLOUR},stroke-width:3px"
            )
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- DOT


def dot_id(text: str) -> str:
    """A double-quoted DOT id."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def dot_label(text: str) -> str:
    """A DOT label showing `text` as it is: Graphviz decodes HTML entities in labels."""
    return dot_id(text.replace("&", "&amp;"))


def to_dot(graph: Graph, taken: TakenLike = None) -> str:
    """A Graphviz digraph of the graph; the taken path, if given, is highlighted.

    Nodes have ids of our own (`n0`, `n1`, ...) and the names as labels: Graphviz gives ids such
    as `%3` to anonymous parts, so a role named like one would be drawn as another node."""
    path = as_taken(taken)
    names = nodes_of(graph)
    ids = {name: f"n{i}" for i, name in enumerate(names)}
    lines = [
        f"digraph {dot_id(graph.name)} {{",
        "    rankdir=TB;",
        '    node [shape=box, style="rounded"];',
    ]
    for name in names:
        attrs: list[str] = [f"label={dot_label(name)}"]
        if name in (START, END):
            attrs.append("shape=oval")
        style = ["rounded"]
        if name not in (START, END, *graph.roles):
            style.append("dashed")  # not a role: the edge into it is a mistake
        if path is not None and name in path.visited:
            style.append("filled")
            attrs.append(f'fillcolor="{VISITED_FILL}"')
        if len(style) > 1:
            attrs.append(f'style="{",".join(style)}"')
        node = f"{ids[name]} [{', '.join(attrs)}];"
        box = subgraph_label(graph, name)
        if box is None:
            lines.append(f"    {node}")
        else:  # a subgraph role: its node inside a cluster labelled with the child graph
            lines.append(f"    subgraph cluster_{ids[name]} {{")
            lines.append(f"        label={dot_label(box)};")
            lines.append('        style="dashed";')
            lines.append(f"        {node}")
            lines.append("    }")
    for drawn in drawn_edges(graph):
        source, target = drawn.source, drawn.target
        count = path.count(drawn.key) if path else 0
        attrs = [f"label={dot_label(_label(drawn.label, count))}"]
        if count:
            attrs += [f'color="{TAKEN_COLOUR}"', f'fontcolor="{TAKEN_COLOUR}"', "penwidth=3"]
        if target != END and target not in graph.roles:
            attrs.append("style=dashed")
        lines.append(f"    {ids[source]} -> {ids[target]} [{', '.join(attrs)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
