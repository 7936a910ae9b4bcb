"""Python memory a durable thread holds as it grows, `memory: fresh` and `memory: session`.

Runs one looping role for N steps against a SQLite store and samples tracemalloc's count of
live Python memory (after a collection) at a tenth of the steps and at the last one. Goal: no
growth beyond what the current decision needs; the state keeps each role's latest step, the
last few for histories and the visit counts, and session memory keeps its budget's worth.

    python bench/held.py [--sizes 1000,10000]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tempfile
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import steps  # noqa: E402  (the same loop graph)

from orchestrator.actors.base import ActReply, ActRequest  # noqa: E402
from orchestrator.definition.loader import load_graph  # noqa: E402
from orchestrator.run.options import RunOptions  # noqa: E402
from orchestrator.run.session import Session  # noqa: E402
from orchestrator.store.sqlite import SqliteStore  # noqa: E402


class Sampler:
    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.early = max(1, steps // 10)
        self.held: dict[int, int] = {}

    async def play(self, request: ActRequest) -> ActReply:
        if request.step in (self.early, self.steps):
            gc.collect()
            self.held[request.step] = tracemalloc.get_traced_memory()[0]
        return ActReply(text=steps.DONE if request.step >= self.steps else steps.AGAIN)


def held(n: int, memory: str, folder: Path) -> tuple[int, int]:
    path = folder / f"graphs-{memory}-{n}" / "bench-loop.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(steps.GRAPH.replace("memory: fresh", f"memory: {memory}").format(limit=n + 10))
    graph = load_graph(path)
    store = SqliteStore(folder / f"store-{memory}-{n}")
    session = Session(store)
    thread_id = session.start(graph, {"task": "bench"}, folder=folder).thread_id
    actor = Sampler(n)
    tracemalloc.start()
    try:
        result = asyncio.run(
            session.advance(graph, thread_id, actor_for=lambda a, r: actor, options=RunOptions())
        )
    finally:
        tracemalloc.stop()
        store.close()
    assert result.state == "completed" and result.steps == n, result
    return actor.held[actor.early], actor.held[n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    args = parser.parse_args()
    print("SqliteStore, one role looping; live Python memory (tracemalloc) during the run")
    print(f"{'memory':<8} {'steps':>6} {'at 10% KB':>10} {'at 100% KB':>11} {'bytes/step':>11}")
    with tempfile.TemporaryDirectory() as tmp:
        held(50, "fresh", Path(tmp))  # warm-up: imports and caches are not the thread's
        for memory in ("fresh", "session"):
            for n in (int(s) for s in args.sizes.split(",")):
                early, late = held(n, memory, Path(tmp))
                per_step = (late - early) / (n - max(1, n // 10))
                print(
                    f"{memory:<8} {n:>6} {early / 1024:>10.0f} {late / 1024:>11.0f} "
                    f"{per_step:>11.1f}"
                )


if __name__ == "__main__":
    main()
