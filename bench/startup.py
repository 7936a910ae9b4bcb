"""Wall time of `orchestrator --help` and `orchestrator validate` (goal: under 0.3 s).

Heavy modules (the anthropic SDK, rich) are imported only by the commands that need them.

    python bench/startup.py [--runs 10]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GRAPH = """name: tiny
description: A one-role graph.
roles:
  a:
    description: d
    goal: g
    frontmatter: { type: object, properties: { $status: { const: ok } } }
graph:
  $START: { _: { role: a, prompt: "go" } }
  a: { ok: { role: $END, prompt: "done" } }
"""


def timed(argv: list[str], cwd: Path, runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, cwd=cwd, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    exe = str(Path(sys.executable).with_name("orchestrator"))
    base = [exe] if Path(exe).exists() else [sys.executable, "-m", "orchestrator"]
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        (cwd / "graphs").mkdir()
        (cwd / "graphs" / "tiny.yaml").write_text(GRAPH)
        print(f"{'command':<34} {'median s':>9} {'best s':>7}")
        for label, extra in (
            ("orchestrator --help", ["--help"]),
            ("orchestrator validate", ["validate"]),
            ("python -c pass (interpreter only)", None),
        ):
            argv = base + extra if extra is not None else [sys.executable, "-c", "pass"]
            median, best = timed(argv, cwd, args.runs)
            print(f"{label:<34} {median:>9.3f} {best:>7.3f}")


if __name__ == "__main__":
    main()
