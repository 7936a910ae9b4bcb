"""Hostile titles, labels and searches (docs/security.md): a title or a task may come from an
issue's text, and a search from anyone who can reach a face.

- A title with terminal escapes, a bidirectional override and 60,000 characters is kept as one
  short line of plain text: `threads list` (table and `--json`) shows no escape and no override.
  The control switches the display's guard off on a title forged into the store: the escape
  then reaches the terminal, so the test can see one.
- A search holding FTS5 query syntax (`"`, `NEAR(`, `*`, `title:`, `AND`, `^`) never reaches
  FTS5 as syntax: the list answers, in both ways of searching. The control hands the same text
  to FTS5 unquoted: SQLite refuses it with a syntax error, which is what the quoting keeps from
  the user.
- A label key cannot break out of the JSON path it is looked up by: a key that is not a name
  matches no thread; the control is a name that does.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from orchestrator.cli import threads as threads_cli
from orchestrator.core.titles import ThreadQuery
from orchestrator.store import search
from orchestrator.store.sqlite import SqliteStore
from tests.cli_helpers import LOOP_GRAPH, Project

ESCAPE = "\x1b]0;owned\x07\x1b[2J\x1b[31m"
BIDI = "\u202e"
HOSTILE = f"{ESCAPE}Fix{BIDI}gnp.exe the login bug " + "A" * 60_000
SYNTAX = ['"', "NEAR(login", "*", "login*", 'title:"x', "AND OR NOT", "^login", "a:b:c", "(((", ")"]


def reply(note: str) -> str:
    return f"---\n$status: done\nnote: {note}\n---\n"


@pytest.fixture
def project(tmp_path: Path) -> Project:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    project.script(worker=[reply("a")])
    out = project.run("run", "loop", HOSTILE[:200], "--title", HOSTILE, "--label", "k=" + HOSTILE)
    assert out.returncode == 0, out.stderr
    out = project.run("run", "loop", HOSTILE)  # the default title, from the hostile task
    assert out.returncode == 0, out.stderr
    return project


def test_a_hostile_title_is_one_short_line_of_text_on_the_terminal(project: Project) -> None:
    table = project.run("threads", "list")
    assert table.returncode == 0, table.stderr
    assert "\x1b" not in table.stdout and BIDI not in table.stdout
    assert "Fix gnp.exe the login bug" in table.stdout
    assert max(len(line) for line in table.stdout.splitlines()) < 300
    rows = project.threads()
    assert len(rows) == 2
    for row in rows:
        assert row["title"].startswith("Fix gnp.exe the login bug") and len(row["title"]) <= 80
        assert "\x1b" not in row["title"] and BIDI not in row["title"]
    assert len(rows[0]["labels"]["k"]) <= 200 and BIDI not in rows[0]["labels"]["k"]
    raw = project.run("threads", "list", "--json").stdout
    assert BIDI not in raw and "\\u001b" not in raw
    story = project.run("threads", "show", rows[0]["id"]).stdout
    assert "title: Fix gnp.exe the login bug" in story
    assert "\x1b" not in story and BIDI not in story


def forge(store: Path, title: str) -> None:
    """A title written into the store by someone else (not through orchestrator's checks)."""
    db = sqlite3.connect(store / "threads.db")
    with db:
        thread_id, data = db.execute("SELECT thread_id, data FROM events WHERE seq = 1").fetchone()
        db.execute(
            "UPDATE events SET data = ? WHERE thread_id = ? AND seq = 1",
            (json.dumps({**json.loads(data), "title": title}), thread_id),
        )
    db.close()


def test_a_forged_title_is_still_shown_safely(project: Project) -> None:
    forge(project.store, ESCAPE + BIDI + "forged")
    table = project.run("threads", "list")
    assert "forged" in table.stdout
    assert "\x1b" not in table.stdout and BIDI not in table.stdout
    raw = project.run("threads", "list", "--json").stdout
    assert BIDI not in raw and "forged" in raw


def test_control_the_forged_title_reaches_the_terminal_without_the_guard(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    forge(project.store, ESCAPE + BIDI + "forged")
    monkeypatch.setattr(threads_cli, "one_line", lambda text, limit=80: text)  # guard off
    store = SqliteStore(project.store, readonly=True)
    try:
        lines = threads_cli.thread_table(store.threads())
    finally:
        store.close()
    shown = "\n".join(lines)
    assert "\x1b]0;owned" in shown and BIDI in shown


@pytest.mark.parametrize("way", ["fts5", "like"])
def test_fts5_query_syntax_in_a_search_is_only_text(
    tmp_path: Path, way: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    project.script(worker=[reply("a")])
    assert project.run("run", "loop", "Fix the login bug").returncode == 0
    if way == "like":
        monkeypatch.setenv(search.FORCE, "like")
    store = SqliteStore(project.store)
    try:
        for text in [*SYNTAX, HOSTILE]:
            store.threads(None, ThreadQuery(search=text))  # never raises
        found = store.threads(None, ThreadQuery(search='"login* (bug^'))
        assert [r.title for r in found] == ["Fix the login bug"]
    finally:
        store.close()
    env = {**project.env(), **({search.FORCE: "like"} if way == "like" else {})}
    for text in SYNTAX:
        out = subprocess.run(
            project.cmd("threads", "list", "--search", text),
            cwd=project.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0 and "Traceback" not in out.stderr, (text, out.stderr)
        assert "error" not in out.stderr.lower(), (text, out.stderr)


def test_control_the_same_text_unquoted_is_an_fts5_syntax_error(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "store")  # made with its index
    store.close()
    db = sqlite3.connect(tmp_path / "store" / "threads.db")
    failed = []
    for text in SYNTAX:
        try:
            db.execute("SELECT id FROM thread_search WHERE thread_search MATCH ?", (text,))
        except sqlite3.OperationalError as exc:
            failed.append(str(exc))
    db.close()
    assert len(failed) >= 5 and any("syntax error" in e for e in failed), failed


def test_a_label_key_cannot_leave_its_json_path(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    project.script(worker=[reply("a")])
    assert project.run("run", "loop", "t", "--label", "team=auth").returncode == 0
    store = SqliteStore(project.store, readonly=True)
    try:
        for key in ['team"', 'x" OR 1=1 --', "team.x", "$", "team[0]"]:
            assert store.threads(None, ThreadQuery(labels={key: "auth"})) == [], key
        # control: the key as a name finds the thread
        assert len(store.threads(None, ThreadQuery(labels={"team": "auth"}))) == 1
    finally:
        store.close()
    out = project.run("run", "loop", "t", "--label", 'x"]=1')
    assert out.returncode == 2 and "is not a name" in out.stderr
