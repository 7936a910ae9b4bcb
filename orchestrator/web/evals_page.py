"""The "evals" view of `orchestrator serve`: the evals stored beside the threads, each shown as
its report.

    GET /evals          the evals in STORE/evals/ (where `orchestrator eval` keeps them by
                        default: `.orchestrator/evals/NAME`), with their pass rate per variant
    GET /evals/NAME     that eval's report (evals/html.py), as `--report` writes it

Read only: nothing here runs, continues or rescores an eval. A NAME is one folder of
STORE/evals/ (letters, digits, `-`, `_`, `.`), never a path. The report keeps its own
Content-Security-Policy (no script, no request; its style inline), stricter than the app's.
"""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from ..evals.api import stored_outcome
from ..evals.html import CSP, render

NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}")
HEADERS = {
    "content-security-policy": CSP + "; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


def eval_routes(store_dir: Path | None) -> list[Route]:
    """The view's routes over the store in `store_dir` (none for threads on Temporal)."""
    if store_dir is None:
        return []
    folder = Path(store_dir) / "evals"

    async def index(request: Request) -> Response:
        rows = []
        for path in sorted(folder.iterdir()) if folder.is_dir() else []:
            outcome = stored_outcome(path) if path.is_dir() and not path.is_symlink() else None
            if outcome is None or not NAME.fullmatch(path.name):
                continue
            rates = ", ".join(
                f"{escape(s.variant)} {s.pass_rate:.0%} of {s.runs}" for s in outcome.summaries
            )
            rows.append(
                f'<li><a href="/evals/{escape(path.name)}">{escape(path.name)}</a>: {rates}</li>'
            )
        listed = "<ul>" + "".join(rows) + "</ul>" if rows else "<p>No eval in this store.</p>"
        body = (
            "<!doctype html><html lang=en><head><meta charset=utf-8><title>Evals</title>"
            f"</head><body><h1>Evals</h1><p>In {escape(str(folder))}</p>{listed}"
            '<p><a href="/">Threads</a></p></body></html>'
        )
        return HTMLResponse(body, headers=HEADERS)

    async def report(request: Request) -> Response:
        name = str(request.path_params["name"])
        path = folder / name
        found = NAME.fullmatch(name) and path.is_dir() and not path.is_symlink()
        outcome = stored_outcome(path) if found else None
        if outcome is None:
            return HTMLResponse("<p>No such eval.</p>", status_code=404, headers=HEADERS)
        return HTMLResponse(render(outcome), headers=HEADERS)

    return [Route("/evals", index), Route("/evals/{name}", report)]
