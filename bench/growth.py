"""Cost per step at 10, 100, 1,000 and 10,000 steps, with durable SQLite persistence.

Goal: flat. Each step appends one event in its own transaction and updates the thread's
summary row; nothing re-reads or re-serialises the history.

    python bench/growth.py [--sizes 10,100,1000,10000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from steps import run  # noqa: E402  (the same loop graph and instant actor)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10,100,1000,10000")
    args = parser.parse_args()
    print(f"{'steps':>6} {'mean µs/step':>13} {'first 10% µs':>13} {'last 10% µs':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        run(10, "sqlite", Path(tmp))  # warm-up
        for steps in (int(s) for s in args.sizes.split(",")):
            mean, first, last = run(steps, "sqlite", Path(tmp))
            print(f"{steps:>6} {mean * 1e6:>13.0f} {first * 1e6:>13.0f} {last * 1e6:>12.0f}")


if __name__ == "__main__":
    main()
