"""Threads and steps per second for 1 to 200 concurrent threads, next to the raw SDK.

The orchestrator runs a three-step graph (planner -> developer -> reviewer) through
`run_batch`, with one shared AnthropicActor (one AsyncAnthropic client and connection pool) and
a durable SqliteStore, against FakeAnthropic answering every request after `--latency` seconds
(default 50 ms, streamed). The raw SDK makes the same calls without the orchestrator: for each
thread, the same three `messages.stream(...)` requests in turn (the exact bodies the actor sends,
recorded from one orchestrator thread), read to `message_stop`, with the same concurrency, the
same client settings (max_retries, timeout, and the actor's own HTTP client,
`actors/anthropic_clients.http_client`: the SDK's `DefaultAsyncHttpxClient` with at most 1,000
connections, all of them kept alive) and an asyncio.Semaphore in place of the batch's limiter.

Beside them, the peer a user would pick instead: LangGraph, durable with its async SQLite
checkpointer (`AsyncSqliteSaver` over aiosqlite, `durability="sync"`), three nodes each making
the same SDK call with one shared client (`--no-langgraph` leaves it out).

The fake server runs in its own process (a ThreadingHTTPServer, one thread per connection), so
it does not compete with the client for the GIL: with a real API the server is elsewhere too.
The machine's cores are shared, so at high concurrency both sides are bound by the CPU; the
ratio is what the goal is about (the orchestrator durable at least 90% of the raw SDK's
throughput, in memory at least 95%, and durable ahead of LangGraph durable).

    python bench/concurrency.py [--levels 1,10,50,100,200] [--latency 0.05] [--threads-per-slot 3]
                                [--stores sqlite,memory] [--repeat 2] [--no-langgraph]
                                [--only raw,sqlite,memory,langgraph]

Each level runs max(20, C * threads-per-slot) threads of 3 steps; figures are wall-clock
throughputs of the whole level, best of `--repeat` runs, with the orchestrator run once with a
durable SqliteStore and once with a MemoryStore (what `arun_thread` uses by default).
"""

from __future__ import annotations

import argparse
import asyncio
import operator
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

GRAPH = """
name: bench-concurrency
description: Plan, implement and review, three steps.
inputs:
  type: object
  properties:
    issue: { type: string }
  required: [issue]
limits: { max_steps: 10 }
roles:
  planner:
    description: Plans the fix
    goal: You plan fixes.
    frontmatter:
      type: object
      properties:
        $status: { enum: [ready] }
        plan: { type: string }
      required: [$status, plan]
  developer:
    description: Implements the plan
    goal: You implement plans.
    frontmatter:
      type: object
      properties:
        $status: { enum: [done] }
        summary: { type: string }
      required: [$status, summary]
  reviewer:
    description: Reviews the change
    goal: You review changes.
    frontmatter:
      type: object
      properties:
        $status: { enum: [approved] }
        comments: { type: string }
      required: [$status, comments]
graph:
  $START:
    _: { role: planner, prompt: "Plan a fix for: {{{$inputs.issue}}}" }
  planner:
    ready: { role: developer, prompt: "Implement: {{{plan}}}" }
  developer:
    done: { role: reviewer, prompt: "Review: {{{summary}}}" }
  reviewer:
    approved: { role: $END, prompt: "Fixed: {{{comments}}}" }
"""

REPLIES = {
    "planner": "---\n$status: ready\nplan: guard against an empty input\n---\nThe plan, in short.",
    "developer": "---\n$status: done\nsummary: parse() returns [] on empty input\n---\nDone.",
    "reviewer": "---\n$status: approved\ncomments: looks right\n---\nApproved.",
}
STEPS_PER_THREAD = 3
LANGGRAPH = "LangGraph + AsyncSqlite"
KEY = "sk-bench-not-a-real-key"


# --------------------------------------------------------------------------- the fake, served


