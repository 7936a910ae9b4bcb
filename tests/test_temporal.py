"""Threads on Temporal, end to end: a dev server on 127.0.0.1, workers as processes, the CLI.

Roles are played by Claude through the real `anthropic` SDK against FakeAnthropic, or by
command actors (tests/cli_helpers.py). What must hold (docs/scale-out.md): the same moderator as
a local run, each step an activity; a committed step never runs again, a step whose worker dies
runs again on another; answer, resume and cancel through the workflow; a recording exported from
a Temporal thread replays like any other.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.temporal_helpers import require_extra

require_extra()

from orchestrator.temporal.session import TemporalSession  # noqa: E402
from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse  # noqa: E402
from orchestrator.views.story import story_json  # noqa: E402  (after the check above)
from tests.anthropic_fixtures import TEST_KEY  # noqa: E402
from tests.cli_helpers import Project  # noqa: E402
from tests.process_helpers import wait_until  # noqa: E402
from tests.temporal_helpers import (  # noqa: E402, F401  (a fixture, used by name)
    WorkerProcess,
    new_queue,
    temporal_address,
    temporal_binary,
)

FIX = """
name: fix
description: Plan, implement and review, one step each.
inputs:
  type: object
  properties:
    issue: { type: string }
  required: [issue]
roles:
  planner:
    description: Plans
    goal: You are the planner.
    frontmatter:
      type: object
      properties:
        $status: { enum: [ready] }
        plan: { type: string }
      required: [$status, plan]
  developer:
    description: Implements
    goal: You are the developer.
    frontmatter:
      type: object
      properties:
        $status: { enum: [done] }
        summary: { type: string }
      required: [$status, summary]
  reviewer:
    description: Reviews
    goal: You are the reviewer.
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

FAN = """
name: fan
description: Two developers at once, then a reviewer.
inputs:
  type: object
  properties:
    issue: { type: string }
    parts: { type: array, items: { type: string } }
  required: [issue, parts]
roles:
  planner:
    description: Plans
    goal: You are the planner.
    frontmatter:
      type: object
      properties:
        $status: { enum: [ready] }
        plan: { type: string }
      required: [$status, plan]
  developer:
    description: Implements
    goal: You are the developer.
    frontmatter:
      type: object
      properties:
        $status: { enum: [done] }
        summary: { type: string }
      required: [$status, summary]
  reviewer:
    description: Reviews
    goal: You are the reviewer.
    frontmatter:
      type: object
      properties:
        $status: { enum: [approved] }
        comments: { type: string }
      required: [$status, comments]
graph:
  $START:
    _: { role: planner, prompt: "Plan: {{{$inputs.issue}}}" }
  planner:
    ready:
      for_each: $inputs.parts
      as: part
      role: developer
      prompt: "Implement {{{part}}} of {{{plan}}}"
      join: { role: reviewer, prompt: "Review: {{#$branches}}{{{summary}}};{{/$branches}}" }
  reviewer:
    approved: { role: $END, prompt: "Fixed: {{{comments}}}" }
"""

REPLIES = {
    "planner": "---\n$status: ready\nplan: add a guard\n---\n",
    "developer": "---\n$status: done\nsummary: guard added\n---\n",
    "reviewer": "---\n$status: approved\ncomments: good\n---\n",
    "looper": "---\n$status: again\nnote: one more round\n---\n",
}

LOOP = """
name: loop
description: One role going round until its step limit.
limits: { max_steps: 2 }
roles:
  looper:
    description: Goes round
    goal: You are the looper.
    memory: fresh
    frontmatter:
      type: object
      properties:
        $status: { enum: [again, done] }
        note: { type: string }
      required: [$status, note]
graph:
  $START: { _: { role: looper, prompt: "Go" } }
  looper:
    again: { role: looper, prompt: "Again after {{{note}}}" }
    done: { role: $END, prompt: "{{{note}}}" }
"""

