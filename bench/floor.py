"""The floor of a step: its bare parts, timed alone, next to one real durable step, in one run.

A step of the orchestrator, durable, with an instant "model", does at least this work:

1. save its events: one SQLite WAL transaction holding two ~1 KB event rows (StepStarted and
   StepCommitted share one when the role changes nothing but its reply) plus the thread's
   summary row; the floor counts both the one-transaction and the two-transaction cost;
2. parse the reply's frontmatter (PyYAML's C loader);
3. check it against the role's schema (a jsonschema validator compiled once; and the compiled
   jsonschema-rs check the orchestrator now uses for valid replies);
4. render the next prompt (chevron_blue).

The real step is `bench/overhead.py`'s writer/reviewer loop (1,000 steps) through the session,
runner, moderator, extraction and SqliteStore. Goal: a real step within 1.5x the sum of its
parts. Each figure is the median of `--repeat` rounds, the rounds run round-robin so that a change
in the machine's load touches all of them alike.

    python bench/floor.py [--steps 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import chevron_blue
import jsonschema_rs
import yaml
from jsonschema import Draft202012Validator

sys.path.insert(0, str(Path(__file__).resolve().parent))

import overhead  # noqa: E402  (the same loop, graph and replies)

N = 2000  # repetitions of each part per round


def per_call(work: Callable[[int], object], n: int = N) -> float:
    started = time.perf_counter()
    for i in range(n):
        work(i)
    return (time.perf_counter() - started) / n


def sqlite_part(folder: Path, events_per_tx: int) -> Callable[[int], object]:
    db = sqlite3.connect(folder / f"floor-{events_per_tx}-{time.monotonic_ns()}.db")
    db.isolation_level = None
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(
        "CREATE TABLE events (thread_id TEXT, seq INTEGER, at REAL, type TEXT, data TEXT,"
        " PRIMARY KEY (thread_id, seq)) WITHOUT ROWID"
    )
    db.execute("CREATE TABLE threads (id TEXT PRIMARY KEY, state TEXT, steps INT, seq INT)")
    db.execute("INSERT INTO threads VALUES ('t', 'running', 0, 0)")
    row = json.dumps({"type": "StepCommitted", "reply": "x" * 1000})
    seq = [0]

    def save(i: int) -> None:
        for _ in range(2 // events_per_tx):
            db.execute("BEGIN IMMEDIATE")
            for _ in range(events_per_tx):
                seq[0] += 1
                db.execute(
                    "INSERT INTO events VALUES ('t', ?, ?, 'StepCommitted', ?)",
                    (seq[0], time.time(), row),
                )
                db.execute("UPDATE threads SET steps = ?, seq = ? WHERE id = 't'", (seq[0], seq[0]))
            db.execute("COMMIT")

    return save


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    reply = overhead.reply_for("reviewer", 2, args.steps)
    _, head, body = reply.split("---\n", 2)
    data = yaml.load(head, Loader=yaml.CSafeLoader)
    schema = overhead.REVIEWER_VARIANTS["revise"]
    validator = Draft202012Validator(schema)
    fast = jsonschema_rs.validator_for(schema)
    template = overhead.EDGES[("reviewer", "revise")][1]

    rounds: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        parts: dict[str, Callable[[int], object]] = {
            "SQLite: 2 events in 1 transaction": sqlite_part(folder, 2),
            "SQLite: 2 events in 2 transactions": sqlite_part(folder, 1),
            "YAML: C load of the frontmatter": lambda i: yaml.load(head, Loader=yaml.CSafeLoader),
            "jsonschema: compiled, iter_errors": lambda i: list(validator.iter_errors(data)),
            "jsonschema-rs: is_valid": lambda i: fast.is_valid(data),
            "Mustache: chevron_blue render": lambda i: chevron_blue.render(
                template, {**data, "$body": body}
            ),
        }
        for _ in range(args.repeat):
            for name, work in parts.items():
                rounds.setdefault(name, []).append(per_call(work))
            elapsed = overhead.run_orchestrator(args.steps, folder, durable=True)
            rounds.setdefault("real step", []).append(elapsed / args.steps)

    med = {name: statistics.median(values) * 1e6 for name, values in rounds.items()}
    print(f"Python {sys.version.split()[0]}; median of {args.repeat} rounds, µs per call")
    for name, value in med.items():
        if name != "real step":
            print(f"  {name:<42} {value:8.1f}")
    floor = (
        med["SQLite: 2 events in 1 transaction"]
        + med["YAML: C load of the frontmatter"]
        + med["jsonschema: compiled, iter_errors"]
        + med["Mustache: chevron_blue render"]
    )
    floor_fast = floor - med["jsonschema: compiled, iter_errors"] + med["jsonschema-rs: is_valid"]
    floor_two = (
        floor - med["SQLite: 2 events in 1 transaction"] + med["SQLite: 2 events in 2 transactions"]
    )
    step = med["real step"]
    print(f"\n  {'sum of parts (1 tx, jsonschema)':<42} {floor:8.1f}")
    print(f"  {'sum of parts (1 tx, jsonschema-rs)':<42} {floor_fast:8.1f}")
    print(f"  {'sum of parts (2 tx, jsonschema)':<42} {floor_two:8.1f}")
    print(f"  {'one real durable step (overhead.py loop)':<42} {step:8.1f}")
    ratio = step / floor
    verdict = "met" if ratio <= 1.5 else "not met"
    print(
        f"\nreal step / sum of its parts (1 tx, jsonschema): {ratio:.2f}x (goal <= 1.5x: {verdict})"
    )
    print(f"real step / sum of parts (2 tx, jsonschema): {step / floor_two:.2f}x")


if __name__ == "__main__":
    main()
