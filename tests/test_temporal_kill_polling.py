"""Workers SIGKILLed mid-step while the thread is read continuously, then every history replayed.

A thread's workflow must take no decision from time or from anything a replay cannot reproduce:
a worker that takes over a thread (or answers a query on it) replays its history, and any
command the replay issues differently is a nondeterminism error that fails the workflow task,
and every later query, also once the thread completed. The summary row in the memo was once
written on a clock (at most every two seconds of workflow time), and this test caught it:
`threads show` right after a SIGKILL made a worker replay the history at another time and
decide otherwise ("ModifyWorkflowPropertiesMachine does not handle ActivityTaskScheduled").

What it does: a chain of steps played through the fake Messages API by two worker processes;
while one poller reads the thread as `threads show` does (describe, then the `events` query) and
another asks the `graph_snapshot` query, the worker running each step is SIGKILLed mid-step and
a new one started, over many rounds. Then: the thread completed with each step committed once,
`threads show` works, no worker logged a nondeterminism error, and Temporal's `Replayer` replays
every history the test produced (each run of the workflow) through the current workflow code.
"""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.temporal_helpers import require_extra

require_extra()

from temporalio.client import WorkflowHistory  # noqa: E402

from orchestrator.temporal.session import TemporalSession  # noqa: E402
from orchestrator.temporal.workflow import MEMO_KEY, WORKFLOW_NAME, ThreadWorkflow  # noqa: E402
from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse  # noqa: E402
from orchestrator.views.story import story_json  # noqa: E402
from tests.anthropic_fixtures import TEST_KEY  # noqa: E402
from tests.cli_helpers import Project  # noqa: E402
from tests.process_helpers import wait_until  # noqa: E402
from tests.temporal_helpers import (  # noqa: E402, F401  (a fixture, used by name)
    WorkerProcess,
    new_queue,
    temporal_address,
)

STEPS = 7  # the chain's length: the worker of each step is killed, once
KILLS = 5  # at least: a step that ends before the test sees it started is not killed
LATENCY = 2.0  # seconds each model call takes: a step is in flight long enough to be killed


def chain(n: int) -> str:
    """A graph of `n` roles, each handing on to the next; the last one ends the thread."""
    roles, edges = [], ['  $START: { _: { role: r1, prompt: "Begin" } }']
    for k in range(1, n + 1):
        roles.append(
            f"  r{k}:\n    description: Role {k}\n    goal: You are r{k}.\n    memory: fresh\n"
            "    frontmatter:\n      type: object\n"
            "      properties: { $status: { enum: [next] }, note: { type: string } }\n"
            "      required: [$status, note]\n"
        )
        target = f"r{k + 1}" if k < n else "$END"
        edges.append(
            f'  r{k}: {{ next: {{ role: "{target}", prompt: "Go on after {{{{note}}}}" }} }}'
        )
    return (
        "name: chain\ndescription: Steps one after another.\n"
        f"limits: {{ max_steps: {n + 5} }}\nroles:\n"
        + "".join(roles)
        + "graph:\n"
        + "\n".join(edges)
        + "\n"
    )


class Poller:
    """Reads the thread over and over from a thread of its own, keeping every failure."""

    def __init__(self, read: Any):
        self.read = read
        self.reads = 0
        self.failures: list[str] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.done.is_set():
            try:
                self.read()
                self.reads += 1
            except Exception as exc:  # a reader must see every failure, not die of the first
                self.failures.append(f"{type(exc).__name__}: {exc}")
            time.sleep(0.05)

    def stop(self) -> None:
        self.done.set()
        self.thread.join(timeout=60)


@pytest.fixture
def claude() -> Iterator[FakeAnthropic]:
    def answer(body: dict[str, Any]) -> FakeResponse:
        return FakeResponse.text("---\n$status: next\nnote: on\n---\n", delay=LATENCY)

    fake = FakeAnthropic(handler=answer)
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