ASK = """
name: ask
description: A worker asks a person, then finishes.
roles:
  worker:
    description: Works
    goal: You work.
    actor: { command: [PYTHON, AGENT], timeout: 60 }
    frontmatter:
      type: object
      properties:
        $status: { enum: [ask, done] }
        note: { type: string }
      required: [$status, note]
  person:
    description: Decides
    goal: You decide.
    actor: human
    frontmatter:
      type: object
      properties:
        $status: { enum: ["yes", "no"] }
        why: { type: string }
      required: [$status, why]
graph:
  $START:
    _: { role: worker, prompt: "Start {{{$inputs.task}}}" }
  worker:
    ask: { role: person, prompt: "Decide on {{{note}}}" }
    done: { role: $END, prompt: "Finished: {{{note}}}" }
  person:
    "yes": { role: worker, prompt: "Go on: {{{why}}}" }
    "no": { role: $END, prompt: "Stopped: {{{why}}}" }
"""


def role_of(body: dict[str, Any]) -> str:
    system = json.dumps(body.get("system", ""))
    return next(r for r in REPLIES if f"You are the {r}." in system)


class Claude:
    """FakeAnthropic answering each role's request, counting them, slow where told."""

    def __init__(self, latency: float = 0.0):
        self.calls: Counter[str] = Counter()
        self.slow: dict[tuple[str, int], float] = {}  # (role, nth call) -> seconds
        self.latency = latency
        self.lock = threading.Lock()
        self.fake = FakeAnthropic(handler=self.answer)

    def answer(self, body: dict[str, Any]) -> FakeResponse:
        role = role_of(body)
        with self.lock:
            self.calls[role] += 1
            delay = self.slow.get((role, self.calls[role]), self.latency)
        return FakeResponse.text(REPLIES[role], delay=delay)


@pytest.fixture
def claude() -> Iterator[Claude]:
    server = Claude()
    server.fake.start()
    try:
        yield server
    finally:
        server.fake.stop()


@pytest.fixture
def project(tmp_path: Path) -> Project:
    project = Project(tmp_path)
    project.graph(FIX, "fix")
    project.graph(ASK, "ask")
    project.graph(FAN, "fan")
    return project


