"""The moderator's cost per step, side by side with LangGraph and Burr doing the same work.

One run, one status loop: a writer and a reviewer take turns for N steps (default 1,000); the
reviewer says `revise` until the last step, then `approved`. The "model" answers instantly
with the same reply texts everywhere, so what is measured is each framework's own cost per
step, plus the same per-step work everywhere:

1. take the reply text of the role's turn;
2. split off the YAML frontmatter and parse it (PyYAML with libyaml);
3. validate it against the role's JSON Schema (jsonschema validators compiled once, per status);
4. route by `$status`;
5. render the next edge prompt (Mustache through chevron_blue).

The orchestrator does this with its own pipeline (`extract_output`, which is stricter: YAML 1.2
values, duplicate-key checks, per-status contracts, error messages; then `engine.decide`), and
records every step as events (StepStarted, StepCommitted with the whole reply) in its store.
The peers do it by hand in their nodes/actions, in the cheapest way a person would write it, and
keep only what routing needs in their state. Persistence:

    orchestrator + SqliteStore   durable: 2 events per step, committed on the event loop's
                                 thread before the next step (in one transaction when the role
                                 only asks a model and it answers at once, as here)
    orchestrator + MemoryStore   the same events, in a list
    LangGraph, no checkpointer   StateGraph, conditional edges
    LangGraph + InMemorySaver    a checkpoint per superstep, in memory
    LangGraph + SqliteSaver      langgraph-checkpoint-sqlite, durability="sync" (saved before the
                                 next step, as ours) and "async" (LangGraph's default)
    Burr                         ApplicationBuilder, `when(status=...)` transitions
    Burr + SQLitePersister       state saved after each step
    Burr + local tracker         LocalTrackingClient (JSON lines per step)

Every SQLite database is in WAL mode with synchronous=NORMAL (the orchestrator's setting), in a
temporary directory on the same disk. Each variant runs `--repeat` times after a warm-up; the
median is printed, with the machine's load average. Goals: the orchestrator with durable SQLite
costs at most 0.6x LangGraph without any persistence (issue 14), at most Burr with its SQLite
persister, and in memory at most Burr in memory (issue 23).

    python bench/overhead.py [--steps 1000] [--repeat 5] [--history] [--only orchestrator,Burr]

`--history` makes the peers also keep every reply in their state (a list channel with an `add`
reducer), as the orchestrator's log does: a checkpointer then re-serialises the whole history at
every step, and its cost per step grows with the thread.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import operator
import os
import platform
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

import chevron_blue
import yaml
from jsonschema import Draft202012Validator

from orchestrator.actors.base import ActReply, ActRequest
from orchestrator.definition.loader import load_graph
from orchestrator.run.options import RunOptions
from orchestrator.run.session import Session
from orchestrator.store.memory import MemoryStore
from orchestrator.store.sqlite import SqliteStore

# --------------------------------------------------------------------------- the shared work

WRITER_SCHEMA = {
    "type": "object",
    "properties": {
        "$status": {"enum": ["draft"]},
        "title": {"type": "string"},
        "text": {"type": "string"},
    },
    "required": ["$status", "title", "text"],
}
REVIEW_FIELDS = {"comments": {"type": "string"}, "score": {"type": "integer"}}
REVIEWER_VARIANTS = {
    status: {
        "type": "object",
        "properties": {"$status": {"const": status}, **REVIEW_FIELDS},
        "required": ["$status", "comments", "score"],
    }
    for status in ("revise", "approved")
}

GRAPH = """
name: bench-overhead
description: A writer and a reviewer in a status loop.
inputs: { type: object, properties: { topic: { type: string } }, required: [topic] }
limits: { max_steps: LIMIT, max_visits: LIMIT }
roles:
  writer:
    description: Writes a draft
    goal: You write.
    memory: fresh
    frontmatter: WRITER_SCHEMA
  reviewer:
    description: Reviews the draft
    goal: You review.
    memory: fresh
    frontmatter: REVIEWER_SCHEMA
graph:
  $START: { _: { role: writer, prompt: "Write about {{{$inputs.topic}}}" } }
  writer:
    draft: { role: reviewer, prompt: "Review {{{title}}}: {{{text}}}" }
  reviewer:
    revise: { role: writer, prompt: "Revise ({{{score}}}/5): {{{comments}}}" }
    approved: { role: $END, prompt: "Approved: {{{comments}}}" }
