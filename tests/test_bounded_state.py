"""A durable thread's memory does not grow with its length.

The state the moderator folds keeps each role's latest step, the last few for histories and the
visit counts; a `memory: session` role's conversation is kept within its budget. So a thread of
thousands of steps holds as much Python memory late as early: measured with tracemalloc while a
real thread (SQLite store, the runner, session memory) loops.
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from pathlib import Path

from orchestrator.actors.base import ActReply, ActRequest
from orchestrator.definition.loader import load_graph
from orchestrator.run.options import RunOptions
from orchestrator.run.session import Session
from orchestrator.store.sqlite import SqliteStore

STEPS = 2_400

GRAPH = f"""
name: long-loop
description: One role that loops, continuing its own conversation.
limits: {{ max_steps: {STEPS + 10}, max_visits: {STEPS + 10} }}
roles:
  worker:
    description: Works in rounds
    goal: You work.
    memory: session
    memory_budget: 2000
    frontmatter:
      properties:
        $status: {{ enum: [again, done] }}
        note: {{ type: string }}
      required: [$status, note]
graph:
  $START: {{ _: {{ role: worker, prompt: "Start {{{{{{$inputs.task}}}}}}" }} }}
  worker:
    again: {{ role: worker, prompt: "Round after {{{{{{note}}}}}}" }}
    done: {{ role: $END, prompt: "Finished: {{{{{{note}}}}}}" }}
"""

NOTE = "a note of about a hundred characters, so that a thousand steps would hold a lot of them"


class Sampler:
    """Answers `again` until the last step; samples the traced memory at chosen steps."""

    def __init__(self, at: set[int]) -> None:
        self.at = at
        self.memory: dict[int, int] = {}
        self.visits_sent: dict[int, int] = {}

    async def play(self, request: ActRequest) -> ActReply:
        if request.step in self.at:
            gc.collect()
            self.memory[request.step] = tracemalloc.get_traced_memory()[0]
            self.visits_sent[request.step] = len(request.previous_visits)
        status = "done" if request.step >= STEPS else "again"
        return ActReply(text=f"---\n$status: {status}\nnote: {NOTE} {request.step}\n---\nBody.\n")


def test_a_long_durable_thread_holds_as_much_memory_late_as_early(tmp_path: Path) -> None:
    path = tmp_path / "long-loop.yaml"
    path.write_text(GRAPH)
    graph = load_graph(path)
    store = SqliteStore(tmp_path / "store")
    session = Session(store)
    thread_id = session.start(graph, {"task": "loop"}, folder=tmp_path).thread_id
    early, late = 600, STEPS - 1
    actor = Sampler({early, late})
    tracemalloc.start()
    try:
        result = asyncio.run(
            session.advance(graph, thread_id, actor_for=lambda n, r: actor, options=RunOptions())
        )
    finally:
        tracemalloc.stop()
        store.close()
    assert result.state == "completed" and result.steps == STEPS
    grown = actor.memory[late] - actor.memory[early]
    # Keeping every step costs 1 to 2 KB a step: 1,800 more steps would be 2 to 4 MB.
    assert grown < 150_000, f"{grown:,} bytes more after {late - early:,} more steps"
    # The conversation sent stays within the budget: it does not grow with the visits either.
    assert actor.visits_sent[late] <= actor.visits_sent[early] * 2
