"""The graph on a thread's page: Graphviz's drawing, or, without `dot`, the Mermaid text.

The drawing itself is `render/drawing.py` (laid out by `dot`, cached per graph, the thread's
path, visit counts and the step in flight marked). When `dot` is missing, fails or times out
the page still works: one line says why there is no drawing, and the graph follows as the
Mermaid text `orchestrator graph` prints (with the same path highlighted), which a reader can
paste into any Mermaid viewer. No JavaScript, no network.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..definition.models import Graph
from ..render.diagram import Taken, to_mermaid
from ..render.drawing import to_svg as drawing
from ..render.layout import LayoutUnavailable
from .html import esc


def to_svg(
    graph: Graph,
    taken: Taken | None = None,
    *,
    visits: Mapping[str, int] | None = None,
    current: str | None = None,
) -> str:
    """The graph's drawing as inline SVG, or the one-line reason and the Mermaid text."""
    try:
        return drawing(graph, taken, visits=visits, current=current)
    except LayoutUnavailable as why:
        return (
            f'<p class="note" data-no-drawing>no drawing: {esc(str(why))}; '
            "the graph in Mermaid:</p>"
            f'<pre class="mermaid-text">{esc(to_mermaid(graph, taken))}</pre>'
        )
