"""Titles, labels and the text search of the SQLite store (docs/threads.md).

A thread's title and labels are read from its first event (`ThreadStarted`) where `threads
list` reads its row: no column holds a copy, so a store written before titles existed reads the
same, with empty titles. The text search looks through titles and inputs:

- with SQLite's FTS5 (compiled into most builds; looked up in `PRAGMA compile_options` at run
  time), through a full-text index, the table `thread_search`, written with the thread;
- without it (or with `ORCHESTRATOR_SEARCH=like`, which forces this path), with LIKE over the
  first event's title and inputs.

Every word of the search must be found (in any order); FTS5 also finds words by their start
(`log` finds `login`), LIKE anywhere inside a word. The words are quoted before they reach
FTS5, so what a person types (`"`, `NEAR(`, `*`, `AND`) is only ever text to find, never query
syntax; a syntax error cannot happen.

`migrate` upgrades a store file on its writable open (store version 1, `PRAGMA user_version`):
it makes the index and fills it from the threads already there, so an older store's threads
become searchable. A store opened read-only is never changed: without its index, it is searched
with LIKE.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
from dataclasses import replace
from typing import Any, TypeAlias

from ..core.events import ThreadStarted, ThreadStatus
from ..core.titles import KEY, ThreadQuery, inputs_text
from .base import ThreadRow

Query: TypeAlias = ThreadQuery  # the filter of `threads`, as sqlite.py names it
VERSION = 1  # the store's version once its search index is made and filled
FORCE = "ORCHESTRATOR_SEARCH"  # `like`: search with LIKE even where FTS5 is present
INDEX = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS thread_search USING fts5("
    "id UNINDEXED, title, body, tokenize = 'unicode61 remove_diacritics 2')"
)

_FIRST = "FROM events e WHERE e.thread_id = threads.id AND e.seq = 1"
# The title and the labels (JSON text) of a thread's row, read from its first event.
COLUMNS = (
    f"(SELECT coalesce(json_extract(e.data, '$.title'), '') {_FIRST}), "
    f"(SELECT coalesce(json_extract(e.data, '$.labels'), '{{}}') {_FIRST})"
)

# What LIKE looks through: the title and the inputs (as JSON text) of the first event.
_TEXT = (
    "coalesce(json_extract(e.data, '$.title'), '') || ' ' ||"
    " coalesce(json_extract(e.data, '$.inputs'), '')"
)


@functools.cache
def fts5_compiled() -> bool:
    """Whether this process's SQLite has FTS5 (it asks once)."""
    db = sqlite3.connect(":memory:")
    try:
        return any(opt == "ENABLE_FTS5" for (opt,) in db.execute("PRAGMA compile_options"))
    finally:
        db.close()


def fts5() -> bool:
    """Search with FTS5: compiled in, and not switched off by `ORCHESTRATOR_SEARCH=like`."""
    return fts5_compiled() and os.environ.get(FORCE, "").lower() != "like"


def _has_index(db: sqlite3.Connection) -> bool:
    found = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'thread_search'"
    ).fetchone()
    return found is not None


def migrate(db: sqlite3.Connection) -> None:
    """Bring a writable store to `VERSION`: the search index made and filled from the threads
    already there, in one transaction (a second process opening it at once waits, then finds it
    done). Without FTS5 nothing changes: a later build with it upgrades the store."""
    if not fts5() or db.execute("PRAGMA user_version").fetchone()[0] >= VERSION:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        if db.execute("PRAGMA user_version").fetchone()[0] < VERSION:
            db.execute(INDEX)
            db.execute("DELETE FROM thread_search")
            for thread_id, data in db.execute(
                "SELECT thread_id, data FROM events WHERE seq = 1"
            ).fetchall():
                event = json.loads(data)
                _insert(db, thread_id, str(event.get("title") or ""), event.get("inputs") or {})
            db.execute(f"PRAGMA user_version = {VERSION}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _insert(db: sqlite3.Connection, thread_id: str, title: str, inputs: dict[str, Any]) -> None:
    db.execute(
        "INSERT INTO thread_search (id, title, body) VALUES (?, ?, ?)",
        (thread_id, title, inputs_text(inputs)),
    )


def index(db: sqlite3.Connection, started: ThreadStarted) -> None:
    """Index a new thread, in the transaction that creates it, where the store has an index
    (also when this process searches with LIKE: the index stays whole for those that do not).
    A SQLite without FTS5 cannot write the index: it marks the store for an upgrade instead."""
    if _has_index(db):
        if fts5_compiled():
            _insert(db, started.thread_id, started.title, started.inputs)
        else:  # a build without FTS5 cannot write it: the next one with it fills it again
            db.execute("PRAGMA user_version = 0")


def where(
    db: sqlite3.Connection, query: Query | None, state: str | None = None
) -> tuple[str, tuple[Any, ...]]:
    """The WHERE clause (or "") and its arguments that select the rows `query` (and `state`)
    ask for."""
    query = (query or Query()).narrowed(state)
    terms: list[str] = []
    args: list[Any] = []
    if query.state:
        terms.append("state = ?")
        args.append(query.state)
    if query.graph:
        terms.append("graph = ?")
        args.append(query.graph)
    for key, value in query.labels.items():
        if not KEY.fullmatch(key):  # no thread has it (and a quote would break the path)
            terms.append("0")
            continue
        terms.append(f"(SELECT json_extract(e.data, ?) {_FIRST}) = ?")
        args += [f'$.labels."{key}"', value]
    words = query.words
    if words and fts5() and _has_index(db):
        # Each word quoted ("" for a quote inside) and matched by its start: only text.
        terms.append("id IN (SELECT id FROM thread_search WHERE thread_search MATCH ?)")
        args.append(" AND ".join('"' + w.replace('"', '""') + '"*' for w in words))
    else:
        for word in words:
            text = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            terms.append(f"(SELECT {_TEXT} {_FIRST}) LIKE ? ESCAPE '\\'")
            args.append(f"%{text}%")
    return (" WHERE " + " AND ".join(terms) if terms else ""), tuple(args)


def select(
    db: sqlite3.Connection, columns: str, query: Query | None, state: str | None
) -> tuple[str, tuple[Any, ...]]:
    """The SELECT of `threads list`: `columns` of the rows `query` and `state` ask for, by id."""
    terms, args = where(db, query, state)
    return f"SELECT {columns} FROM threads{terms} ORDER BY id", args


def row_of(values: tuple[Any, ...]) -> ThreadRow:
    """A selected row: its summary columns, then its title and labels (`COLUMNS`)."""
    try:
        labels = json.loads(values[-1])
    except ValueError:
        labels = {}
    row = ThreadRow(*values[:-2])
    labels = labels if isinstance(labels, dict) else {}
    return replace(row, state=ThreadStatus(row.state), title=str(values[-2]), labels=labels)