def serve(latency: float) -> None:
    """`--serve`: run FakeAnthropic in this process until stdin closes; print its URL first."""
    from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse

    def answer(body: dict[str, Any]) -> FakeResponse:
        role = body["system"][0]["text"].split("\n", 1)[0].removeprefix("# Role: ")
        return FakeResponse.text(REPLIES[role], delay=latency)

    with FakeAnthropic(answer) as server:
        print(server.url, flush=True)
        sys.stdin.read()


class ServerProcess:
    def __init__(self, latency: float):
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(latency)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http"):
            raise RuntimeError("the fake server did not start")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


# --------------------------------------------------------------------------- the two clients


def load(folder: Path) -> Any:
    from orchestrator.definition.loader import load_graph

    path = folder / "graphs" / "bench-concurrency.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(GRAPH)
    return load_graph(path)


def recorded_bodies(graph: Any, folder: Path) -> list[dict[str, Any]]:
    """The request bodies of one orchestrator thread, for the raw SDK to send as they are."""
    from orchestrator import run_thread
    from orchestrator.run.options import RunOptions
    from orchestrator.store.memory import MemoryStore
    from orchestrator.testing.fake_anthropic import FakeAnthropic

    with FakeAnthropic() as fake:
        for role in ("planner", "developer", "reviewer"):
            fake.reply_text(REPLIES[role])
        os.environ["ANTHROPIC_BASE_URL"] = fake.url
        result = run_thread(
            graph,
            {"issue": "parse() crashes on empty input (thread 1)"},
            store=MemoryStore(),
            workspace=folder,
            options=RunOptions(max_retries=0, timeout=30),
        )
        assert result.state == "completed", result
        bodies = fake.message_requests
    return [{k: v for k, v in body.items() if k != "stream"} for body in bodies]


async def orchestrator_level(
    graph: Any, folder: Path, threads: int, concurrency: int, store_kind: str, args: Any
) -> float:
    from orchestrator.actors.anthropic import AnthropicActor
    from orchestrator.run.batch import run_batch
    from orchestrator.run.options import RunOptions
    from orchestrator.store.memory import MemoryStore
    from orchestrator.store.sqlite import SqliteStore

    store: Any = (
        SqliteStore(Path(tempfile.mkdtemp(dir=folder))) if store_kind == "sqlite" else MemoryStore()
    )
    actor = AnthropicActor(max_retries=args.max_retries, timeout=args.timeout)
    batch = [{"issue": f"parse() crashes on empty input (thread {i})"} for i in range(threads)]
    started = time.perf_counter()
    items = await run_batch(
        graph,
        batch,
        store,
        concurrency=concurrency,
        actor_for=lambda name, role: actor,
        options_for=lambda: RunOptions(max_retries=args.max_retries, timeout=args.timeout),
        workspace=folder,
    )
    elapsed = time.perf_counter() - started
    await actor.aclose()
    done = sum(1 for item in items if item.result and item.result.state == "completed")
    if done != threads:
        reasons = {item.result.reason for item in items if item.result and item.result.reason}
        raise RuntimeError(f"{threads - done} threads did not complete: {sorted(reasons)[:3]}")
    if isinstance(store, SqliteStore):
        store.close()
    return elapsed


async def raw_level(
    bodies: list[dict[str, Any]], threads: int, concurrency: int, args: Any
) -> float:
    import anthropic

    from orchestrator.actors.anthropic_clients import http_client

    client = anthropic.AsyncAnthropic(
        api_key=KEY,
        base_url=os.environ["ANTHROPIC_BASE_URL"],
        max_retries=args.max_retries,
        timeout=args.timeout,
        http_client=http_client(),
    )
    limit = asyncio.Semaphore(concurrency)

    async def thread() -> None:
        async with limit:
            for params in bodies:
                async with client.messages.stream(**params) as stream:
                    finished = False
                    async for event in stream:
                        finished = finished or event.type == "message_stop"
                    message = await stream.get_final_message()
                assert finished and message.content[0].type == "text"

    started = time.perf_counter()
    await asyncio.gather(*(thread() for _ in range(threads)))
    elapsed = time.perf_counter() - started
    await client.close()
    return elapsed


