"""The OpenAI-style actor's overhead per step, next to the raw `openai` client making the same
calls (docs/models.md, "OpenAI and OpenAI-compatible servers").

Both sides talk to FakeOpenAI, which runs in a process of its own (so it does not compete with
the client for the GIL, as a real server would not) and answers every request after
`--latency` seconds, streamed. The actor plays `--steps` steps of a role with tools, through
the whole of `OpenAIActor.play` (the prompt built from the request, the function tools, the
stream put together, the usage and cost), `--concurrency` at a time with one shared client. The
raw client makes the same requests (the exact body the actor sends, recorded from one step),
streams each to its end, with the same concurrency and client settings. The goal: the actor at
least 95% of the raw client's throughput at 10 threads. Beside the wall-clock figures, the
client process's CPU time per step: on a machine shared with other work the wall-clock ratio
moves with the load, the CPU figures much less.

    python bench/providers.py [--steps 300] [--concurrency 10] [--latency 0.05] [--repeat 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

REPLY = "---\n$status: ready\nplan: guard against an empty list, then add a test\n---\nDone."
SERVER = f"""
import sys, time
sys.path.insert(0, {str(REPO)!r})
from orchestrator.testing.fake_openai import ChatResponse, FakeOpenAI
latency = float(sys.argv[1])
def answer(body):
    return ChatResponse(text={REPLY!r}, delay=latency)
with FakeOpenAI(answer, cost_per_token=1e-7) as server:
    print(server.url, flush=True)
    sys.stdin.read()  # until the benchmark closes our stdin
"""


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def request(model: str) -> Any:
    from orchestrator.actors.base import ActRequest
    from orchestrator.definition.models import Role

    role = Role(
        description="Plans a fix",
        goal="You plan fixes for reported issues.",
        tools=["read"],
        frontmatter={
            "type": "object",
            "properties": {"$status": {"const": "ready"}, "plan": {"type": "string"}},
            "required": ["$status", "plan"],
        },
    )
    return ActRequest(
        thread_id="t-bench",
        step=1,
        role_name="planner",
        role=role,
        prompt="Plan a fix for: median() is wrong for an even count",
        inputs={"issue": "median() is wrong for an even count"},
        model=model,
    )


async def run_actor(steps: int, concurrency: int, model: str) -> tuple[float, float]:
    from orchestrator.actors.openai_chat import OpenAIActor

    actor = OpenAIActor("bench", max_retries=0, timeout=30.0)
    req = request(model)
    await actor.play(req)  # the client made and warmed, outside the clock
    limit = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with limit:
            await actor.play(req)

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one() for _ in range(steps)))
    took, used = time.perf_counter() - started, time.process_time() - cpu
    await actor.aclose()
    return took, used


async def run_raw(
    steps: int, concurrency: int, url: str, body: dict[str, Any]
) -> tuple[float, float]:
    import openai

    client = openai.AsyncOpenAI(
        api_key="sk-bench",
        base_url=url,
        max_retries=0,
        timeout=30.0,
        http_client=openai.DefaultAsyncHttpxClient(),
    )
    params = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}

    async def call() -> None:
        chunks = await client.chat.completions.create(
            **params, stream=True, stream_options={"include_usage": True}
        )
        async for _ in chunks:
            pass

    await call()
    limit = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with limit:
            await call()

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one() for _ in range(steps)))
    took, used = time.perf_counter() - started, time.process_time() - cpu
    await client.close()
    return took, used


def recorded_body(model: str) -> dict[str, Any]:
    """The body the actor sends for the bench's step, from one step against a local fake."""
    from orchestrator.actors.openai_chat import OpenAIActor
    from orchestrator.testing.fake_openai import FakeOpenAI

    with FakeOpenAI() as fake:
        fake.reply_text(REPLY)
        os.environ["ORCHESTRATOR_MODELS_FILE"] = write_models(fake.url)
        asyncio.run(OpenAIActor("bench", max_retries=0).play(request(model)))
        body: dict[str, Any] = fake.chat_requests[0]
        return body


def write_models(url: str) -> str:
    path = Path(tempfile.mkdtemp()) / "models.yaml"
    path.write_text(
        f"providers:\n  bench: {{base_url: '{url}'}}\n"
        "prices:\n  bench:qwen3-coder: {input: 0, output: 0}\n"
    )
    return str(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    model = "bench:qwen3-coder"
    body = recorded_body(model)
    process, url = start_server(args.latency)
    try:
        os.environ["ORCHESTRATOR_MODELS_FILE"] = write_models(url)
        # Interleaved, best of each: the machine's load drifts during a run.
        actors, raws = [], []
        for _ in range(args.repeat):
            raws.append(asyncio.run(run_raw(args.steps, args.concurrency, url, body)))
            actors.append(asyncio.run(run_actor(args.steps, args.concurrency, model)))
        (actor, actor_cpu), (raw, raw_cpu) = min(actors), min(raws)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=10)
    ratio = raw / actor
    overhead_ms = (actor - raw) / args.steps * args.concurrency * 1000
    print(
        f"{args.steps} steps, {args.concurrency} at a time, server latency "
        f"{args.latency * 1000:.0f} ms, streamed (best of {args.repeat})"
    )
    print(f"  raw openai client   {args.steps / raw:8.1f} steps/s")
    print(f"  OpenAI-style actor  {args.steps / actor:8.1f} steps/s")
    print(f"  actor / raw         {ratio:8.1%}   (goal: at least 95%)")
    print(f"  overhead per step   {overhead_ms:8.2f} ms (wall, at this concurrency)")
    # The client's own CPU time (the server runs in another process): what the machine's load
    # blurs least.
    print(
        f"  client CPU per step {raw_cpu / args.steps * 1000:8.2f} ms raw, "
        f"{actor_cpu / args.steps * 1000:.2f} ms actor "
        f"(the actor at {raw_cpu / actor_cpu:.1%} of the raw client's CPU throughput)"
    )


if __name__ == "__main__":
    main()
