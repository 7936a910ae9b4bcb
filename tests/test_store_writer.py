"""The SQLite store's writer thread: writes of many threads, committed together, each on its own.

Writes reach SQLite through one thread with its own connection, which commits every write
waiting at that moment in one transaction (writer.py). What a user relies on: a write reported
done is on disk (another connection reads it), a conflicting write fails alone without taking
the others of its batch with it, and a store closed with writes queued commits them first.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from orchestrator.core.events import StepStarted, ThreadStarted, ThreadStatus
from orchestrator.core.state import ThreadSummary
from orchestrator.definition.loader import load_graph
from orchestrator.run.runner import may_defer
from orchestrator.store.base import ThreadBusy
from orchestrator.store.sqlite import SqliteStore


def summary(steps: int) -> ThreadSummary:
    return ThreadSummary(ThreadStatus.RUNNING, steps, 0.0, 0, 0, "")


def started(thread_id: str) -> ThreadStarted:
    return ThreadStarted(thread_id=thread_id, graph="g", graph_hash="h", inputs={}, workspace=".")


def step(n: int) -> StepStarted:
    return StepStarted(n, "worker", f"prompt {n}", "$START", "_")


def test_writes_of_many_threads_are_all_committed_in_order(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    ids = [f"t{i}" for i in range(20)]
    for thread_id in ids:
        store.create(started(thread_id), summary(0), graph_path="", snapshot={})

    async def advance(thread_id: str) -> None:
        for n in range(2, 12):  # each write waits for the previous one, as the runner does
            await asyncio.wrap_future(store.append_future(thread_id, n, step(n), summary(n)))

    async def all_threads() -> None:
        await asyncio.gather(*(advance(t) for t in ids))

    asyncio.run(all_threads())
    store.close()
    reader = SqliteStore(tmp_path, readonly=True)  # another connection: what is on disk
    for thread_id in ids:
        events = reader.events(thread_id)
        assert [e.seq for e in events] == list(range(1, 12))
        assert [e.event.step for e in events[1:]] == list(range(2, 12))  # type: ignore[attr-defined]
        assert reader.thread(thread_id).steps == 11
    reader.close()


def test_a_conflicting_write_fails_alone(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    for thread_id in ("a", "b"):
        store.create(started(thread_id), summary(0), graph_path="", snapshot={})
    # Queued without waiting, so they are likely to share a transaction.
    first = store.append_future("a", 2, step(2), summary(1))
    taken = store.append_future("a", 2, step(2), summary(1))  # the same number again
    other = store.append_future("b", 2, step(2), summary(1))
    assert first.result().seq == 2
    with pytest.raises(ThreadBusy):
        taken.result()
    assert other.result().seq == 2
    assert [e.seq for e in store.events("a")] == [1, 2]
    assert [e.seq for e in store.events("b")] == [1, 2]
    store.close()


def test_closing_commits_what_is_queued(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    store.create(started("t"), summary(0), graph_path="", snapshot={})
    pending = [store.append_future("t", n, step(n), summary(n)) for n in range(2, 50)]
    store.close()
    assert all(p.done() and p.exception() is None for p in pending)
    reader = SqliteStore(tmp_path, readonly=True)
    assert reader.thread("t").seq == 49
    reader.close()


GRAPH = """
name: kinds
description: Roles that change nothing but their reply, and roles that do.
roles:
  thinker:
    description: Thinks
    goal: You think.
    tools: [read]
    frontmatter: { type: object }
  editor:
    description: Edits
    goal: You edit.
    tools: [read, edit]
    frontmatter: { type: object }
  person:
    description: Decides
    goal: You decide.
    actor: human
    frontmatter: { type: object }
graph:
  $START: { _: { role: thinker, prompt: go } }
  thinker: { _: { role: editor, prompt: go } }
  editor: { _: { role: person, prompt: go } }
  person: { _: { role: $END, prompt: done } }
"""


def test_only_a_step_that_changes_nothing_may_start_before_its_start_is_saved(
    tmp_path: Path,
) -> None:
    path = tmp_path / "kinds.yaml"
    path.write_text(GRAPH)
    graph = load_graph(path)

    def starts(role: str) -> StepStarted:
        return StepStarted(1, role, "go", "$START", "_")

    assert may_defer(graph, starts("thinker"))
    assert not may_defer(graph, starts("editor"))
    assert not may_defer(graph, starts("person"))
    assert not may_defer(graph, started("t"))
