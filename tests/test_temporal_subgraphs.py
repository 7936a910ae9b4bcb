"""Subgraph roles on Temporal (docs/format.md section 14): a child workflow per child thread.

The same rules as a local thread's (S1-S6 of orchestrator/core/engine.py, one driver): a parent
and a child of Python actors; a person waiting inside the child answered through the parent; a
cancel that goes on to the child; a `for_each` over a subgraph role. A real dev server on
127.0.0.1 and workers as processes (tests/temporal_helpers.py), the CLI as a user types it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.temporal_helpers import require_extra

require_extra()

from orchestrator.temporal.session import TemporalSession  # noqa: E402
from orchestrator.views.story import story_json  # noqa: E402  (after the check above)
from tests.cli_helpers import Project  # noqa: E402
from tests.process_helpers import wait_until  # noqa: E402
from tests.temporal_helpers import (  # noqa: E402, F401  (a fixture, used by name)
    WorkerProcess,
    new_queue,
    temporal_address,
)

STEPS = """\
import time


def worker(call):
    person = call.latest("person")
    issue = call.inputs["issue"]
    if "slow" in issue:
        time.sleep(6)
    if "ask" in issue and person is None:
        return {"$status": "ask"}
    told = f" told: {person.frontmatter['answer']}" if person is not None else ""
    return {"$status": "fixed", "summary": f"fixed {issue}{told}"}


def plan(call):
    return {"$status": "listed", "issues": call.prompt.split(",")}
"""

CHILD = """
name: child
description: Fixes one thing, asking a person when told to
inputs:
  type: object
  properties: { issue: { type: string } }
  required: [issue]
roles:
  worker:
    description: works
    goal: You work.
    actor: { python: "tsub_steps:worker" }
    frontmatter:
      oneOf:
        - properties: { $status: { const: fixed }, summary: { type: string } }
          required: [$status, summary]
        - properties: { $status: { const: ask } }
          required: [$status]
  person:
    description: answers
    goal: You answer.
    actor: human
    frontmatter:
      type: object
      properties:
        $status: { enum: [told, unsure] }
        answer: { type: string }
      required: [$status, answer]
graph:
  $START:
    _: { role: worker, prompt: "Fix: {{{$inputs.issue}}}" }
  worker:
    fixed: { role: $END, prompt: "{{{summary}}}" }
    ask: { role: person, prompt: "Help the worker" }
  person:
    told: { role: worker, prompt: "The person says: {{{answer}}}" }
    unsure: { role: worker, prompt: "The person is unsure: {{{answer}}}" }
"""

PARENT = """
name: parent
description: Runs the child
roles:
  fix:
    description: Runs the child graph
    graph: child
graph:
  $START:
    _: { role: fix, inputs: { issue: "{{{$inputs.task}}}" } }
  fix:
    done: { role: $END, prompt: "Parent: {{{$body}}}" }
"""

FAN = """
name: fanparent
description: A child per listed issue
roles:
  plan:
    description: lists issues
    goal: You list.
    actor: { python: "tsub_steps:plan" }
    frontmatter:
      type: object
      properties:
        $status: { const: listed }
        issues: { type: array, items: { type: string } }
      required: [$status, issues]
  fix:
    description: Runs the child graph
    graph: child
graph:
  $START:
    _: { role: plan, prompt: "{{{$inputs.task}}}" }
  plan:
    listed:
      for_each: issues
      as: issue
      role: fix
      inputs: { issue: "{{{issue}}}" }
      join: { role: $END, prompt: "All:{{#$branches}} [{{{$body}}}]{{/$branches}}" }
