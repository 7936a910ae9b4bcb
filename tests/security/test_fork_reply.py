"""A fork's reply is held to the role's contract exactly as a person's answer is.

`threads fork --reply/--status --set`, `Orchestrator.fork` and MCP's `fork_thread` put a reply
of the caller's in step N's place. The attack: a reply that would take the thread where its
role cannot go (a status the role does not have, `$SUSPEND`), or carry what the contract
forbids (a required field left out, a field of the wrong type, a reply too long to be read).
Each is refused, naming the step and role, and nothing is made: no thread, no worktree. The
control: the same fork with a reply the contract takes is made, and takes the edge its status
picks; and a log in which the attack's reply had been written unchecked would have routed on
it (so the refusal, not the graph, is what stops it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.core.commands import Record
from orchestrator.core.engine import decide, fold
from orchestrator.core.events import StepCommitted, StepStarted, ThreadCompleted
from orchestrator.core.outcomes import Refused
from orchestrator.definition.loader import load_graph
from orchestrator.definition.models import Graph
from orchestrator.extract import format_reply
from orchestrator.run.session import Session
from orchestrator.store.sqlite import SqliteStore
from tests.fork_project import make_project
from tests.test_worktree import make_repo

ATTACKS = {
    "no tone": format_reply("approved", {}),
    "a list for a string": format_reply("approved", {"tone": ["plain", "loud"]}),
    "a status the role lacks": format_reply("merged", {"tone": "plain"}),
    "$SUSPEND": format_reply("$SUSPEND", {"reason": "stop here"}),
    "too long to read": format_reply("approved", {"tone": "plain"}) + "x" * 1_000_001,
}


@pytest.fixture
def made(tmp_path: Path) -> Iterator[tuple[Session, Graph, str, Path]]:
    graph = load_graph(make_project(tmp_path / "project"))
    repo = make_repo(tmp_path / "repo")  # a worktree thread: a fork would make a branch
    with Session(SqliteStore(tmp_path / "store")) as session:
        started = session.start(graph, {"task": "a picky task"}, folder=repo)
        asyncio.run(session.advance(graph, started.thread_id))
        yield session, graph, started.thread_id, tmp_path / "store"


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_reply_the_contract_refuses_makes_nothing(
    made: tuple[Session, Graph, str, Path], attack: str
) -> None:
    session, _, original, store = made
    with pytest.raises(Refused) as caught:
        session.fork(original, at=2, reply=ATTACKS[attack])
    assert "step 2 (reviewer)" in caught.value.message
    assert [row.id for row in session.threads()] == [original]
    assert sorted(p.name for p in (store / "worktrees").iterdir()) == [original, f"{original}.json"]


def test_control_an_accepted_reply_is_made_and_routes(
    made: tuple[Session, Graph, str, Path],
) -> None:
    session, graph, original, _ = made
    fork = session.fork(original, at=2, reply=format_reply("approved", {"tone": "plain"}))
    asyncio.run(session.advance(graph, fork))
    assert session.view(fork).path == ("writer", "reviewer", "$END")  # approved: the end


@pytest.mark.parametrize("attack", ["no tone", "a status the role lacks"])
def test_control_an_unchecked_reply_would_have_routed(
    made: tuple[Session, Graph, str, Path], attack: str
) -> None:
    """Written into a log without the check, the attack's reply is routed on: the approved
    edge ends the thread without the tone, and an unknown status finds no edge, which a fork
    would have recorded as the original's step 2."""
    session, graph, original, _ = made
    events = [s.event for s in session.events(original)]
    cut = next(i for i, e in enumerate(events) if isinstance(e, StepStarted) and e.step == 2)
    forged = [
        *events[: cut + 1],
        StepCommitted(2, "reviewer", "approved" if attack == "no tone" else "merged", {}, "", ""),
    ]
    command = decide(graph, fold(forged))
    assert isinstance(command, Record)
    if attack == "no tone":
        assert isinstance(command.event, ThreadCompleted)  # it ended, as the attack wanted
    else:
        assert "merged" in getattr(command.event, "reason", "")  # no edge: a graph suspension