async def langgraph_level(
    bodies: list[dict[str, Any]], folder: Path, threads: int, concurrency: int, args: Any
) -> float:
    """The peer a user would pick instead: LangGraph, durable with its async SQLite checkpointer
    (aiosqlite; WAL, synchronous=NORMAL as our store), `durability="sync"` (each step saved
    before the next, as ours). Three nodes, each making the same SDK call (the recorded body,
    streamed to `message_stop`) with one shared client, the reply kept in the graph's state."""
    import aiosqlite
    import anthropic
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.graph import END, START, StateGraph

    from orchestrator.actors.anthropic_clients import http_client

    class Steps(TypedDict, total=False):
        issue: str
        replies: Annotated[list[str], operator.add]

    client = anthropic.AsyncAnthropic(
        api_key=KEY,
        base_url=os.environ["ANTHROPIC_BASE_URL"],
        max_retries=args.max_retries,
        timeout=args.timeout,
        http_client=http_client(),
    )

    def node(params: dict[str, Any]) -> Any:
        async def call(state: Steps) -> Steps:
            async with client.messages.stream(**params) as stream:
                finished = False
                async for event in stream:
                    finished = finished or event.type == "message_stop"
                message = await stream.get_final_message()
            assert finished and message.content[0].type == "text"
            return {"replies": [message.content[0].text]}

        return call

    builder = StateGraph(Steps)
    names = ["planner", "developer", "reviewer"]
    for name, params in zip(names, bodies, strict=True):
        builder.add_node(name, node(params))
    builder.add_edge(START, names[0])
    for before, after in zip(names, names[1:], strict=False):
        builder.add_edge(before, after)
    builder.add_edge(names[-1], END)
    conn = await aiosqlite.connect(Path(tempfile.mkdtemp(dir=folder)) / "langgraph.db")
    await conn.execute("PRAGMA journal_mode=WAL")
    await conn.execute("PRAGMA synchronous=NORMAL")
    saver = AsyncSqliteSaver(conn)
    await saver.setup()
    app = builder.compile(checkpointer=saver)
    limit = asyncio.Semaphore(concurrency)

    async def thread(i: int) -> None:
        async with limit:
            config: Any = {"configurable": {"thread_id": f"thread-{i}"}}
            issue = f"parse() crashes on empty input (thread {i})"
            out = await app.ainvoke({"issue": issue}, config, durability="sync")
            assert len(out["replies"]) == STEPS_PER_THREAD

    started = time.perf_counter()
    await asyncio.gather(*(thread(i) for i in range(threads)))
    elapsed = time.perf_counter() - started
    await conn.close()
    await client.close()
    return elapsed


