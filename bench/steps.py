"""Moderator cost per step for threads of 10, 100 and 1,000 steps, in memory and with SQLite.

Runs the real engine (decide, extract and validate, template rendering, apply) with an actor that
answers instantly, so the figures are the orchestrator's own overhead. The cost per step should
stay flat as threads grow: nothing re-reads or re-serialises the history per step.

    python bench/steps.py [--sizes 10,100,1000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from orchestrator.actors.base import ActReply, ActRequest
from orchestrator.definition.loader import load_graph
from orchestrator.run.options import RunOptions
from orchestrator.run.session import Session
from orchestrator.store.memory import MemoryStore
from orchestrator.store.sqlite import SqliteStore

GRAPH = """
name: bench-loop
description: One role that loops until told to stop.
limits: {{ max_steps: {limit}, max_visits: {limit} }}
roles:
  worker:
    description: Works in rounds
    goal: You work.
    memory: fresh
    frontmatter:
      oneOf:
        - properties:
            $status: {{ const: again }}
            note: {{ type: string }}
            items: {{ type: array, items: {{ type: string }} }}
          required: [$status, note]
        - properties:
            $status: {{ const: done }}
            note: {{ type: string }}
          required: [$status, note]
graph:
  $START: {{ _: {{ role: worker, prompt: "Start {{{{{{$inputs.task}}}}}}" }} }}
  worker:
    again: {{ role: worker, prompt: "Round after {{{{{{note}}}}}} ({{{{{{items}}}}}})" }}
    done: {{ role: $END, prompt: "Finished: {{{{{{note}}}}}}" }}
"""

AGAIN = "---\n$status: again\nnote: step note\nitems: [a, b, c]\n---\nSome body text.\n"
DONE = "---\n$status: done\nnote: final\n---\n"


class Instant:
    """Answers `again` until the last step, then `done`."""

    def __init__(self, steps: int):
        self.steps = steps
        self.stamps: list[float] = []

    async def play(self, request: ActRequest) -> ActReply:
        self.stamps.append(time.perf_counter())
        return ActReply(text=DONE if request.step >= self.steps else AGAIN)


def run(steps: int, store_kind: str, folder: Path) -> tuple[float, float, float]:
    path = folder / "graphs" / "bench-loop.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(GRAPH.format(limit=steps + 10))
    graph = load_graph(path)
    store = MemoryStore() if store_kind == "memory" else SqliteStore(folder / f"store-{steps}")
    actor = Instant(steps)
    session = Session(store)
    thread_id = session.start(graph, {"task": "bench"}, folder=folder).thread_id
    started = time.perf_counter()
    result = asyncio.run(
        session.advance(graph, thread_id, actor_for=lambda n, r: actor, options=RunOptions())
    )
    total = time.perf_counter() - started
    assert result.state == "completed" and result.steps == steps, result
    gaps = [b - a for a, b in zip(actor.stamps, actor.stamps[1:], strict=False)]
    tenth = max(1, len(gaps) // 10)
    first = statistics.median(gaps[:tenth]) if gaps else total
    last = statistics.median(gaps[-tenth:]) if gaps else total
    store.close()
    return total / steps, first, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10,100,1000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(
        f"{'store':<8} {'steps':>6} {'mean µs/step':>13} {'first 10% µs':>13} {'last 10% µs':>12}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        run(10, "memory", folder)  # warm up imports and caches
        for kind in ("memory", "sqlite"):
            for steps in sizes:
                mean, first, last = run(steps, kind, folder)
                print(
                    f"{kind:<8} {steps:>6} {mean * 1e6:>13.0f} {first * 1e6:>13.0f} {last * 1e6:>12.0f}"
                )


if __name__ == "__main__":
    main()
