"""The threads page: every thread of the store with its state, graph, steps, cost and age.

Filters by state, graph, label and a text search over titles and inputs are plain GET
parameters (`/?state=waiting&graph=solve-issue&label=team=auth&q=login`), so a filtered view can
be bookmarked; the store filters (store/search.py), this page shows what it kept. A title is
shown escaped and one line (core/titles.py), whatever wrote it. Newest threads come first: the one a person just started
is the one they look for.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from urllib.parse import urlencode

from ..core.events import ThreadStatus
from ..core.titles import one_line
from ..store.base import ThreadRow
from ..views.plural import plural
from ..views.summary import summary_row
from .html import badge, esc, page

STATES = [str(s) for s in ThreadStatus if s != ThreadStatus.NEW]


def signature(rows: Sequence[ThreadRow]) -> str:
    """A short digest of the rows' ids and event counts: it moves when any thread changes."""
    digest = hashlib.sha1(usedforsecurity=False)
    for row in rows:
        digest.update(f"{row.id}:{row.seq};".encode())
    return digest.hexdigest()[:16]


def select(rows: Sequence[ThreadRow], graph: str | None) -> list[ThreadRow]:
    chosen = [r for r in rows if not graph or r.graph == graph]
    return sorted(chosen, key=lambda r: r.created, reverse=True)


def threads_page(
    rows: Sequence[ThreadRow],
    *,
    state: str | None,
    graph: str | None,
    graphs: Sequence[str],
    where: str,
    label: str = "",
    search: str = "",
) -> str:
    shown = select(rows, graph)
    now = time.time()
    body = ['<h1>Threads</h1><form class="filters" method="get" action="/">']
    body.append(_choice("state", "every state", STATES, state))
    body.append(_choice("graph", "every graph", graphs, graph))
    body.append(_text("label", label, "key=value"))
    body.append(_text("q", search, "words in titles or inputs", "search"))
    body.append('<button type="submit">Filter</button>')
    if state or graph or label or search:
        body.append('<a href="/">clear</a>')
    body.append("</form>")
    body.append('<div data-live="threads">')
    if not shown:
        what = " ".join(x for x in (state, graph and f"of graph {graph}") if x)
        what += " that match" if label or search else ""
        body.append(f'<p class="empty">no threads{(" " + esc(what)) if what else ""} yet.</p>')
        body.append(
            "<p>Start one with <code>orchestrator run GRAPH</code>; it appears here while it "
            "runs.</p>"
        )
    else:
        body.append(
            '<table class="threads"><thead><tr><th>thread</th><th>title</th><th>graph</th>'
            "<th>state</th>"
            '<th class="num">steps</th><th class="num">tokens</th><th class="num">cost</th>'
            "<th>started</th><th>last event</th><th>why</th></tr></thead><tbody>"
        )
        for row in shown:
            body.append(_row(row, now))
        body.append("</tbody></table>")
    body.append(f'<p class="facts">{len(shown)} of {plural(len(rows), "thread")}</p></div>')
    asked = (("state", state), ("graph", graph), ("label", label), ("q", search))
    query = urlencode({k: v for k, v in asked if v})
    feed = "/events" + (f"?{query}" if query else "")
    return page("threads", "".join(body), where=where, feed=feed, seq=signature(shown))


def _choice(name: str, everything: str, options: Sequence[str], chosen: str | None) -> str:
    out = [f'<label>{esc(name)} <select name="{esc(name)}" data-autosubmit>']
    out.append(f'<option value="">{esc(everything)}</option>')
    for option in options:
        selected = " selected" if option == chosen else ""
        out.append(f'<option value="{esc(option)}"{selected}>{esc(option)}</option>')
    out.append("</select></label>")
    return "".join(out)


def _text(name: str, value: str, hint: str, kind: str = "text") -> str:
    return (
        f'<label>{"search" if name == "q" else esc(name)} <input type="{kind}" name="{name}" '
        f'value="{esc(value)}" placeholder="{esc(hint)}" maxlength="500"></label>'
    )


def _row(row: ThreadRow, now: float) -> str:
    cells = summary_row(row, now=now, why_width=90)
    return (
        f'<tr data-thread="{esc(cells.id)}">'
        f'<td class="mono"><a href="/threads/{esc(cells.id)}">{esc(cells.id)}</a></td>'
        f'<td class="title">{esc(one_line(row.title))}</td>'
        f"<td>{esc(cells.graph)}</td><td>{badge(cells.state)}</td>"
        f'<td class="num">{cells.steps}</td><td class="num">{cells.tokens}</td>'
        f'<td class="num">{esc(cells.cost)}</td>'
        f"<td>{esc(cells.started)}</td><td>{esc(cells.updated)}</td>"
        f"<td>{esc(cells.why)}</td></tr>"
    )
