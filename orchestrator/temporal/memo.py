"""The summary row a thread's workflow keeps in its memo: what `threads list` and the web page
show of a thread on Temporal without asking a worker (reading.py reads it back).

Pure and deterministic: the workflow imports it, and a replay must build the same row from the
same log, so it reads only the folded state and the log's first event.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..core.state import ThreadState

MEMO_TEXT = 500  # characters of a thread's inputs kept in its memo, for a search
RIDING = ("seq", "updated")  # memo fields written with a change of the row, never causing one


def memo_row(
    s: ThreadState, graph_path: str | None, worktree: Any, first: Mapping[str, Any]
) -> dict[str, Any]:
    """The row of thread state `s`; `first`: its log's first event, as stored."""
    row: dict[str, Any] = {
        "graph": s.graph,
        "graph_hash": s.graph_hash,
        "graph_path": graph_path,
        "workspace": s.workspace,
        "state": str(s.status),
        "steps": s.committed,
        "cost_usd": s.cost_usd,
        "input_tokens": s.input_tokens,
        "output_tokens": s.output_tokens,
        "reason": s.reason or "",
        # the steps in flight: a step starting is news too (the web page's live feed reads
        # the log when `seq` moves)
        "flying": sorted(
            [s.in_flight.step] if s.in_flight else list(s.fanout.flights) if s.fanout else []
        ),
    }
    if worktree is not None:  # a resume of the ended thread carries it on
        row["worktree"] = worktree
    if s.forked_from:  # a fork's lineage, for the list and the original's page
        row["forked_from"] = s.forked_from
    # The title and labels from the log's first event, and the start of the inputs (what
    # `threads list --search` looks through): constant, so they never cause an update.
    row["title"] = first.get("title", "")
    row["labels"] = first.get("labels", {})
    row["text"] = json.dumps(s.inputs, ensure_ascii=False)[:MEMO_TEXT]
    return row
