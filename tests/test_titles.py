"""Thread titles and labels (docs/threads.md, "Titles, labels and search"): through `run`, a
batch, the store's list filters (state, graph, labels, a text search by FTS5 and by the LIKE
fallback), an older store migrated, and the Python client."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from orchestrator import Orchestrator, run_thread
from orchestrator.core.titles import TITLE_LENGTH, LabelError, ThreadQuery, parse_labels
from orchestrator.definition.loader import load_graph
from orchestrator.definition.models import Graph
from orchestrator.run.session import Session
from orchestrator.store import search
from orchestrator.store.base import ThreadRow
from orchestrator.store.memory import MemoryStore
from orchestrator.store.sqlite import SqliteStore
from tests.cli_helpers import LOOP_GRAPH, Project

ASK = """\
name: NAME
description: A person approves a plan.
roles:
  approver:
    description: Approves
    goal: Approve the plan.
    actor: human
    frontmatter:
      type: object
      properties: { $status: { const: approved }, note: { type: string } }
      required: [$status, note]
graph:
  $START:
    _: { role: approver, prompt: "Approve: {{{$inputs.task}}}" }
  approver:
    approved: { role: $END, prompt: "Approved: {{{note}}}" }
"""


def reply(status: str, note: str) -> str:
    return f"---\n$status: {status}\nnote: {note}\n---\nbody of {note}\n"


def graph_named(tmp_path: Path, name: str) -> Graph:
    path = tmp_path / f"{name}.yaml"
    path.write_text(ASK.replace("NAME", name))
    return load_graph(path)


@pytest.fixture(params=["fts5", "like"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each search test twice: through the FTS5 index, and with the LIKE fallback forced."""
    if request.param == "like":
        monkeypatch.setenv(search.FORCE, "like")
    else:
        monkeypatch.delenv(search.FORCE, raising=False)
        assert search.fts5_compiled()  # the index path is really taken (CI's SQLite has it)
    yield request.param


def ids(rows: Sequence[ThreadRow]) -> list[str]:
    """The rows' titles (each thread's here is unique)."""
    return [r.title for r in rows]


def filled(tmp_path: Path) -> tuple[Session, dict[str, str]]:
    """A store with four threads of two graphs, one cancelled; their ids by title."""
    session = Session(SqliteStore(tmp_path / "store"))
    review, deploy = graph_named(tmp_path, "review"), graph_named(tmp_path, "deploy")
    made = {}
    for graph, task, title, labels in [
        (review, "Fix the login bug\nmore text", None, {"team": "auth", "prio": "high"}),
        (review, "Tidy the README", "docs pass", {"team": "docs"}),
        (deploy, "Roll out the login service", None, {"team": "auth"}),
        (deploy, "Rotate the keys", "keys", {}),
    ]:
        started = session.start(graph, {"task": task}, folder=tmp_path, title=title, labels=labels)
        made[started.first.event.title] = started.thread_id  # type: ignore[union-attr]
    session.cancel(made["keys"])
    return session, made


def test_the_default_title_is_the_first_line_of_the_task_and_a_given_one_wins(
    tmp_path: Path,
) -> None:
    session, made = filled(tmp_path)
    rows = {r.title: r for r in session.threads()}
    assert set(rows) == {"Fix the login bug", "docs pass", "Roll out the login service", "keys"}
    assert rows["Fix the login bug"].labels == {"team": "auth", "prio": "high"}
    assert rows["keys"].labels == {} and str(rows["keys"].state) == "cancelled"
    # In the log: the thread's first event holds them.
    first = session.events(made["docs pass"])[0].event
    assert first.title == "docs pass" and first.labels == {"team": "docs"}  # type: ignore[attr-defined]
    session.store.close()


