"""A thread's summary row: the cells `threads list`, the web page's list of threads and a
batch's closing table show for each thread, worded once.

A row says the thread's id, graph, state, steps, tokens, cost, when it started and when its
last event came, and why it stands where it stands: the reason a thread that did not complete
gives (suspended, waiting, failed, cancelled), cut to the width its face has, with `…` where it
was cut. A thread that spent nothing shows `—` (a person's or a Python function's steps, a
replay, a model without a known price), not `$0.0000`. Times are ages (`5m ago`): a list is read
to find the thread that just moved. A thread's own totals (`totals`: steps, tokens, cost) head
its story and its web page. The JSON form of a row is `ThreadRow.to_dict`
(`threads list --json` and MCP's `list_threads`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.events import ThreadStatus
from ..core.ledger import money, tokens
from ..core.steps import ThreadView
from ..store.base import ThreadRow
from .plural import plural


@dataclass(frozen=True)
class SummaryRow:
    id: str
    graph: str
    state: str
    steps: str
    tokens: str
    cost: str
    started: str
    updated: str
    why: str


def summary_row(row: ThreadRow, *, now: float, why_width: int) -> SummaryRow:
    return SummaryRow(
        row.id,
        row.graph,
        str(row.state),
        str(row.steps),
        f"{row.input_tokens + row.output_tokens:,}",
        spent(row.cost_usd),
        ago(row.created, now),
        ago(row.updated, now),
        why(row.state, row.reason, why_width),
    )


@dataclass(frozen=True)
class Totals:
    steps: str
    tokens: str
    cost: str


def totals(view: ThreadView) -> Totals:
    """A thread's steps, tokens (rejected replies' included) and cost, from its log: the first
    line of its story and the facts at the top of its web page."""
    spent_tokens = sum(tokens(s.total_usage) for s in view.steps)
    return Totals(
        plural(view.state.committed, "step"),
        plural(spent_tokens, "token"),
        spent(view.state.cost_usd),
    )


def why(state: str, reason: str | None, width: int) -> str:
    """The reason of a thread that did not complete, cut to `width` characters."""
    if not reason or state == ThreadStatus.COMPLETED:
        return ""
    return reason if len(reason) <= width else reason[: width - 1] + "…"


def spent(cost_usd: float) -> str:
    return money(cost_usd) if cost_usd else "—"


def ago(when: float, now: float) -> str:
    seconds = max(0, int(now - when))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"
