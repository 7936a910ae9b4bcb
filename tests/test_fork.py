"""Forks of local threads (docs/format.md section 20) through the real session and SQLite
store, with Python actors: the reply that takes the other edge, a step decided again with a
message, `reuse`, a fork of a fork, the refusals (nothing written), and the original's rows
byte-identical before and after."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from orchestrator.core.events import StepCommitted, ThreadForked
from orchestrator.core.outcomes import Refused
from orchestrator.definition.loader import load_graph
from orchestrator.run.session import Session
from orchestrator.store.sqlite import SqliteStore
from tests.fork_project import calls, make_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


@pytest.fixture
def session(tmp_path: Path) -> Session:
    with Session(SqliteStore(tmp_path / "store")) as s:
        yield s


def run(session: Session, graph_file: Path, task: str, workspace: Path) -> str:
    graph = load_graph(graph_file)
    workspace.mkdir(exist_ok=True)
    started = session.start(graph, {"task": task}, folder=workspace)
    asyncio.run(session.advance(graph, started.thread_id))
    return started.thread_id


def advance(session: Session, thread_id: str) -> None:
    row = session.thread(thread_id)
    asyncio.run(session.advance(session.graph_for(row), row.id))


def path_of(session: Session, thread_id: str) -> list[str]:
    return list(session.view(thread_id).path)


def rows(store_dir: Path, thread_id: str) -> list[tuple[object, ...]]:
    """The original's stored event rows, as SQLite holds them (the `at` time included)."""
    with sqlite3.connect(store_dir / "threads.db") as db:
        return db.execute(
            "SELECT seq, at, type, data FROM events WHERE thread_id = ? ORDER BY seq", (thread_id,)
        ).fetchall()


def test_a_reply_takes_the_other_edge_and_the_original_is_untouched(
    session: Session, project: Path, tmp_path: Path
) -> None:
    original = run(session, project, "owls", tmp_path / "ws")
    assert path_of(session, original) == ["writer", "reviewer", "$END"]
    before = rows(tmp_path / "store", original)

    fork = session.fork(original, at=2, status="changes", set={"notes": "shorter", "tone": "plain"})
    advance(session, fork)

    assert path_of(session, fork) == ["writer", "reviewer", "editor", "reviewer", "$END"]
    steps = [e.event for e in session.events(fork) if isinstance(e.event, StepCommitted)]
    assert [(s.step, s.role, s.status, s.actor) for s in steps[:3]] == [
        (1, "writer", "drafted", "python"),
        (2, "reviewer", "changes", "fork"),
        (3, "editor", "_", "python"),
    ]
    assert session.state(fork).forked_from == {"thread": original, "step": 2}
    assert session.state(fork).status == "completed"
    assert rows(tmp_path / "store", original) == before  # byte-identical, times included
    assert session.store.forks() == {fork: {"thread": original, "step": 2}}


def test_without_a_reply_the_step_is_decided_again_with_the_message(
    session: Session, project: Path, tmp_path: Path
) -> None:
    original = run(session, project, "owls", tmp_path / "ws")
    fork = session.fork(original, at=2, message="be strict")
    advance(session, fork)
    seen = (tmp_path / "ws" / "prompts.txt").read_text().splitlines()
    # the original's review, then the fork's: its prompt re-rendered, the message appended
    assert seen[0] == "Review: draft v1"
    assert (
        seen[1]
        == "Review: draft v1 |  | Message from the person who forked this thread: | be strict"
    )
    assert path_of(session, fork) == ["writer", "reviewer", "editor", "reviewer", "$END"]


def test_reuse_calls_the_actors_only_from_the_first_changed_step(
    session: Session, project: Path, tmp_path: Path
) -> None:
    original = run(session, project, "a picky task", tmp_path / "ws")
    assert path_of(session, original) == ["writer", "reviewer", "editor", "reviewer", "$END"]
    assert calls(project) == ["writer", "reviewer", "editor", "reviewer"]

    # The same request as the original's step 2, but another tone, which the next review's
    # prompt shows: step 3 (the editor, asked the same) is reused, step 4 (now asked
    # otherwise) is not.
    reply = {"notes": "shorter", "tone": "gentle"}
    fork = session.fork(original, at=2, status="changes", set=reply, reuse=True)
    advance(session, fork)
    steps = [e.event for e in session.events(fork) if isinstance(e.event, StepCommitted)]
    assert [(s.step, s.actor) for s in steps] == [
        (1, "python"), (2, "fork"), (3, "reuse"), (4, "python"),
    ]  # fmt: skip
    assert steps[2].reply == session.view(original).committed[2].reply
    assert not any(steps[2].usage.values()) and steps[2].cost_usd == 0
    assert calls(project)[4:] == ["reviewer"]  # the editor was not called again

    # control: the same fork without reuse calls the editor too
    control = session.fork(original, at=2, status="changes", set=reply)
    advance(session, control)
    assert calls(project)[5:] == ["editor", "reviewer"]


def test_a_fork_of_a_fork(session: Session, project: Path, tmp_path: Path) -> None:
    original = run(session, project, "owls", tmp_path / "ws")
    first = session.fork(
        original, at=2, status="changes", set={"notes": "shorter", "tone": "plain"}
    )
    advance(session, first)
    second = session.fork(first, at=4, status="changes", set={"notes": "simpler", "tone": "plain"})
    advance(session, second)
    assert path_of(session, second) == [
        "writer", "reviewer", "editor", "reviewer", "editor", "reviewer", "$END",
    ]  # fmt: skip
    assert session.state(second).forked_from == {"thread": first, "step": 4}
    assert session.state(first).forked_from == {"thread": original, "step": 2}
    forked = [e.event for e in session.events(second) if isinstance(e.event, ThreadForked)]
    assert [(f.from_thread, f.at_step) for f in forked] == [(original, 2), (first, 4)]
    assert session.store.forks() == {
        first: {"thread": original, "step": 2},
        second: {"thread": first, "step": 4},
    }


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"at": 7}, ["no step 7", "steps 1 to 3"]),
        ({"at": 2, "status": "changes"}, ["step 2 (reviewer)", "notes"]),
        ({"at": 2, "status": "rejected"}, ["step 2 (reviewer)", "rejected"]),
        ({"at": 2, "reply": "no frontmatter at all"}, ["step 2 (reviewer)"]),
    ],
)
def test_refusals_name_the_step_and_write_nothing(
    session: Session, project: Path, tmp_path: Path, kwargs: dict[str, object], says: list[str]
) -> None:
    original = run(session, project, "owls", tmp_path / "ws")
    before = [row.id for row in session.threads()]
    with pytest.raises(Refused) as caught:
        session.fork(original, **kwargs)  # type: ignore[arg-type]
    said = " ".join([caught.value.message, *caught.value.errors])
    for words in says:
        assert words in said, said
    assert [row.id for row in session.threads()] == before
    assert not (tmp_path / "store" / "worktrees").exists()