def test_list_filters_by_state_graph_labels_and_search(tmp_path: Path, way: str) -> None:
    session, _ = filled(tmp_path)

    def titles(**kw: object) -> list[str]:
        return sorted(ids(session.threads(None, ThreadQuery(**kw))))  # type: ignore[arg-type]

    assert titles(state="cancelled") == ["keys"]
    assert titles(graph="deploy") == ["Roll out the login service", "keys"]
    assert titles(labels={"team": "auth"}) == ["Fix the login bug", "Roll out the login service"]
    assert titles(labels={"team": "auth", "prio": "high"}) == ["Fix the login bug"]
    assert titles(labels={"team": "nobody"}) == []
    assert titles(search="login") == ["Fix the login bug", "Roll out the login service"]
    assert titles(search="LOGIN bug") == ["Fix the login bug"]  # every word, any case
    assert titles(search="bug login") == ["Fix the login bug"]
    assert titles(search="readme") == ["docs pass"]  # found in the inputs, not the title
    assert titles(search="login", graph="deploy") == ["Roll out the login service"]
    assert titles(search="nothing-like-it") == []
    # The state argument narrows a query too (the sessions' `threads(state, query)`).
    assert sorted(ids(session.threads("running", ThreadQuery(graph="deploy")))) == [
        "Roll out the login service"
    ]
    session.store.close()


def test_the_memory_store_filters_alike(tmp_path: Path) -> None:
    session = Session(MemoryStore())
    graph = graph_named(tmp_path, "review")
    session.start(graph, {"task": "Fix the login bug"}, folder=tmp_path, labels={"team": "a"})
    session.start(graph, {"task": "Other"}, folder=tmp_path, title="other", labels={"team": "b"})
    assert ids(session.threads(None, ThreadQuery(search="LOGIN"))) == ["Fix the login bug"]
    assert ids(session.threads(None, ThreadQuery(labels={"team": "b"}))) == ["other"]


def test_a_long_task_gives_a_short_one_line_title(tmp_path: Path) -> None:
    session = Session(MemoryStore())
    graph = graph_named(tmp_path, "review")
    started = session.start(graph, {"task": "  \n" + "word " * 12_000}, folder=tmp_path)
    title = session.thread(started.thread_id).title
    assert len(title) == TITLE_LENGTH and title.endswith("…") and "\n" not in title


def test_a_bad_label_key_is_named(tmp_path: Path) -> None:
    for bad in ["", "1abc", "a b", 'k"ey', "a.b", "x" * 64]:
        with pytest.raises(LabelError, match="is not a name"):
            parse_labels([f"{bad}=v"])
    with pytest.raises(LabelError, match="has no '='"):
        parse_labels(["team"])
    assert parse_labels(["team=auth", "prio=a=b"]) == {"team": "auth", "prio": "a=b"}
    session = Session(MemoryStore())
    with pytest.raises(LabelError):
        session.start(graph_named(tmp_path, "g"), {"task": "t"}, folder=tmp_path, labels={"": "x"})
    assert session.threads() == []  # nothing was made


def downgrade(folder: Path) -> None:
    """Make a store as the version before titles wrote it: no search index, store version 0,
    first events without a title or labels."""
    db = sqlite3.connect(folder / "threads.db")
    with db:
        db.execute("DROP TABLE thread_search")
        db.execute("PRAGMA user_version = 0")
        for thread_id, data in db.execute("SELECT thread_id, data FROM events WHERE seq = 1"):
            event = json.loads(data)
            event.pop("title", None)
            event.pop("labels", None)
            db.execute(
                "UPDATE events SET data = ? WHERE thread_id = ? AND seq = 1",
                (json.dumps(event), thread_id),
            )
    db.close()