"""


class Cluster:
    def __init__(self, address: str, project: Project):
        self.address = address
        self.queue = new_queue()
        self.project = project
        self.env = project.env()
        self.env.update(ORCHESTRATOR_TEMPORAL=address, ORCHESTRATOR_TEMPORAL_HEARTBEAT="3")
        # The graphs' Python module, as a worker's deployment installs it (docs/scale-out.md).
        paths = [str(project.root / "lib"), self.env.get("PYTHONPATH", "")]
        self.env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        self.workers: list[WorkerProcess] = []

    def worker(self) -> None:
        log = self.project.root / f"worker-{len(self.workers)}.log"
        self.workers.append(
            WorkerProcess(self.address, self.queue, self.env, self.project.root, log)
        )

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        if args[0] == "run":
            args = (*args, "--task-queue", self.queue)
        return subprocess.run(
            self.project.cmd(*args),
            cwd=self.project.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )

    def show(self, thread_id: str) -> dict[str, Any]:
        session = TemporalSession(self.address, task_queue=self.queue)
        return story_json(session.thread(thread_id), session.events(thread_id))


@pytest.fixture
def cluster(temporal_address: str, tmp_path: Path) -> Iterator[Cluster]:  # noqa: F811
    project = Project(tmp_path)
    (tmp_path / "lib").mkdir()
    for folder in (tmp_path / "lib", tmp_path / "graphs"):  # a worker's, the graphs' own
        (folder / "tsub_steps.py").write_text(STEPS)
    project.graph(CHILD, "child")
    project.graph(PARENT, "parent")
    project.graph(FAN, "fanparent")
    found = Cluster(temporal_address, project)
    found.worker()
    try:
        yield found
    finally:
        for worker in found.workers:
            worker.stop()


def last(out: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


def test_a_parent_and_child_of_python_actors(cluster: Cluster) -> None:
    out = cluster.cli("run", "parent", "the crash", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    result = last(out)
    assert result["state"] == "completed" and result["final"] == "Parent: fixed the crash"
    thread = result["thread"]
    child = cluster.show(f"{thread}.1")  # the child workflow, a thread of its own
    assert [(s["role"], s["status"]) for s in child["steps"]] == [("worker", "fixed")]
    parent = cluster.show(thread)
    assert parent["steps"][0]["status"] == "done"
    # Temporal's replayer over both histories, with the SDK's default sandbox: the workflow
    # (and what the moderator imports on first use) replays deterministically.
    replay_histories(cluster, [thread, f"{thread}.1"])


def replay_histories(cluster: Cluster, ids: list[str]) -> None:
    from temporalio.client import Client
    from temporalio.worker import Replayer

    from orchestrator.temporal.workflow import ThreadWorkflow

    async def replay() -> None:
        client = await Client.connect(cluster.address)
        for workflow_id in ids:
            history = await client.get_workflow_handle(workflow_id).fetch_history()
            await Replayer(workflows=[ThreadWorkflow]).replay_workflow(history)

    asyncio.run(replay())


def test_a_person_waiting_in_the_child_is_answered_through_the_parent(cluster: Cluster) -> None:
    out = cluster.cli("run", "parent", "ask first", "--json")
    assert out.returncode == 3, out.stdout + out.stderr
    thread = last(out)["thread"]
    assert last(out)["state"] == "waiting"

    # Control: judged against the child's `person`, a status it does not take is refused.
    bad = cluster.cli("threads", "answer", thread, "--status", "maybe", "--set", "answer=x")
    assert bad.returncode != 0 and "told" in bad.stderr, bad.stderr
    answered = cluster.cli(
        *("threads", "answer", thread, "--status", "told", "--set", "answer=use the cache"),
        "--json",
    )
    assert answered.returncode == 0, answered.stdout + answered.stderr
    assert last(answered)["final"] == "Parent: fixed ask first told: use the cache"
    child = cluster.show(f"{thread}.1")
    roles = [s["role"] for s in child["steps"]]
    assert roles == ["worker", "person", "worker"]


def test_a_cancel_goes_on_to_the_child(cluster: Cluster) -> None:
    out = cluster.cli("run", "parent", "ask first", "--json")
    assert out.returncode == 3, out.stdout + out.stderr
    thread = last(out)["thread"]
    assert cluster.show(f"{thread}.1")["state"] == "waiting"
    cancelled = cluster.cli("threads", "cancel", thread)
    assert cancelled.returncode == 0, cancelled.stderr
    assert cluster.show(thread)["state"] == "cancelled"
    assert cluster.show(f"{thread}.1")["state"] == "cancelled"


def test_a_cancel_stops_a_running_child(cluster: Cluster) -> None:
    out = cluster.cli("run", "parent", "slow one", "--detach")
    assert out.returncode == 0, out.stderr
    thread = out.stdout.strip()
    child = f"{thread}.1"
    assert wait_until(lambda: _started(cluster, child), timeout=30)
    cancelled = cluster.cli("threads", "cancel", thread)
    assert cancelled.returncode == 0, cancelled.stderr
    assert wait_until(lambda: cluster.show(child)["state"] == "cancelled", timeout=30)
    assert cluster.show(thread)["state"] == "cancelled"
    assert [s["status"] for s in cluster.show(child)["steps"]] == [None]  # never committed
    replay_histories(cluster, [thread, child])


def _started(cluster: Cluster, thread_id: str) -> bool:
    try:
        return any(e["type"] == "StepStarted" for e in cluster.show(thread_id)["events"])
    except Exception:  # the child workflow is not there yet
        return False


def test_a_for_each_over_a_subgraph_role_runs_a_child_workflow_per_item(cluster: Cluster) -> None:
    out = cluster.cli("run", "fanparent", "a,b,c", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    result = last(out)
    assert result["final"] == "All: [fixed a] [fixed b] [fixed c]"
    thread = result["thread"]
    for step, item in ((2, "a"), (3, "b"), (4, "c")):
        child = cluster.show(f"{thread}.{step}")
        assert child["steps"][0]["status"] == "fixed", child
        assert child["inputs"] == {"issue": item}


def test_a_recording_replays_on_temporal_children_included(cluster: Cluster) -> None:
    """`run --replay --temporal`: the workers play the recorded replies (the child's too): every
    step's actor is the replay, none is the role's own."""
    out = cluster.cli("run", "parent", "ask first", "--json")
    thread = last(out)["thread"]
    answered = cluster.cli(
        *("threads", "answer", thread, "--status", "told", "--set", "answer=use the cache"),
        "--json",
    )
    assert last(answered)["state"] == "completed", answered.stdout + answered.stderr
    recording = cluster.project.root / "parent.rec.yaml"
    exported = cluster.cli("threads", "export", thread, "-o", str(recording))
    assert exported.returncode == 0, exported.stderr

    out = cluster.cli("run", "parent", "--replay", str(recording), "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    result = last(out)
    assert result["final"] == "Parent: fixed ask first told: use the cache"
    replayed = cluster.show(result["thread"])
    assert replayed["steps"][0]["actor"] == "subgraph"
    child = cluster.show(f"{result['thread']}.1")
    assert [s["actor"] for s in child["steps"]] == ["replay", "replay", "replay"]
