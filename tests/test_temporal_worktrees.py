"""Worktrees on Temporal workers: a thread's branch in a shared repository, one commit a step.

solve-issue's worktree flow on two workers, each with a cache of its own, and a bare repository
as the shared remote (the checkout's `origin`). The model's words are tests/solve_issue_scenario
through the fake Messages API; the tools, git and the workers are real. The first worker is
SIGKILLed once step 2 is committed (while step 3's first model call is held); the second
finishes the thread from step 2's files (the reviewer's check raises TypeError only on the
developer's first fix, which exists nowhere but in step 2's commit), and the branch in the bare
repository holds one commit per step, on the checkout's HEAD.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.temporal_helpers import require_extra

require_extra()

from orchestrator.temporal.session import TemporalSession  # noqa: E402
from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse  # noqa: E402
from tests.anthropic_fixtures import TEST_KEY  # noqa: E402
from tests.process_helpers import wait_until  # noqa: E402
from tests.solve_issue_scenario import GIT_ENV, Script, role_of, sample_repo  # noqa: E402
from tests.temporal_helpers import (  # noqa: E402, F401  (a fixture, used by name)
    WorkerProcess,
    new_queue,
    temporal_address,
)


def git(cwd: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


class Held:
    """The solve-issue script, with the reviewer's first call held until the test lets go."""

    def __init__(self) -> None:
        self.script = Script()
        self.reached = threading.Event()  # step 3 began: its first model call arrived
        self.held = True

    def __call__(self, body: dict[str, Any]) -> FakeResponse:
        if role_of(body) == "reviewer" and self.held:
            self.held = False
            self.reached.set()
            return FakeResponse.text("never read: the worker is killed first", delay=60)
        return self.script(body)


@pytest.fixture
def held() -> Iterator[tuple[Held, FakeAnthropic]]:
    handler = Held()
    fake = FakeAnthropic(handler=handler)
    fake.start()
    try:
        yield handler, fake
    finally:
        fake.stop()


def test_solve_issue_on_two_workers_continues_from_step_twos_commit(
    temporal_address: str,  # noqa: F811
    tmp_path: Path,
    held: tuple[Held, FakeAnthropic],
) -> None:
    handler, fake = held
    bare = tmp_path / "shared.git"
    git(tmp_path, "clone", "--quiet", "--bare", str(sample_repo(tmp_path / "seed")), str(bare))
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "--quiet", str(bare), str(checkout))
    head = git(checkout, "rev-parse", "HEAD")
    queue = new_queue()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(
        ORCHESTRATOR_TEMPORAL=temporal_address,
        ORCHESTRATOR_TEMPORAL_HEARTBEAT="3",
        ORCHESTRATOR_HOME=str(tmp_path / "store"),
        ANTHROPIC_BASE_URL=fake.url,
        ANTHROPIC_API_KEY=TEST_KEY,
    )

    def worker(n: int) -> WorkerProcess:
        cache = {"ORCHESTRATOR_WORKER_CACHE": str(tmp_path / f"cache-{n}")}
        return WorkerProcess(
            temporal_address, queue, {**env, **cache}, tmp_path, tmp_path / f"worker-{n}.log"
        )

    first = worker(1)
    second = None
    try:
        out = subprocess.run(
            ["python", "-m", "orchestrator", "run", "solve-issue", "-i", "issue=@ISSUE.md"]
            + ["--detach", "--task-queue", queue],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        thread = out.stdout.strip()
        branch = f"orchestrator/{thread}"
        assert f"the thread's files: branch {branch} of {bare}" in out.stderr
        assert wait_until(handler.reached.is_set, timeout=120), first.log.read_text()
        first.kill()  # after step 2, during step 3: before any of its work
        assert git(bare, "log", "--format=%s", branch).splitlines()[:2] == [
            "step 2: developer -> done",
            "step 1: planner -> ready",
        ]
        second = worker(2)
        session = TemporalSession(temporal_address, task_queue=queue)
        assert wait_until(lambda: session.thread(thread).state != "running", timeout=240)
        row = session.thread(thread)
        assert row.state == "completed", row.reason
        steps = [(s.role, s.status) for s in session.view(thread).committed]
    finally:
        first.stop()
        if second is not None:
            second.stop()

    assert steps == [
        ("planner", "ready"),
        ("developer", "done"),
        ("reviewer", "rejected"),
        ("developer", "done"),
        ("reviewer", "approved"),
        ("tester", "passed"),
    ]
    assert handler.script.finished
    # Step 3 ran on the second worker from step 2's files: the first fix (`/ 2.0`) raised.
    assert "TypeError" in handler.script.tool_results["reviewer"][1]

    # The branch in the shared repository: one commit per step, on the checkout's HEAD.
    subjects = git(bare, "log", "--format=%s", f"{head}..{branch}").splitlines()
    assert subjects == [f"step {n}: {role} -> {status}" for n, (role, status) in
                        reversed(list(enumerate(steps, 1)))]  # fmt: skip
    assert git(bare, "rev-list", "--max-parents=1", "--count", f"{head}..{branch}") == "6"
    fixed = git(bare, "show", f"{branch}:statskit/stats.py")
    assert "return (ordered[middle - 1] + ordered[middle]) / 2\n" in fixed + "\n"
    assert "def test_decimals" in git(bare, "show", f"{branch}:tests/test_stats.py")
    # Each worker worked in its own cache; the checkout was never touched.
    for n in (1, 2):
        assert (tmp_path / f"cache-{n}" / "worktrees" / thread).is_dir()
    assert git(checkout, "status", "--porcelain") == ""
    assert git(checkout, "rev-parse", "HEAD") == head
