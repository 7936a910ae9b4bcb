"""The geometry of a drawn graph, read in Chromium from the DOM: what overlaps what.

`faults(page)` runs in the page holding an `svg.graph` and lists, one line each:

- an edge label or a cluster label whose box (`getBBox`) overlaps another such label or a
  node's box (a role, a terminal, a fork or join bar);
- a node's own text that spills out of its box (the font the browser drew with is wider than
  the one the layout measured);
- an edge passing through a node other than its own two ends: points every 2px along the
  edge's path (`getPointAtLength`) inside the node's box, shrunk by 1.5px so that a curve
  touching a border where it enters its own end is not a crossing.

The ends of an edge are `data-tail`/`data-head` (node ids, `data-id`) when the drawing has
them, else the first and last names of its `data-edge` ("source|status|target", the hand
layout of old). Boxes are in the SVG's user units; overlaps need more than half a unit.
"""

from __future__ import annotations

from typing import Any

GEOMETRY_JS = r"""
(svg) => {
  const box = (el) => { const b = el.getBBox(); return {x0: b.x, y0: b.y, x1: b.x + b.width, y1: b.y + b.height}; };
  const overlap = (a, b, t) => a.x0 + t < b.x1 && b.x0 + t < a.x1 && a.y0 + t < b.y1 && b.y0 + t < a.y1;
  const inside = (p, b, s) => p.x > b.x0 + s && p.x < b.x1 - s && p.y > b.y0 + s && p.y < b.y1 - s;
  const nodes = [];
  for (const g of svg.querySelectorAll('g.node, g.bar')) {
    const rect = g.querySelector('rect');
    nodes.push({id: g.dataset.id || null, name: g.dataset.node || g.dataset.bar, g, b: box(rect)});
  }
  const labels = [];
  for (const t of svg.querySelectorAll('text.edge-label, text.cluster-label')) {
    if (!t.textContent.trim()) continue;
    labels.push({text: t.textContent, b: box(t)});
  }
  const out = [];
  for (let i = 0; i < labels.length; i++) {
    for (let j = i + 1; j < labels.length; j++)
      if (overlap(labels[i].b, labels[j].b, 0.5))
        out.push(`label "${labels[i].text}" overlaps label "${labels[j].text}"`);
    for (const n of nodes)
      if (overlap(labels[i].b, n.b, 0.5))
        out.push(`label "${labels[i].text}" overlaps node ${n.name}`);
  }
  for (const n of nodes) {
    const t = n.g.querySelector('text');
    if (t && t.textContent && !(box(t).x0 >= n.b.x0 - 0.5 && box(t).x1 <= n.b.x1 + 0.5))
      out.push(`the text of node ${n.name} spills out of its box`);
  }
  for (const g of svg.querySelectorAll('g.edge')) {
    const path = g.querySelector('path');
    let ends;
    if (g.dataset.tail) ends = (n) => n.id === g.dataset.tail || n.id === g.dataset.head;
    else {
      const parts = g.dataset.edge.split('|');
      ends = (n) => n.name === parts[0] || n.name === parts[parts.length - 1];
    }
    const length = path.getTotalLength();
    const crossed = new Set();
    for (let s = 0; s <= length; s += 2) {
      const p = path.getPointAtLength(s);
      for (const n of nodes) if (!ends(n) && inside(p, n.b, 1.5)) crossed.add(n.name);
    }
    for (const name of crossed) out.push(`edge ${g.dataset.edge} passes through node ${name}`);
  }
  return {faults: out, nodes: nodes.length, labels: labels.length,
          edges: svg.querySelectorAll('g.edge').length};
}
"""


def geometry(page: Any) -> dict[str, Any]:
    """The faults of the page's `svg.graph`, and how many nodes, labels and edges it has."""
    found: dict[str, Any] = page.locator("svg.graph").evaluate(GEOMETRY_JS)
    return found


def faults(page: Any) -> list[str]:
    """The faults alone (see the module's docstring)."""
    found: list[str] = geometry(page)["faults"]
    return found
