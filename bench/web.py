"""What watching threads costs: start-up with and without the web stack imported, the thread
page against `threads show` for the same thread, and a thread traced against one not traced.

    python bench/web.py [--runs 15] [--steps 200]

Each pair runs round-robin, so a change in the machine's load touches both alike; figures are
medians. Tracing needs the otel extra (`pip install -e '.[otel]'`).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from orchestrator.core.steps import thread_view
from orchestrator.definition.loader import load_graph
from orchestrator.render.diagram import Taken
from orchestrator.testing import reply, simulate
from orchestrator.views.story import story_text
from orchestrator.web.svg import to_svg
from orchestrator.web.thread_page import thread_page

REPO = Path(__file__).resolve().parents[1]
HELP = "from orchestrator.cli import main; main(['--help'])"
WITH_WEB = "import starlette.applications, starlette.routing, starlette.responses, uvicorn; "


def pair(a: Callable[[], object], b: Callable[[], object], runs: int) -> tuple[float, float]:
    """Median seconds of a and of b, run alternately."""
    ta, tb = [], []
    for _ in range(runs):
        for fn, into in ((a, ta), (b, tb)):
            start = time.perf_counter()
            fn()
            into.append(time.perf_counter() - start)
    return statistics.median(ta), statistics.median(tb)


def run(code: str) -> Callable[[], object]:
    return lambda: subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)


LOOP = """
name: rework
description: A writer and a reviewer that sends the work back, many times.
limits: { max_steps: 100000, max_visits: 100000 }
roles:
  writer:
    description: Writes
    goal: You write.
    frontmatter:
      type: object
      properties: { $status: { const: drafted }, draft: { type: string } }
      required: [$status, draft]
  reviewer:
    description: Reviews
    goal: You review.
    frontmatter:
      oneOf:
        - properties: { $status: { const: approved } }
        - properties: { $status: { const: rejected }, comments: { type: string } }
          required: [$status, comments]
graph:
  $START: { _: { role: writer, prompt: "Write about {{{$inputs.task}}}" } }
  writer: { drafted: { role: reviewer, prompt: "Review: {{{draft}}}" } }
  reviewer:
    approved: { role: $END, prompt: "Final: {{{$steps.writer.draft}}}" }
    rejected: { role: writer, prompt: "Revise: {{{comments}}}" }
"""


def replies(steps: int) -> list[str]:
    """Rework rounds until the last step approves."""
    out: list[str] = []
    while len(out) < steps - 2:
        out += [reply("drafted", draft="a draft " * 20), reply("rejected", comments="more")]
    return out + [reply("drafted", draft="final"), reply("approved")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()

    plain, web = pair(run(HELP), run(WITH_WEB + HELP), args.runs)
    print(f"{'start-up (`--help`)':<44} {'median ms':>10}")
    print(f"{'  as shipped (web stack imported by serve)':<44} {plain * 1000:>10.0f}")
    print(f"{'  with starlette + uvicorn imported first':<44} {web * 1000:>10.0f}")
    print(f"{'  ratio':<44} {web / plain:>10.2f}x")

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rework.yaml"
        path.write_text(LOOP)
        graph = load_graph(path)
    trace = simulate(graph, replies(args.steps), {"task": "x"})
    events = trace.store.events(trace.thread_id)
    row = trace.store.thread(trace.thread_id)
    plain_events = [s.event for s in events]

    def page() -> object:
        view = thread_view(plain_events)
        return thread_page(row, view, graph=graph, question=None, where="bench")

    def show() -> object:
        return story_text(row, events)

    t_page, t_show = pair(page, show, args.runs)
    steps = len(thread_view(plain_events).steps)
    print(f"\n{f'a thread of {steps} steps':<44} {'median ms':>10}")
    print(f"{'  thread page (HTML, graph drawn)':<44} {t_page * 1000:>10.1f}")
    print(f"{'  `threads show` text':<44} {t_show * 1000:>10.1f}")
    print(f"{'  ratio':<44} {t_page / t_show:>10.2f}x")
    svg = pair(lambda: to_svg(graph, Taken.from_edges(thread_view(plain_events).edges())), show, 3)
    print(f"{'  of which reading the log and drawing':<44} {svg[0] * 1000:>10.1f}")

    try:
        # deferred: the otel extra is optional for this benchmark
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        from orchestrator.run import telemetry
    except ImportError:
        print("\n(tracing: install the otel extra to measure it)")
        return
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    answers = replies(args.steps)

    def untraced() -> object:
        telemetry.use_provider(None)
        return simulate(graph, answers, {"task": "x"})

    def traced() -> object:
        telemetry.use_provider(provider)
        exporter.clear()
        return simulate(graph, answers, {"task": "x"})

    t_off, t_on = pair(untraced, traced, max(3, args.runs // 3))
    telemetry.use_provider(None)
    print(f"\n{f'a simulated thread of {steps} steps':<44} {'µs/step':>10}")
    print(f"{'  not traced':<44} {t_off / steps * 1e6:>10.0f}")
    print(f"{'  traced (in-memory exporter)':<44} {t_on / steps * 1e6:>10.0f}")
    print(f"{'  ratio':<44} {t_on / t_off:>10.2f}x")


if __name__ == "__main__":
    main()