class Cluster:
    """A test's task queue on the session's server, its workers, and the CLI pointed at it."""

    def __init__(self, address: str, project: Project, claude: FakeAnthropic | None):
        self.address = address
        self.queue = new_queue()
        self.project = project
        self.workers: list[WorkerProcess] = []
        self.env = project.env()
        self.env.update(ORCHESTRATOR_TEMPORAL=address, ORCHESTRATOR_TEMPORAL_HEARTBEAT="3")
        if claude is not None:
            self.env.update(ANTHROPIC_BASE_URL=claude.url, ANTHROPIC_API_KEY=TEST_KEY)

    def worker(self) -> WorkerProcess:
        n = len(self.workers)
        log = self.project.root / f"worker-{n}.log"
        found = WorkerProcess(self.address, self.queue, self.env, self.project.root, log)
        self.workers.append(found)
        return found

    def cli(self, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
        if args[0] == "run":
            args = (*args, "--task-queue", self.queue)
        return subprocess.run(
            self.project.cmd(*args),
            cwd=self.project.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    # Reading, in this process (what `threads show --json` and `threads list` print): a
    # command per poll would cost a second of start-up each.

    def session(self) -> TemporalSession:
        return TemporalSession(self.address, task_queue=self.queue)

    def show(self, thread_id: str) -> dict[str, Any]:
        session = self.session()
        return story_json(session.thread(thread_id), session.events(thread_id))

    def state(self, thread_id: str) -> str:
        return str(self.session().thread(thread_id).state)

    def rows(self) -> list[dict[str, Any]]:
        return [r.to_dict() for r in self.session().threads() if r.task_queue == self.queue]

    def stop(self) -> None:
        for found in self.workers:
            found.stop()


@pytest.fixture
def cluster(temporal_address: str, project: Project, claude: Claude) -> Iterator[Cluster]:  # noqa: F811
    found = Cluster(temporal_address, project, claude.fake)
    try:
        yield found
    finally:
        found.stop()


def lines(out: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def event_types(shown: dict[str, Any]) -> list[str]:
    return [e["type"] for e in shown.get("events", [])]


# --------------------------------------------------------------------------- one worker


def test_a_thread_runs_to_completion_then_its_recording_replays(
    cluster: Cluster, claude: Claude, project: Project
) -> None:
    cluster.worker()
    out = cluster.cli("run", "fix", "the crash on empty input", "--json")
    assert out.returncode == 0, out.stderr
    shown = lines(out)
    assert shown[0]["event"] == "ThreadStarted"
    committed = [e["role"] for e in shown if e.get("event") == "StepCommitted"]
    assert committed == ["planner", "developer", "reviewer"]
    result = shown[-1]
    assert result["state"] == "completed" and result["final"] == "Fixed: good"
    assert claude.calls == {"planner": 1, "developer": 1, "reviewer": 1}
    thread = result["thread"]

    listed = cluster.cli("threads", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    row = next(r for r in lines(listed) if r["id"] == thread)
    assert (row["graph"], row["state"], row["steps"]) == ("fix", "completed", 3)
    story = cluster.cli("threads", "show", thread[-6:])  # a suffix of the id will do
    assert story.returncode == 0, story.stderr
    assert "planner" in story.stdout and "reviewer" in story.stdout

    recording = project.root / "fix.yaml"
    out = cluster.cli("threads", "export", thread, "-o", str(recording))
    assert out.returncode == 0, out.stderr
    replay = cluster.cli("replay", "graphs/fix.yaml", str(recording))
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "same route" in replay.stdout
    _replays_deterministically(cluster.address, thread)


def _replays_deterministically(address: str, thread_id: str) -> None:
    """The workflow's own history replays through the current workflow code."""
    from temporalio.client import Client
    from temporalio.worker import Replayer

    from orchestrator.temporal.workflow import ThreadWorkflow

    async def replay() -> None:
        client = await Client.connect(address)
        history = await client.get_workflow_handle(thread_id).fetch_history()
        await Replayer(workflows=[ThreadWorkflow]).replay_workflow(history)

    asyncio.run(replay())


# --------------------------------------------------------------------------- a worker dies


def test_branches_run_as_activities_and_join_in_branch_order(
    cluster: Cluster, claude: Claude
) -> None:
    cluster.worker()
    out = cluster.cli(
        "run", "fan", "-i", "issue=crash", "-i", 'parts=["a","b","c"]', "--json", timeout=180
    )
    assert out.returncode == 0, out.stderr
    result = lines(out)[-1]
    assert result["state"] == "completed" and result["final"] == "Fixed: good"
    shown = cluster.show(result["thread"])
    steps = [(s["step"], s["role"], s.get("branch")) for s in shown["steps"]]
    assert steps == [
        (1, "planner", None),
        (2, "developer", 0),
        (3, "developer", 1),
        (4, "developer", 2),
        (5, "reviewer", None),
    ]
    assert shown["steps"][2]["prompt"] == "Implement b of add a guard"
    assert shown["steps"][4]["prompt"] == "Review: guard added;guard added;guard added;"
    assert claude.calls == {"planner": 1, "developer": 3, "reviewer": 1}


def test_a_step_whose_worker_is_killed_runs_again_on_another(
    cluster: Cluster, claude: Claude
) -> None:
    claude.slow[("developer", 1)] = 30.0  # the first developer call hangs: its worker dies
    first = cluster.worker()
    out = cluster.cli("run", "fix", "the crash", "--detach", "--json")
    assert out.returncode == 0, out.stderr
    thread = lines(out)[0]["thread"]
    assert wait_until(lambda: claude.calls["developer"] == 1, timeout=30)
    first.kill()
    cluster.worker()
    assert wait_until(lambda: cluster.state(thread) == "completed", timeout=60)

    # Every committed step once; the step in flight twice (it started over elsewhere).
    assert claude.calls == {"planner": 1, "developer": 2, "reviewer": 1}
    shown = cluster.show(thread)
    assert [s["role"] for s in shown["steps"]] == ["planner", "developer", "reviewer"]
    resumed = [e for e in shown["events"] if e["type"] == "ThreadResumed"]
    assert len(resumed) == 1 and resumed[0]["interrupted"] is True


# --------------------------------------------------------------------------- two workers


def test_two_workers_share_twenty_threads(cluster: Cluster, claude: Claude) -> None:
    from orchestrator.definition.loader import load_graph

    claude.latency = 0.05
    cluster.worker()
    cluster.worker()
    graph = load_graph(cluster.project.root / "graphs" / "fix.yaml")
    session = TemporalSession(cluster.address, task_queue=cluster.queue)

    async def run_all() -> list[dict[str, Any]]:
        started = [
            await session.astart(graph, {"issue": f"bug {n}"}, folder=cluster.project.root)
            for n in range(20)
        ]
        return list(await asyncio.gather(*(session.outcome(s.thread_id) for s in started)))

    results = asyncio.run(run_all())
    assert [r["state"] for r in results] == ["completed"] * 20
    assert claude.calls == {"planner": 20, "developer": 20, "reviewer": 20}
    assert len(asyncio.run(_identities(session, [r["thread"] for r in results]))) == 2


async def _identities(session: Any, thread_ids: list[str]) -> set[str]:
    """The workers that ran the threads' steps, as Temporal's history names them."""
    client = await session.client()
    found: set[str] = set()
    for thread_id in thread_ids:
        history = await client.get_workflow_handle(thread_id).fetch_history()
        for event in history.events:
            if event.HasField("activity_task_started_event_attributes"):
                found.add(event.activity_task_started_event_attributes.identity)
    return found


# --------------------------------------------------------------------------- people, resume


def test_a_person_answers_then_a_suspended_thread_resumes(cluster: Cluster) -> None:
    cluster.project.script(
        worker={
            "1": "---\n$status: ask\nnote: the plan\n---\n",
            "3": "---\n$status: $SUSPEND\nreason: which branch?\n---\n",
        }
    )
    cluster.worker()
    out = cluster.cli("run", "ask", "go")
    assert out.returncode == 3, out.stderr
    assert "waits for a person" in out.stderr
    thread = cluster.rows()[-1]["id"]

    bad = cluster.cli("threads", "answer", thread, "--status", "maybe", "--set", "why=x")
    assert bad.returncode == 1 and "not a status of this role" in bad.stderr
    out = cluster.cli("threads", "answer", thread, "--status", "yes", "--set", "why=because")
    assert out.returncode == 3, out.stderr  # the worker then asks for help: suspended
    assert "which branch?" in out.stderr

    # Resumed under a changed graph (its final prompt reworded): said, then used.
    cluster.project.script(worker={"3": "---\n$status: done\nnote: on main\n---\n"})
    # The thread carries its graph: the file can change under it.
    changed = cluster.project.graph(ASK.replace("Finished: {{{note}}}", "Done: {{{note}}}"), "ask")
    out = cluster.cli(
        "threads", "resume", thread, "--message", "use main", "--graph", str(changed), "--json"
    )
    assert out.returncode == 0, out.stderr
    assert "the graph changed since thread" in out.stderr
    assert lines(out)[-1]["final"] == "Done: on main"
    shown = cluster.show(thread)
    steps = [(s["role"], s["status"]) for s in shown["steps"]]
    assert steps == [("worker", "ask"), ("person", "yes"), ("worker", "done")]
    out = cluster.cli("threads", "resume", thread)
    assert out.returncode == 2 and "no `$START.resume` edge" in out.stderr


def test_a_resume_under_a_graph_that_gives_a_role_session_memory_sends_its_visits(
    cluster: Cluster, claude: Claude
) -> None:
    loop = cluster.project.graph(LOOP, "loop")
    cluster.worker()
    out = cluster.cli("run", str(loop), "go")
    assert out.returncode == 3 and "max_steps" in out.stderr, out.stderr  # 2 steps, fresh
    thread = cluster.rows()[-1]["id"]
    assert [len(b["messages"]) for b in claude.fake.message_requests] == [1, 1]

    changed = cluster.project.graph(LOOP.replace("memory: fresh", "memory: session"), "loop")
    out = cluster.cli("threads", "resume", thread, "--graph", str(changed))
    assert out.returncode == 3 and "max_steps" in out.stderr, out.stderr  # 2 more steps
    # The role now continues its conversation: its 2, then 3 earlier visits come first.
    later = claude.fake.message_requests[2:]
    assert [len(b["messages"]) for b in later] == [5, 7]


def test_threads_commands_say_so_when_the_server_cannot_be_reached(project: Project) -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{free.getsockname()[1]}"  # nothing listens there once closed
    for command in (["threads", "list"], ["threads", "show", "01NOSUCHTHREAD"]):
        out = project.run(*command, "--temporal", address, timeout=90)
        assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
        assert f"cannot reach the Temporal server at {address}" in out.stderr


def test_cancel_stops_the_step_in_flight(cluster: Cluster) -> None:
    cluster.project.script(worker=["---\n$status: done\nnote: late\n---\n"])
    cluster.project.set("sleep", {"worker:1": 30})
    cluster.worker()
    out = cluster.cli("run", "ask", "go", "--detach")
    assert out.returncode == 0, out.stderr
    thread = out.stdout.strip()
    assert wait_until(
        lambda: (cluster.project.root / "count-worker").exists() or _running_step(cluster, thread),
        timeout=30,
    )
    out = cluster.cli("threads", "cancel", thread)
    assert out.returncode == 0, out.stderr
    assert wait_until(lambda: cluster.state(thread) == "cancelled", timeout=15)
    assert not (cluster.project.root / "count-worker").exists()  # the agent never finished
    # An ordinary cancel is one line in the worker's log, not a traceback.
    log = cluster.workers[0].log
    assert wait_until(lambda: "stopped: its thread was" in log.read_text(), timeout=15)
    assert "Traceback" not in log.read_text(), log.read_text()
    (line,) = [x for x in log.read_text().splitlines() if "stopped: its thread was" in x]
    assert line.startswith(f"step 1 (worker) of thread {thread} stopped"), line
    again = cluster.cli("threads", "cancel", thread)
    assert again.returncode == 2 and "already cancelled" in again.stderr
    resume = cluster.cli("threads", "resume", thread)
    assert resume.returncode == 2 and "cannot be resumed" in resume.stderr


def test_a_terminated_workflow_reads_failed_in_list_and_show(cluster: Cluster) -> None:
    cluster.project.script(worker=["---\n$status: done\nnote: late\n---\n"])
    cluster.project.set("sleep", {"worker:1": 30})
    cluster.worker()
    out = cluster.cli("run", "ask", "go", "--detach")
    assert out.returncode == 0, out.stderr
    thread = out.stdout.strip()
    assert wait_until(lambda: _running_step(cluster, thread), timeout=30)
    terminate = subprocess.run(
        [str(temporal_binary()), "workflow", "terminate", "--address", cluster.address]
        + ["--workflow-id", thread, "--reason", "stuck"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert terminate.returncode == 0, terminate.stderr
    assert wait_until(lambda: cluster.state(thread) == "failed", timeout=15)
    listed = {row["id"]: row for row in lines(cluster.cli("threads", "list", "--json"))}
    assert listed[thread]["state"] == "failed"
    shown = cluster.cli("threads", "show", thread)
    assert shown.returncode == 0, shown.stderr
    assert f"thread {thread} · ask · failed ·" in shown.stdout
    assert "failed: its workflow was terminated in Temporal" in shown.stdout
    assert "running (or its process died" not in shown.stdout
    as_json = json.loads(cluster.cli("threads", "show", thread, "--json").stdout)
    assert (as_json["state"], as_json["reason"]) == ("failed", listed[thread]["reason"])
    log = cluster.workers[0].log
    assert wait_until(lambda: "stopped: its thread was" in log.read_text(), timeout=15)
    assert "Traceback" not in log.read_text(), log.read_text()


def _running_step(cluster: Cluster, thread: str) -> bool:
    shown = cluster.show(thread)
    return "StepStarted" in event_types(shown)


def test_ctrl_c_while_following_suspends_the_thread(cluster: Cluster) -> None:
    cluster.project.script(worker=["---\n$status: done\nnote: late\n---\n"])
    cluster.project.set("sleep", {"worker:1": 30})
    cluster.worker()
    proc = subprocess.Popen(
        cluster.project.cmd(
            "run", "ask", "go", "--temporal", cluster.address, "--task-queue", cluster.queue
        ),
        cwd=cluster.project.root,
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert wait_until(
        lambda: bool(cluster.rows()) and _running_step(cluster, cluster.rows()[-1]["id"]),
        timeout=30,
    )
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 3, err
    thread = cluster.rows()[-1]["id"]
    assert wait_until(lambda: cluster.state(thread) == "suspended", timeout=15)
    shown = cluster.show(thread)
    assert shown["events"][-1]["kind"] == "interrupted"