# --------------------------------------------------------------------------- the run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--levels", default="1,10,50,100,200")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--threads-per-slot", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--stores", default="sqlite,memory", help="orchestrator stores to run")
    parser.add_argument(
        "--no-langgraph",
        dest="langgraph",
        action="store_false",
        help="leave out the LangGraph peer (durable, AsyncSqliteSaver)",
    )
    parser.add_argument(
        "--only",
        default="",
        help="run only these variants (comma-separated: raw, sqlite, memory, langgraph), "
        "e.g. to profile one of them",
    )
    parser.add_argument("--max-retries", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--serve", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve)
        return

    import anthropic

    os.environ["ANTHROPIC_API_KEY"] = KEY
    os.environ.pop("ANTHROPIC_AUTH_TOKEN", None)
    levels = [int(n) for n in args.levels.split(",")]
    stores = [s for s in args.stores.split(",") if s]
    print(
        f"Python {platform.python_version()}, {os.cpu_count()} cores, anthropic "
        f"{anthropic.__version__}; fake latency {args.latency * 1000:.0f} ms per response, "
        f"streamed; server in its own process"
    )
    print(
        "client pool (every side: the actor's http_client()): max_connections="
        f"{anthropic.DEFAULT_CONNECTION_LIMITS.max_connections}, every one kept alive; "
        f"best of {args.repeat}, run round-robin; cpu = this process's CPU ms per model call"
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        graph = load(folder)
        bodies = recorded_bodies(graph, folder)
        assert len(bodies) == STEPS_PER_THREAD
        server = ServerProcess(args.latency)
        os.environ["ANTHROPIC_BASE_URL"] = server.url

        def timed(name: str, threads: int, level: int) -> tuple[float, float]:
            cpu = time.process_time()
            if name == "raw SDK":
                wall = asyncio.run(raw_level(bodies, threads, level, args))
            elif name == LANGGRAPH:
                wall = asyncio.run(langgraph_level(bodies, folder, threads, level, args))
            else:
                store = name.split()[-1]
                wall = asyncio.run(orchestrator_level(graph, folder, threads, level, store, args))
            return wall, time.process_time() - cpu

        names = ["raw SDK"] + [f"orchestrator + {s}" for s in stores]
        names += [LANGGRAPH] if args.langgraph else []
        if args.only:
            keys = {"raw": "raw SDK", "langgraph": LANGGRAPH}
            wanted = {keys.get(k, f"orchestrator + {k}") for k in args.only.split(",") if k}
            names = [name for name in names if name in wanted]
        try:
            for name in names:  # warm-up: imports, the first connections, SQLite files
                timed(name, 4, 4)
            print(
                f"\n{'conc':>5} {'threads':>7}  {'variant':<23} {'threads/s':>9} {'steps/s':>8} "
                f"{'cpu ms':>7} {'vs raw':>7}"
            )
            misses = []
            loads = [os.getloadavg()[0]]
            for level in levels:
                threads = max(20, level * args.threads_per_slot)
                calls = threads * STEPS_PER_THREAD
                runs: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
                for _ in range(args.repeat):  # round-robin: load changes touch all alike
                    for name in names:
                        runs[name].append(timed(name, threads, level))
                loads.append(os.getloadavg()[0])
                raw_wall = min(wall for wall, _ in runs.get("raw SDK", [(float("nan"), 0.0)]))
                for name in names:
                    wall, cpu = min(runs[name])
                    ratio = raw_wall / wall
                    print(
                        f"{level:>5} {threads:>7}  {name:<23} {threads / wall:>9.1f} "
                        f"{calls / wall:>8.1f} {cpu / calls * 1000:>7.2f} {ratio:>7.0%}",
                        flush=True,
                    )
                    goal = 0.9 if name.endswith("sqlite") else 0.95
                    if name.startswith("orchestrator") and ratio < goal:
                        misses.append(f"{name} at {level}: {ratio:.0%} (goal {goal:.0%})")
                durable = "orchestrator + sqlite"
                if LANGGRAPH in runs and durable in runs:
                    ours, theirs = min(runs[durable])[0], min(runs[LANGGRAPH])[0]
                    if ours > theirs:
                        misses.append(f"{durable} behind LangGraph at {level}")
            ceiling = ", ".join(
                f"{level}: {level / (STEPS_PER_THREAD * args.latency):.0f}" for level in levels
            )
            print(f"\nload average (1 min) over the run: {min(loads):.1f} to {max(loads):.1f}")
            print(f"latency-bound ceiling, threads/s (concurrency / (3 x latency)): {ceiling}")
            print(
                "goal (orchestrator >= 90% of the raw SDK's threads/s durable, 95% in memory; "
                "durable ahead of LangGraph durable): "
                + ("met at every level" if not misses else "not met for " + "; ".join(misses))
            )
        finally:
            server.close()


if __name__ == "__main__":
    main()