def test_workers_killed_mid_step_while_polled_leave_histories_that_replay(
    temporal_address: str,  # noqa: F811
    tmp_path: Path,
    claude: FakeAnthropic,
) -> None:
    project = Project(tmp_path)
    graph = project.graph(chain(STEPS), "chain")
    queue = new_queue()
    env = project.env()
    env.update(
        ORCHESTRATOR_TEMPORAL=temporal_address,
        ORCHESTRATOR_TEMPORAL_HEARTBEAT="2",
        ANTHROPIC_BASE_URL=claude.url,
        ANTHROPIC_API_KEY=TEST_KEY,
    )
    workers: dict[int, WorkerProcess] = {}

    def start_worker() -> None:
        found = WorkerProcess(
            temporal_address, queue, env, tmp_path, tmp_path / f"worker-{len(logs)}.log"
        )
        logs.append(found.log)
        workers[found.proc.pid] = found

    logs: list[Path] = []
    start_worker()
    start_worker()
    out = subprocess.run(
        project.cmd("run", str(graph), "go", "--task-queue", queue, "--detach"),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stderr
    thread = out.stdout.strip()

    shower = TemporalSession(temporal_address, task_queue=queue)
    asker = TemporalSession(temporal_address, task_queue=queue)

    def show() -> None:  # what `threads show --json` prints
        story_json(shower.thread(thread), shower.events(thread))

    def ask() -> None:
        asker.graph_for(asker.thread(thread))

    pollers = [Poller(show), Poller(ask)]
    killed: list[int] = []
    starting: list[threading.Thread] = []
    watcher = Watcher(temporal_address, thread)
    try:
        deadline = time.monotonic() + 150  # a thread stuck on a failing workflow task
        while time.monotonic() < deadline:
            running = watcher.step_in_flight()
            if running is None:
                if shower.thread(thread).state != "running":
                    break
                time.sleep(0.05)
                continue
            step, pid = running
            if step in killed or pid not in workers:
                time.sleep(0.05)
                continue
            workers.pop(pid).kill()
            killed.append(step)
            # its replacement starts while the next kill is watched for (a start takes seconds)
            starting.append(threading.Thread(target=start_worker))
            starting[-1].start()
        wait_until(lambda: shower.thread(thread).state != "running", timeout=60)
        time.sleep(1.0)  # the pollers read the ended thread too
    finally:
        watcher.close()
        for started in starting:
            started.join()
        for poller in pollers:
            poller.stop()
        shown = story_json(shower.thread(thread), shower.events(thread))  # a worker answers
        for found in workers.values():
            found.stop()

    failed = asyncio.run(_failed_tasks(temporal_address, queue))
    assert not failed, failed  # no workflow task failed, on any worker, at any time
    assert len(killed) >= KILLS, killed
    assert shown["state"] == "completed", shown["reason"]
    assert [s["role"] for s in shown["steps"]] == [f"r{k}" for k in range(1, STEPS + 1)]
    resumed = [e for e in shown["events"] if e["type"] == "ThreadResumed"]
    assert len(resumed) == len(killed) and all(e["interrupted"] for e in resumed)
    assert all(p.reads > 0 for p in pollers)
    nondeterminism = [f for p in pollers for f in p.failures if "ondetermin" in f]
    assert not nondeterminism, nondeterminism
    for log in logs:
        text = log.read_text()
        assert "ondetermin" not in text, f"{log}:\n{text[-4000:]}"
    replayed = asyncio.run(_replay_all(temporal_address, queue))
    assert replayed >= 1


class Watcher:
    """Which worker runs which step of the thread, from one client on a loop of its own."""

    def __init__(self, address: str, thread: str):
        self.loop = asyncio.new_event_loop()
        self.address, self.thread = address, thread
        self.client: Any = None

    def step_in_flight(self) -> tuple[int, int] | None:
        """(step, pid of the worker running it) for a started step, or None. The step is
        the one the memo names in flight (or, before the memo named it, the step number the
        activity heartbeats)."""
        return self.loop.run_until_complete(self._in_flight())

    async def _in_flight(self) -> tuple[int, int] | None:
        from temporalio.api.enums.v1 import PendingActivityState
        from temporalio.client import Client

        if self.client is None:
            self.client = await Client.connect(self.address)
        found = await self.client.get_workflow_handle(self.thread).describe()
        flying = (await found.memo_value(MEMO_KEY, default={})).get("flying") or []
        for pending in found.raw_description.pending_activities:
            pid = pending.last_worker_identity.partition("@")[0]
            started = pending.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
            beat = pending.heartbeat_details.payloads  # the activity heartbeats its step
            step = int(flying[0]) if len(flying) == 1 else int(beat[0].data) if beat else None
            if started and pid.isdigit() and step is not None:
                return step, int(pid)
        return None

    def close(self) -> None:
        self.client = None
        self.loop.close()


async def _replay_all(address: str, queue: str) -> int:
    """Replay every run of every thread workflow on the test's task queue; their number."""
    from temporalio.worker import Replayer

    histories = await _histories(address, queue)

    async def each() -> AsyncIterator[WorkflowHistory]:
        for history in histories:
            yield history

    results = await Replayer(workflows=[ThreadWorkflow]).replay_workflows(
        each(), raise_on_replay_failure=False
    )
    failures = {run_id: str(err) for run_id, err in results.replay_failures.items()}
    assert not failures, failures
    return len(histories)


async def _failed_tasks(address: str, queue: str) -> list[str]:
    """Every workflow task that failed in the test's histories, with Temporal's message."""
    return [
        f"{history.workflow_id} event {event.event_id}: {event.workflow_task_failed_event_attributes.failure.message}"
        for history in await _histories(address, queue)
        for event in history.events
        if event.HasField("workflow_task_failed_event_attributes")
    ]


async def _histories(address: str, queue: str) -> list[WorkflowHistory]:
    """Every run of every thread workflow on the test's task queue."""
    from temporalio.client import Client

    client = await Client.connect(address)
    query = f'WorkflowType = "{WORKFLOW_NAME}" AND TaskQueue = "{queue}"'
    return [
        await client.get_workflow_handle(run.id, run_id=run.run_id).fetch_history()
        async for run in client.list_workflows(query)
    ]