""".replace("WRITER_SCHEMA", json.dumps(WRITER_SCHEMA)).replace(
    "REVIEWER_SCHEMA", json.dumps({"oneOf": list(REVIEWER_VARIANTS.values())})
)

# The same edges for the peers: (role, status) -> (next node, prompt template).
EDGES: dict[tuple[str, str], tuple[str, str]] = {
    ("writer", "draft"): ("reviewer", "Review {{{title}}}: {{{text}}}"),
    ("reviewer", "revise"): ("writer", "Revise ({{{score}}}/5): {{{comments}}}"),
    ("reviewer", "approved"): ("end", "Approved: {{{comments}}}"),
}
FIRST_PROMPT = "Write about {{{$inputs.topic}}}"
INPUTS = {"topic": "event sourcing"}

DRAFT = (
    "---\n$status: draft\ntitle: Event sourcing in one page\n"
    "text: A thread is a fold over an append-only log; every reply is an event.\n"
    "---\nHere is the draft, with a short body for people.\n"
)
REVISE = "---\n$status: revise\ncomments: tighten the second sentence\nscore: 3\n---\nNotes.\n"
APPROVED = "---\n$status: approved\ncomments: good, ship it\nscore: 5\n---\n"


def reply_for(role: str, step: int, steps: int) -> str:
    """The instant model: the same texts for every framework."""
    if role == "writer":
        return DRAFT
    return APPROVED if step >= steps else REVISE


class HandWork:
    """Steps 2-5 as a person would write them by hand in a peer's node."""

    def __init__(self) -> None:
        self.validators = {
            ("writer", "draft"): Draft202012Validator(WRITER_SCHEMA),
            **{("reviewer", s): Draft202012Validator(v) for s, v in REVIEWER_VARIANTS.items()},
        }

    def step(self, role: str, step: int, steps: int) -> tuple[str, str, dict[str, Any], str]:
        """-> (status, next node, frontmatter, next prompt)"""
        text = reply_for(role, step, steps)
        _, head, body = text.split("---\n", 2)
        data = yaml.load(head, Loader=yaml.CSafeLoader)
        status = data["$status"]
        validator = self.validators[(role, status)]
        errors = list(validator.iter_errors(data))
        if errors:
            raise ValueError(errors)
        target, template = EDGES[(role, status)]
        prompt = chevron_blue.render(template, {**data, "$body": body})
        return status, target, data, prompt


# --------------------------------------------------------------------------- the orchestrator


class Instant:
    async def play(self, request: ActRequest) -> ActReply:
        return ActReply(text=reply_for(request.role_name, request.step, self.steps))

    def __init__(self, steps: int):
        self.steps = steps


def run_orchestrator(steps: int, folder: Path, durable: bool) -> float:
    path = folder / "graphs" / "bench-overhead.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(GRAPH.replace("LIMIT", str(steps + 10)))
    graph = load_graph(path)
    store = SqliteStore(folder / f"store-{uuid.uuid4().hex}") if durable else MemoryStore()
    actor = Instant(steps)
    started = time.perf_counter()
    session = Session(store)
    thread_id = session.start(graph, INPUTS, folder=folder).thread_id
    result = asyncio.run(
        session.advance(graph, thread_id, actor_for=lambda n, r: actor, options=RunOptions())
    )
    elapsed = time.perf_counter() - started
    assert result.state == "completed" and result.steps == steps, result
    store.close() if isinstance(store, SqliteStore) else None
    return elapsed


# --------------------------------------------------------------------------- LangGraph