def test_an_older_store_keeps_its_threads_and_becomes_searchable(tmp_path: Path) -> None:
    session, made = filled(tmp_path)
    session.store.close()
    downgrade(tmp_path / "store")

    # Read-only (nothing may change): every thread, untitled, found by LIKE over its inputs.
    old = SqliteStore(tmp_path / "store", readonly=True)
    assert len(old.threads()) == 4 and {r.title for r in old.threads()} == {""}
    assert [r.id for r in old.threads(None, ThreadQuery(search="README"))] == [made["docs pass"]]
    old.close()

    upgraded = SqliteStore(tmp_path / "store")  # opened to write: migrated
    db = sqlite3.connect(tmp_path / "store" / "threads.db")
    assert db.execute("PRAGMA user_version").fetchone()[0] == search.VERSION
    assert db.execute("SELECT count(*) FROM thread_search").fetchone()[0] == 4
    db.close()
    assert len(upgraded.threads()) == 4
    found = upgraded.threads(None, ThreadQuery(search="login"))
    want = {made["Fix the login bug"], made["Roll out the login service"]}
    assert {r.id for r in found} == want
    assert [r.state for r in upgraded.threads("cancelled")] == ["cancelled"]
    # A thread started after the upgrade is indexed with its title.
    new = Session(upgraded).start(
        graph_named(tmp_path, "review"), {"task": "t"}, folder=tmp_path, title="Quarterly audit"
    )
    assert [r.id for r in upgraded.threads(None, ThreadQuery(search="quarter"))] == [new.thread_id]
    upgraded.close()


