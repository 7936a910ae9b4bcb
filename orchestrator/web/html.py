"""The page shell and the small pieces every page shares; every value is escaped here.

Pages are plain HTML built on the server (no template engine, no framework on the client): a
person can read them without JavaScript, and `static/app.js` only keeps them live. Regions that
change while a thread runs carry `data-live="NAME"`; the script swaps each one whose HTML the
server now renders differently.
"""

from __future__ import annotations

import datetime as dt
import json
from html import escape
from typing import Any

from ..views.plural import plural


def esc(value: Any) -> str:
    return escape(value if isinstance(value, str) else str(value), quote=True)


def page(title: str, body: str, *, where: str, feed: str, seq: str) -> str:
    """A whole page. `feed` is the server-sent events URL that keeps it live; `seq` says which
    state of the store it shows, so the script fetches it again only when that moved."""
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · orchestrator</title>"
        '<link rel="stylesheet" href="/static/style.css">'
        f'</head><body data-feed="{esc(feed)}" data-seq="{esc(seq)}">'
        '<header class="top"><a href="/">orchestrator</a>'
        f'<span class="where">{esc(where)}</span>'
        '<span id="live" class="live">static</span></header>'
        f"<main>{body}</main>"
        '<script src="/static/app.js"></script></body></html>\n'
    )


def badge(state: str) -> str:
    return f'<span class="badge {esc(state)}" data-state="{esc(state)}">{esc(state)}</span>'


def stamp(when: float) -> str:
    return dt.datetime.fromtimestamp(when).strftime("%Y-%m-%d %H:%M:%S")


def value_text(value: Any) -> str:
    """A field's value as a person reads it: text as is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


PAGE_CHARS = 100_000  # a longer text is cut on the page (the log and the CLI keep it whole)


def pre(text: str, cls: str = "") -> str:
    note = ""
    if len(text) > PAGE_CHARS:
        note = (
            f'<p class="note">cut: {plural(len(text), "character")} in all; '
            "<code>orchestrator threads show ID --full</code> prints everything</p>"
        )
        text = text[:PAGE_CHARS] + "…"
    attrs = f' class="{esc(cls)}"' if cls else ""
    return f"<pre{attrs}>{esc(text)}</pre>{note}"


def error_page(title: str, message: str, *, where: str) -> str:
    body = f'<h1>{esc(title)}</h1><div class="banner error">{esc(message)}</div>'
    body += '<p><a href="/">all threads</a></p>'
    return page(title, body, where=where, feed="", seq="")
