"""Cost per step at 10, 100, 1,000 and 10,000 steps, with durable SQLite persistence.

Goal: flat. Each step appends two events, each in its own transaction with the thread's summary
row; nothing re-reads or re-serialises the history. The columns "first 10%" and "last 10%" are
the median time between two model calls early and late in the same thread; their ratio is the
growth. The mean also carries the rare slow step (a WAL checkpoint, a GC pass).

    python bench/growth.py [--sizes 10,100,1000,10000] [--memory fresh|session]

`--memory session` makes the looping role continue its own conversation: each request then
carries the role's earlier visits, kept within the role's `memory_budget` (run/memory.py). The
runner keeps each role's visits and their running sizes as the thread grows, so planning a step
costs the same at visit 10 and 10,000; what is handed to the actor grows until the budget is
reached (the model's own input, now bounded), then stays flat.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import steps  # noqa: E402  (the same loop graph and instant actor)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10,100,1000,10000")
    parser.add_argument("--memory", choices=["fresh", "session"], default="fresh")
    args = parser.parse_args()
    steps.GRAPH = steps.GRAPH.replace("memory: fresh", f"memory: {args.memory}")
    print(f"SqliteStore, one role looping, memory: {args.memory}")
    print(
        f"{'steps':>6} {'mean µs/step':>13} {'first 10% µs':>13} {'last 10% µs':>12} "
        f"{'last/first':>10}"
    )
    ratios = []
    lasts: list[tuple[int, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        steps.run(10, "sqlite", Path(tmp))  # warm-up
        for n in (int(s) for s in args.sizes.split(",")):
            mean, first, last = steps.run(n, "sqlite", Path(tmp))
            ratios.append((n, last / first))
            lasts.append((n, last))
            print(
                f"{n:>6} {mean * 1e6:>13.0f} {first * 1e6:>13.0f} {last * 1e6:>12.0f} "
                f"{last / first:>10.2f}"
            )
    n, worst = ratios[-1]
    verdict = "flat" if worst < 1.25 else "grows"
    print(f"\n{verdict}: a step late in a {n}-step thread costs {worst:.2f}x an early one")
    (small, at_small), (big, at_big) = lasts[0], lasts[-1]
    print(
        f"a late step at {big} steps costs {at_big / at_small:.2f}x a late step at {small} "
        f"steps (goal <= 1.1x)"
    )


if __name__ == "__main__":
    main()