def test_run_titles_and_labels_a_thread_and_list_filters_it(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    project.script(worker=[reply("done", "a")])
    out = project.run("run", "loop", "Fix the login bug\nsecond line", "--label", "team=auth")
    assert out.returncode == 0, out.stderr
    out = project.run(
        "run", "loop", "anything", "--title", "Quarterly audit", "--label", "team=audit"
    )
    assert out.returncode == 0, out.stderr
    rows = project.threads()
    assert [(r["title"], r["labels"]) for r in rows] == [
        ("Fix the login bug", {"team": "auth"}),
        ("Quarterly audit", {"team": "audit"}),
    ]
    shown = project.run("threads", "show", rows[0]["id"])
    assert "title: Fix the login bug\nlabels: team=auth\n" in shown.stdout, shown.stdout
    table = project.run("threads", "list", "--search", "login", "--state", "completed")
    assert table.returncode == 0, table.stderr
    assert "TITLE" in table.stdout and "Fix the login bug" in table.stdout
    assert "Quarterly" not in table.stdout
    labelled = project.run("threads", "list", "--label", "team=audit", "--json")
    assert [json.loads(x)["title"] for x in labelled.stdout.splitlines()] == ["Quarterly audit"]
    none = project.run("threads", "list", "--graph", "other")
    assert none.returncode == 0 and "no threads that match" in none.stdout

    bad = project.run("run", "loop", "x", "--label", "bad key=1")
    assert bad.returncode == 2 and "--label: label key" in bad.stderr
    assert "Traceback" not in bad.stderr and len(project.threads()) == 2
    bad = project.run("threads", "list", "--label", "nolabel")
    assert bad.returncode == 2 and "has no '='" in bad.stderr


def test_batch_lines_set_their_title_and_labels(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    project.script(worker=[reply("done", "a")])
    lines = [
        {"task": "first task", "$title": "One", "$labels": {"n": "1"}},
        {"task": "Second task\nmore"},
    ]
    batch = tmp_path / "b.jsonl"
    batch.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    out = project.run("run", "loop", "--batch", str(batch), "--label", "run=nightly")
    assert out.returncode == 0, out.stderr
    rows = sorted(project.threads(), key=lambda r: r["title"])
    assert [(r["title"], r["labels"]) for r in rows] == [
        ("One", {"run": "nightly", "n": "1"}),
        ("Second task", {"run": "nightly"}),
    ]
    # A bad line is named, and nothing starts.
    batch.write_text(json.dumps({"task": "t", "$labels": {"bad key": "x"}}) + "\n")
    out = project.run("run", "loop", "--batch", str(batch))
    assert out.returncode == 2 and "b.jsonl:1:" in out.stderr and "is not a name" in out.stderr
    assert len(project.threads()) == 2


def test_the_client_runs_with_a_title_and_lists_by_labels_and_search(tmp_path: Path) -> None:
    from orchestrator.actors.scripted import ScriptedActor

    graph = graph_named(tmp_path, "review")
    with Orchestrator(store=tmp_path / "store") as orch:

        def actor_for(name: str, role: object) -> ScriptedActor:
            return ScriptedActor([reply("approved", "fine")])

        done = orch.run(
            graph,
            {"task": "Fix the login bug"},
            workspace=tmp_path,
            actor_for=actor_for,
            labels={"team": "auth"},
        )
        assert done.state == "completed" and done.title == "Fix the login bug"
        assert done.labels == {"team": "auth"} and done.to_dict()["title"] == done.title
        orch.run(graph, {"task": "x"}, workspace=tmp_path, actor_for=actor_for, title="Other")
        assert [t.title for t in orch.list(labels={"team": "auth"})] == ["Fix the login bug"]
        assert [t.title for t in orch.list(search="other")] == ["Other"]
        assert [t.title for t in orch.list(state="completed", graph="review")] == [
            "Fix the login bug",
            "Other",
        ]
        assert orch.get(done.id).labels == {"team": "auth"}
    # The one-call function takes them too.
    result = run_thread(
        graph,
        {"task": "y"},
        workspace=tmp_path,
        store=tmp_path / "store",
        actor_for=actor_for,
        title="Via the function",
        labels={"via": "fn"},
    )
    with Orchestrator(store=tmp_path / "store") as orch:
        assert [t.id for t in orch.list(labels={"via": "fn"})] == [result.thread_id]
        assert orch.get(result.thread_id).title == "Via the function"


def test_a_sqlite_without_fts5_searches_with_like_and_the_index_is_filled_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FTS5 missing (as in a build without it), not only switched off: the store still lists
    and searches, and the thread it made is in the index once a build with FTS5 opens it."""
    graph = graph_named(tmp_path, "review")
    Session(SqliteStore(tmp_path / "store")).store.close()  # made, with its index
    monkeypatch.setattr(search, "fts5_compiled", lambda: False)
    without = SqliteStore(tmp_path / "store")
    made = Session(without).start(graph, {"task": "Fix the login bug"}, folder=tmp_path)
    assert [r.id for r in without.threads(None, ThreadQuery(search="login"))] == [made.thread_id]
    without.close()
    monkeypatch.undo()
    with_fts = SqliteStore(tmp_path / "store")
    db = sqlite3.connect(tmp_path / "store" / "threads.db")
    assert db.execute("SELECT id FROM thread_search").fetchall() == [(made.thread_id,)]
    db.close()
    assert [r.id for r in with_fts.threads(None, ThreadQuery(search="log"))] == [made.thread_id]
    with_fts.close()


def test_an_eval_runs_threads_labelled_by_suite_case_variant_and_repeat(tmp_path: Path) -> None:
    from orchestrator.evals.api import evaluate
    from tests.eval_project import make_project

    suite = make_project(tmp_path / "p", ["hello", "level"])
    outcome = evaluate(suite, folder=tmp_path / "out")
    by_case = {r["case"]: r["thread"] for r in outcome.records}
    store = SqliteStore(tmp_path / "out" / "store", readonly=True)
    try:
        found = store.threads(None, ThreadQuery(labels={"case": "level", "repeat": "1"}))
        assert [r.id for r in found] == [by_case["level"]]
        assert found[0].labels == {
            "suite": Path(suite).stem,
            "case": "level",
            "variant": "a",
            "repeat": "1",
        }
        every = store.threads(None, ThreadQuery(labels={"suite": Path(suite).stem}))
        assert {r.id for r in every} == set(by_case.values())
    finally:
        store.close()