def sqlite_connection(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def langgraph_runner(checkpointer: str, history: bool) -> Callable[[int, Path], float]:
    from langgraph.graph import END, START, StateGraph

    class LoopState(TypedDict, total=False):
        step: int
        prompt: str
        status: str
        target: str
        data: dict[str, Any]

    class LoopStateWithHistory(LoopState, total=False):
        replies: Annotated[list[str], operator.add]

    work = HandWork()

    def node(role: str, steps: int) -> Callable[[Any], dict[str, Any]]:
        def run(state: Any) -> dict[str, Any]:
            step = state["step"] + 1
            status, target, data, prompt = work.step(role, step, steps)
            update = {"step": step, "status": status, "target": target, "data": data}
            update["prompt"] = prompt
            if history:
                update["replies"] = [reply_for(role, step, steps)]
            return update

        return run

    def build(steps: int, saver: Any) -> Any:
        builder = StateGraph(LoopStateWithHistory if history else LoopState)
        builder.add_node("writer", node("writer", steps))
        builder.add_node("reviewer", node("reviewer", steps))
        builder.add_edge(START, "writer")
        builder.add_edge("writer", "reviewer")
        builder.add_conditional_edges(
            "reviewer", lambda s: s["target"], {"writer": "writer", "end": END}
        )
        return builder.compile(checkpointer=saver)

    def run(steps: int, folder: Path) -> float:
        saver: Any = None
        conn = None
        durability: Any = None
        if checkpointer == "memory":
            from langgraph.checkpoint.memory import InMemorySaver

            saver = InMemorySaver()
        elif checkpointer.startswith("sqlite"):
            from langgraph.checkpoint.sqlite import SqliteSaver

            conn = sqlite_connection(folder / f"lg-{uuid.uuid4().hex}.db")
            saver = SqliteSaver(conn)
            saver.setup()
            durability = checkpointer.split("-")[1]
        app = build(steps, saver)
        config = {
            "recursion_limit": steps + 10,
            "configurable": {"thread_id": uuid.uuid4().hex},
        }
        first = chevron_blue.render(FIRST_PROMPT, {"$inputs": INPUTS})
        started = time.perf_counter()
        if durability:
            out = app.invoke({"step": 0, "prompt": first}, config, durability=durability)
        else:
            out = app.invoke({"step": 0, "prompt": first}, config)
        elapsed = time.perf_counter() - started
        assert out["step"] == steps and out["status"] == "approved", out
        if conn is not None:
            conn.close()
        return elapsed

    return run


# --------------------------------------------------------------------------- Burr


def burr_runner(extra: str, history: bool) -> Callable[[int, Path], float]:
    from burr.core import ApplicationBuilder, State, action, when

    work = HandWork()

    def make(role: str, steps: int) -> Any:
        writes = ["step", "prompt", "status", "data"] + (["replies"] if history else [])

        @action(reads=["step", "prompt"] + (["replies"] if history else []), writes=writes)
        def act(state: State) -> State:
            step = state["step"] + 1
            status, _, data, prompt = work.step(role, step, steps)
            new = state.update(step=step, prompt=prompt, status=status, data=data)
            if history:
                new = new.append(replies=reply_for(role, step, steps))
            return new

        return act

    @action(reads=[], writes=[])
    def end(state: State) -> State:
        return state

    def run(steps: int, folder: Path) -> float:
        first = chevron_blue.render(FIRST_PROMPT, {"$inputs": INPUTS})
        initial: dict[str, Any] = {"step": 0, "prompt": first}
        if history:
            initial["replies"] = []
        builder = (
            ApplicationBuilder()
            .with_actions(writer=make("writer", steps), reviewer=make("reviewer", steps), end=end)
            .with_transitions(
                ("writer", "reviewer"),
                ("reviewer", "writer", when(status="revise")),
                ("reviewer", "end", when(status="approved")),
            )
            .with_state(**initial)
            .with_entrypoint("writer")
            .with_identifiers(app_id=uuid.uuid4().hex, partition_key="bench")
        )
        conn = None
        if extra == "sqlite":
            from burr.core.persistence import SQLitePersister

            conn = sqlite_connection(folder / f"burr-{uuid.uuid4().hex}.db")
            persister = SQLitePersister(db_path="", connection=conn)
            persister.initialize()
            builder = builder.with_state_persister(persister)
        elif extra == "tracker":
            from burr.tracking import LocalTrackingClient

            builder = builder.with_tracker(
                LocalTrackingClient(project="bench", storage_dir=str(folder / "burr-tracking"))
            )
        app = builder.build()
        started = time.perf_counter()
        _, _, state = app.run(halt_after=["end"])
        elapsed = time.perf_counter() - started
        assert state["step"] == steps and state["status"] == "approved"
        if conn is not None:
            conn.close()
        return elapsed

    return run


# --------------------------------------------------------------------------- the run


def variants(history: bool) -> list[tuple[str, Callable[[], Callable[[int, Path], float]]]]:
    return [
        (
            "orchestrator + SqliteStore (durable)",
            lambda: lambda n, f: run_orchestrator(n, f, durable=True),
        ),
        (
            "orchestrator + MemoryStore",
            lambda: lambda n, f: run_orchestrator(n, f, durable=False),
        ),
        ("LangGraph, no checkpointer", lambda: langgraph_runner("none", history)),
        ("LangGraph + InMemorySaver", lambda: langgraph_runner("memory", history)),
        ("LangGraph + SqliteSaver (sync)", lambda: langgraph_runner("sqlite-sync", history)),
        ("LangGraph + SqliteSaver (async)", lambda: langgraph_runner("sqlite-async", history)),
        ("Burr", lambda: burr_runner("", history)),
        ("Burr + SQLitePersister", lambda: burr_runner("sqlite", history)),
        ("Burr + local tracker", lambda: burr_runner("tracker", history)),
    ]


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = []
    for name in ("orchestrator", "langgraph", "langgraph-checkpoint-sqlite", "burr"):
        try:
            parts.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            parts.append(f"{name} (not installed)")
    return ", ".join(parts)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--history", action="store_true", help="peers keep every reply in state")
    parser.add_argument(
        "--only",
        default="",
        help="run only the variants whose name contains one of these comma-separated words "
        "(e.g. 'orchestrator,Burr')",
    )
    args = parser.parse_args()
    wanted = [w.strip() for w in args.only.split(",") if w.strip()]
    steps = args.steps
    print(f"Python {platform.python_version()} on {platform.machine()}; {versions()}")
    print(
        f"{steps} steps of a writer/reviewer loop, median of {args.repeat} runs; "
        f"peer state: {'every reply (history)' if args.history else 'last output only'}"
    )
    load_before = _load()
    runners: dict[str, Callable[[int, Path], float]] = {}
    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for label, make in variants(args.history):
            if wanted and not any(w in label for w in wanted):
                continue
            try:
                runner = make()
                runner(20, folder)  # warm-up: imports, caches, first connection
            except ImportError as exc:
                print(
                    f"{label}: skipped, cannot import {exc.name or exc} (pip install -e '.[bench]')"
                )
                continue
            runners[label] = runner
            times[label] = []
        # Round-robin, so a change in the machine's load touches every variant alike.
        for _ in range(args.repeat):
            for label, runner in runners.items():
                times[label].append(runner(steps, folder) / steps * 1e6)
    results = {label: statistics.median(t) for label, t in times.items()}
    print(f"load average before: {load_before}, after: {_load()} (2 cores shared: compare ratios)")
    print(f"{'variant':<38} {'µs/step':>9} {'min':>7} {'max':>7}")
    for label, value in results.items():
        print(f"{label:<38} {value:>9.0f} {min(times[label]):>7.0f} {max(times[label]):>7.0f}")
    ours = results.get("orchestrator + SqliteStore (durable)")
    base = results.get("LangGraph, no checkpointer")
    # Issue 23: a durable step as cheap as the cheapest durable peer's, in memory the same.
    for mine, peer in (
        ("orchestrator + SqliteStore (durable)", "Burr + SQLitePersister"),
        ("orchestrator + MemoryStore", "Burr"),
    ):
        if mine in results and peer in results:
            ratio = results[mine] / results[peer]
            verdict = "met" if ratio <= 1.0 else "not met"
            print(f"{mine} / {peer}: {ratio:.2f}x (goal <= 1: {verdict})")
    if ours:
        print("\nratio to the orchestrator with SqliteStore (>1: the peer costs more per step)")
        for label, value in results.items():
            print(f"  {label:<38} {value / ours:>6.2f}x")
    if ours and base:
        verdict = "met" if ours <= 0.6 * base else "not met"
        print(
            f"\ngoal (orchestrator + SqliteStore <= 0.6x LangGraph without persistence): "
            f"{verdict} ({ours:.0f} vs {base:.0f} µs/step: {ours / base:.2f}x)"
        )


if __name__ == "__main__":
    main()
