"""Tokens, cache hits and actor overhead per step, with the real SDK against FakeAnthropic.

Runs threads of two alternating roles (a worker that revisits with `memory: session` or
`fresh`, and a checker) through the real runner, Anthropic actor and `anthropic` client against
the local fake Messages API, which counts tokens as len(text) // 4 and simulates prompt caching.
It prints, per thread length and memory mode: prompt tokens per step early and late in the
thread, the share read from cache, the price per step at the default model's list price, and
the orchestrator's own time per step (fake latency is zero, so this is all overhead: prompt
assembly, SDK, HTTP on loopback, extraction, SQLite).

    python bench/tokens.py [--steps 10,40] [--memory session,fresh] [--budget TOKENS]

`--budget` sets the graph's `defaults.memory_budget`: a `session` role's earlier visits are then
kept within it (run/memory.py), so "prompt late" stops growing once the budget is reached.

What to look for: with `session` the prompt grows with each visit, but nearly all of it is read
from cache at a tenth of the price; with `fresh` the prompt stays flat (the history is cut to
its budget). The overhead per step should not grow with the thread.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from orchestrator import run_thread
from orchestrator.core.events import StepCommitted
from orchestrator.definition.loader import load_graph
from orchestrator.definition.model_config import resolve_model
from orchestrator.run.options import RunOptions
from orchestrator.store.sqlite import SqliteStore
from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse

GRAPH = """
name: bench-tokens
description: A worker and a checker taking turns.
limits: {{ max_steps: {steps}, max_visits: {steps} }}
{defaults}roles:
  worker:
    description: Does a round of work
    goal: You are a diligent worker. {padding}
    procedure: Read the last check, then do one more round.
    memory: {memory}
    frontmatter:
      type: object
      properties:
        $status: {{ enum: [progress] }}
        note: {{ type: string, description: what you did this round }}
      required: [$status, note]
  checker:
    description: Checks the round
    goal: You check work. {padding}
    memory: {memory}
    frontmatter:
      type: object
      properties:
        $status: {{ enum: [again, done] }}
        verdict: {{ type: string }}
      required: [$status, verdict]
graph:
  $START: {{ _: {{ role: worker, prompt: "Start on: {{{{{{$inputs.task}}}}}}" }} }}
  worker:
    progress: {{ role: checker, prompt: "Check this round: {{{{{{note}}}}}}" }}
  checker:
    again: {{ role: worker, prompt: "Go on; the checker said: {{{{{{verdict}}}}}}" }}
    done: {{ role: $END, prompt: "Done: {{{{{{verdict}}}}}}" }}
"""


class Model:
    """The fake model: a worker note and a checker verdict of fixed size; `done` at the end."""

    def __init__(self, steps: int):
        self.steps = steps
        self.calls = 0

    def __call__(self, body: dict[str, Any]) -> FakeResponse:
        self.calls += 1
        role = body["system"][0]["text"].split("\n", 1)[0].removeprefix("# Role: ")
        if role == "worker":
            return FakeResponse.text(
                f"---\n$status: progress\nnote: round {self.calls} {'w' * 400}\n---\n{'b' * 800}"
            )
        status = "done" if self.calls >= self.steps else "again"
        return FakeResponse.text(f"---\n$status: {status}\nverdict: {'v' * 300}\n---\n")


def run(steps: int, memory: str, budget: int | None = None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic(Model(steps)) as server:
        os.environ["ANTHROPIC_BASE_URL"] = server.url
        os.environ.setdefault("ANTHROPIC_API_KEY", "sk-bench-not-a-real-key")
        path = Path(tmp) / "graphs" / "bench-tokens.yaml"
        path.parent.mkdir()
        defaults = f"defaults: {{ memory_budget: {budget} }}\n" if budget else ""
        path.write_text(
            GRAPH.format(
                steps=steps, memory=memory, padding="Be precise. " * 150, defaults=defaults
            )
        )
        graph = load_graph(path)
        store = SqliteStore(Path(tmp) / "store")
        started = time.perf_counter()
        result = run_thread(
            graph,
            {"task": "tidy the module"},
            store=store,
            workspace=tmp,
            options=RunOptions(max_retries=0, timeout=30),
        )
        elapsed = time.perf_counter() - started
        done = [
            e.event for e in store.events(result.thread_id) if isinstance(e.event, StepCommitted)
        ]
        store.close()
    prompts = [
        s.usage.get("input_tokens", 0)
        + s.usage.get("cache_read_input_tokens", 0)
        + s.usage.get("cache_creation_input_tokens", 0)
        for s in done
    ]
    read = sum(s.usage.get("cache_read_input_tokens", 0) for s in done)
    quarter = max(len(done) // 4, 1)
    return {
        "steps": len(done),
        "early": statistics.mean(prompts[:quarter]),
        "late": statistics.mean(prompts[-quarter:]),
        "cached": read / max(sum(prompts), 1),
        "usd": sum(s.cost_usd for s in done) / max(len(done), 1),
        "ms": elapsed * 1000 / max(len(done), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", default="10,40")
    parser.add_argument("--memory", default="session,fresh")
    parser.add_argument("--budget", type=int, help="the roles' memory_budget (tokens)")
    args = parser.parse_args()
    print(f"model {resolve_model(None)}; tokens are the fake's len(text) // 4")
    print(
        f"{'memory':8} {'steps':>5} {'prompt early':>12} {'prompt late':>11} "
        f"{'cached':>7} {'$/step':>9} {'ms/step':>8}"
    )
    run(2, "fresh")  # warm-up: imports, first connection
    for memory in args.memory.split(","):
        for steps in (int(s) for s in args.steps.split(",")):
            r = run(steps, memory, args.budget)
            print(
                f"{memory:8} {int(r['steps']):>5} {r['early']:>12.0f} {r['late']:>11.0f} "
                f"{r['cached']:>7.1%} {r['usd']:>9.5f} {r['ms']:>8.1f}"
            )


if __name__ == "__main__":
    main()
