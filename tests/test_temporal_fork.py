"""Forking a thread on Temporal (docs/format.md section 20, docs/scale-out.md): a dev server on
127.0.0.1, workers as processes, the CLI.

A fork is a new workflow whose starting history is the original's log up to step N and the
lineage event; it runs on the workers like any thread. Shown here: a fork at a person's step
with a replacement reply takes the other edge, its lineage shows in `threads show`, and the
original's history is byte-identical before and after; without a reply the step is decided
again with the message; `--reuse` serves the steps equal to the original's from its kept
replies (the fake Messages API counts the requests: none for them) until the first difference,
with its control (the same fork without `--reuse` calls the actors); and a fork's history
replays through the workflow code (it is deterministic).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.temporal_helpers import require_extra

require_extra()

from orchestrator.core.events import ThreadForked  # noqa: E402  (after the check above)
from orchestrator.testing.fake_anthropic import FakeResponse  # noqa: E402
from tests.process_helpers import wait_until  # noqa: E402
from tests.temporal_helpers import temporal_address  # noqa: E402, F401  (a fixture, by name)
from tests.test_temporal import (  # noqa: E402, F401  (fixtures, used by name)
    Claude,
    Cluster,
    Project,
    _replays_deterministically,
    lines,
    project,
    role_of,
)

ENDED = ("completed", "failed", "cancelled")


class Planning(Claude):
    """The fake Messages API of tests/test_temporal.py, whose planner plans smaller when the
    message of a fork asks it to."""

    def answer(self, body: dict[str, Any]) -> FakeResponse:
        if role_of(body) == "planner" and "smaller" in json.dumps(body.get("messages")):
            with self.lock:
                self.calls["planner"] += 1
            return FakeResponse.text("---\n$status: ready\nplan: a smaller guard\n---\n")
        return super().answer(body)


@pytest.fixture
def claude() -> Iterator[Claude]:
    server = Planning()
    server.fake.start()
    try:
        yield server
    finally:
        server.fake.stop()


@pytest.fixture
def cluster(temporal_address: str, project: Project, claude: Claude) -> Iterator[Cluster]:  # noqa: F811
    found = Cluster(temporal_address, project, claude.fake)
    found.worker()
    try:
        yield found
    finally:
        found.stop()


def history(cluster: Cluster, thread: str) -> str:
    """The thread's events as stored (sequence numbers, times, every field), as one text."""
    session = cluster.session()
    return json.dumps(
        [(s.seq, s.at, type(s.event).__name__, repr(s.event)) for s in session.events(thread)]
    )


def settled(cluster: Cluster, thread: str, states: tuple[str, ...] = ENDED) -> str:
    assert wait_until(lambda: cluster.state(thread) in states, timeout=90), cluster.state(thread)
    return cluster.state(thread)


def fork(cluster: Cluster, thread: str, **how: Any) -> str:
    """`TemporalSession.fork` (what `threads fork --temporal` and the client call): its id."""
    with cluster.session() as session:
        return session.fork(thread, **how)


def test_a_fork_with_a_reply_takes_the_other_edge_and_the_original_is_untouched(
    cluster: Cluster,
) -> None:
    cluster.project.script(
        worker={
            "1": "---\n$status: ask\nnote: the plan\n---\n",
            "3": "---\n$status: done\nnote: shipped\n---\n",
        }
    )
    out = cluster.cli("run", "ask", "go")
    assert out.returncode == 3, out.stderr
    original = cluster.rows()[-1]["id"]
    out = cluster.cli("threads", "answer", original, "--status", "yes", "--set", "why=fine")
    assert out.returncode == 0, out.stderr
    assert cluster.show(original)["final"] == "Finished: shipped"
    before = history(cluster, original)

    # `threads fork --temporal` (ORCHESTRATOR_TEMPORAL here) makes it and follows it to its end.
    out = cluster.cli(
        "threads", "fork", original, "--at", "2", "--status", "no", "--set", "why=too risky",
        "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    forked = lines(out)[-1]["thread"]
    assert forked != original and lines(out)[-1]["state"] == "completed"
    shown = cluster.show(forked)
    assert shown["final"] == "Stopped: too risky"  # the other edge of the person's step
    steps = [(s["role"], s["status"]) for s in shown["steps"]]
    assert steps == [("worker", "ask"), ("person", "no")]
    events = [s.event for s in cluster.session().events(forked)]
    lineage = [e for e in events if isinstance(e, ThreadForked)]
    assert [(e.from_thread, e.at_step) for e in lineage] == [(original, 2)]

    story = cluster.cli("threads", "show", forked)
    assert story.returncode == 0, story.stderr
    assert f"forked from {original} at step 2" in story.stdout
    listed = cluster.cli("threads", "list", "--json")  # from the memos: no worker asked
    assert listed.returncode == 0, listed.stderr
    row = next(r for r in lines(listed) if r["id"] == forked)
    assert row["forked_from"] == {"thread": original, "step": 2}

    assert history(cluster, original) == before  # byte-identical: only read, never touched
    assert cluster.show(original)["final"] == "Finished: shipped"
    _replays_deterministically(cluster.address, forked)


def test_a_fork_without_a_reply_decides_the_step_again_with_the_message(
    cluster: Cluster, claude: Claude
) -> None:
    out = cluster.cli("run", "fix", "the crash on empty input")
    assert out.returncode == 0, out.stderr
    original = cluster.rows()[-1]["id"]
    assert claude.calls == {"planner": 1, "developer": 1, "reviewer": 1}

    forked = fork(cluster, original, at=2, message="keep it short")
    assert settled(cluster, forked) == "completed"
    assert claude.calls == {"planner": 1, "developer": 2, "reviewer": 2}
    shown = cluster.show(forked)
    developer = next(s for s in shown["steps"] if s["step"] == 2)
    assert developer["prompt"].startswith("Implement: add a guard")
    assert "keep it short" in developer["prompt"]  # the message, appended to its prompt


def test_reuse_serves_equal_steps_from_the_original_until_the_first_difference(
    cluster: Cluster, claude: Claude
) -> None:
    """Forked at step 1, the planner is asked again; steps 2 and 3 are asked what the original
    asked, so they take its replies: the fake Messages API sees no request for them."""
    out = cluster.cli("run", "fix", "the crash on empty input")
    assert out.returncode == 0, out.stderr
    original = cluster.rows()[-1]["id"]
    assert claude.calls == {"planner": 1, "developer": 1, "reviewer": 1}

    reused = fork(cluster, original, at=1, reuse=True)
    assert settled(cluster, reused) == "completed"
    assert claude.calls == {"planner": 2, "developer": 1, "reviewer": 1}
    shown = cluster.show(reused)
    assert shown["final"] == "Fixed: good"
    assert [s["actor"] for s in shown["steps"]] == ["anthropic", "reuse", "reuse"]

    # The control: the same fork without reuse calls every actor again.
    fresh = fork(cluster, original, at=1)
    assert settled(cluster, fresh) == "completed"
    assert claude.calls == {"planner": 3, "developer": 2, "reviewer": 2}

    # A message makes the planner plan otherwise, so step 2 differs: from there on every step
    # is played, the reviewer's too, though its prompt equals the original's (the reuse ended
    # at the first difference).
    changed = fork(cluster, original, at=1, reuse=True, message="smaller")
    assert settled(cluster, changed) == "completed"
    assert claude.calls == {"planner": 4, "developer": 3, "reviewer": 3}
    steps = cluster.show(changed)["steps"]
    assert steps[1]["prompt"] == "Implement: a smaller guard"
    assert steps[2]["prompt"] == cluster.show(original)["steps"][2]["prompt"]
    assert "reuse" not in [s["actor"] for s in steps]
    _replays_deterministically(cluster.address, reused)


def test_a_refused_fork_makes_no_workflow(cluster: Cluster) -> None:
    cluster.project.script(worker={"1": "---\n$status: done\nnote: quick\n---\n"})
    out = cluster.cli("run", "ask", "go")
    assert out.returncode == 0, out.stderr
    before = len(cluster.rows())
    original = cluster.rows()[-1]["id"]
    out = cluster.cli("threads", "fork", original, "--at", "9")
    assert out.returncode != 0
    assert "no step 9 to fork at" in out.stderr and "Traceback" not in out.stderr
    out = cluster.cli("threads", "fork", original, "--at", "1", "--status", "maybe")
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "was not accepted" in out.stderr
    assert len(cluster.rows()) == before


def row_of(cluster: Cluster, thread: str) -> dict[str, Any]:
    return next(r for r in cluster.rows() if r["id"] == thread)


WRITER = """
name: writer
description: A worker that notes each step in a file, three times.
roles:
  worker:
    description: Writes
    goal: You write.
    actor: { command: [PYTHON, "-c", SCRIPT], timeout: 60 }
    frontmatter:
      type: object
      properties:
        $status: { enum: [again, done] }
        note: { type: string }
      required: [$status, note]
graph:
  $START:
    _: { role: worker, prompt: "Start {{{$inputs.task}}}" }
  worker:
    again: { role: worker, prompt: "Round after {{{note}}}" }
    done: { role: $END, prompt: "Finished: {{{note}}}" }
"""

# Appends "step N" to notes.txt in the workspace; done at step 3.
SCRIPT = (
    "import os, sys; sys.stdin.read(); n = os.environ['ORCHESTRATOR_STEP'];"
    "open('notes.txt', 'a').write(f'step {n}\\n');"
    "s = 'done' if n == '3' else 'again';"
    "sys.stdout.write(f'---\\n$status: {s}\\nnote: n{n}\\n---\\n')"
)


def git(cwd: Any, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    out = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, env={**os.environ, **env}
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_a_fork_of_a_thread_on_a_shared_branch_starts_from_step_n_minus_1s_files(
    cluster: Cluster, tmp_path: Path
) -> None:
    bare = tmp_path / "shared.git"
    seed = tmp_path / "seed"
    seed.mkdir()
    git(seed, "init", "--quiet", "-b", "main")
    (seed / "README").write_text("a repository\n")
    git(seed, "add", "README")
    git(seed, "commit", "--quiet", "-m", "first")
    git(tmp_path, "clone", "--quiet", "--bare", str(seed), str(bare))
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "--quiet", str(bare), str(checkout))
    graph = cluster.project.graph(WRITER.replace("SCRIPT", json.dumps(SCRIPT)), "writer")
    cluster.env["ORCHESTRATOR_WORKER_CACHE"] = str(tmp_path / "cache")
    cluster.stop()
    cluster.worker()
    out = subprocess.run(
        cluster.project.cmd("run", str(graph), "-i", "task=notes", "--task-queue", cluster.queue),
        cwd=checkout,
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stderr
    original = cluster.rows()[-1]["id"]
    branch = f"orchestrator/{original}"
    assert git(bare, "show", f"{branch}:notes.txt") == "step 1\nstep 2\nstep 3"
    tip = git(bare, "rev-parse", branch)

    forked = fork(cluster, original, at=2)
    assert settled(cluster, forked) == "completed"
    fork_branch = f"orchestrator/{forked}"
    # Step 2 ran again from step 1's files: one "step 2" and one "step 3", not a second pair.
    assert git(bare, "show", f"{fork_branch}:notes.txt") == "step 1\nstep 2\nstep 3"
    subjects = git(bare, "log", "--format=%s", fork_branch).splitlines()
    assert subjects[:3] == [
        "step 3: worker -> done",
        "step 2: worker -> again",
        "step 1: worker -> again",
    ]
    step_one = git(bare, "rev-parse", f"{branch}~2")
    assert git(bare, "rev-parse", f"{fork_branch}~2") == step_one  # the original's commit
    assert git(bare, "rev-parse", branch) == tip  # the original's branch is untouched

    # --reuse: step 2 runs again (the fork point), step 3 is asked what the original's was and
    # takes its reply without running the command: replies are reused, not files, and the
    # step still has its commit.
    reused = fork(cluster, original, at=2, reuse=True)
    assert settled(cluster, reused) == "completed"
    assert [s["actor"] for s in cluster.show(reused)["steps"]] == ["command", "command", "reuse"]
    reused_branch = f"orchestrator/{reused}"
    assert git(bare, "show", f"{reused_branch}:notes.txt") == "step 1\nstep 2"
    subjects = git(bare, "log", "--format=%s", reused_branch).splitlines()
    assert subjects[:2] == ["step 3: worker -> done", "step 2: worker -> again"]
    assert git(bare, "rev-parse", branch) == tip


def test_fork_from_here_on_the_web_page_over_temporal(cluster: Cluster) -> None:
    """`serve --temporal`: "fork from here" on the person's step, the reply editor's "no" form
    sent, and the browser lands on the fork's page, run by the workers to the other edge."""
    from playwright.sync_api import expect  # why: only this test drives a browser

    from tests.web_helpers import chromium, served

    cluster.project.script(worker={"1": "---\n$status: ask\nnote: the plan\n---\n"})
    assert cluster.cli("run", "ask", "go").returncode == 3
    original = cluster.rows()[-1]["id"]
    with (
        served(None, env=cluster.env, temporal=(cluster.address, cluster.queue)) as server,
        chromium() as browser,
    ):
        page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        page.goto(server.at(f"threads/{original}"))
        step = page.locator('details.step[data-step="2"]')
        expect(step).to_have_count(1, timeout=30_000)
        expect(step.locator("a.fork")).to_have_count(1)  # the waiting step may be forked at
        step.evaluate("card => { card.open = true; }")  # opened, as a person opens it
        step.locator("a.fork").click()
        no = page.locator('form[data-status="no"]')
        no.locator('textarea[name="field.why"]').fill("not now")
        no.locator("button").click()
        expect(page.locator(".facts [data-state]")).to_have_text("completed", timeout=60_000)
        expect(page.locator("[data-ending] pre.final")).to_have_text("Stopped: not now")
        expect(page.locator(f'[data-forked-from="{original}"]')).to_contain_text("at step 2")
    assert cluster.state(original) == "waiting"  # the original still waits for its person


def test_the_python_client_forks_a_thread_on_temporal(cluster: Cluster) -> None:
    """`Orchestrator(temporal=...).fork`: the fork is made on the server and followed to its
    end, as the client does for a local thread."""
    from orchestrator import Orchestrator  # why: only this test uses the client

    cluster.project.script(worker={"1": "---\n$status: ask\nnote: the plan\n---\n"})
    assert cluster.cli("run", "ask", "go").returncode == 3
    original = cluster.rows()[-1]["id"]
    with Orchestrator(temporal=cluster.address, task_queue=cluster.queue) as orch:
        thread = orch.fork(original, at=2, status="no", fields={"why": "later"})
    assert thread.id != original and thread.state == "completed"
    assert cluster.show(thread.id)["final"] == "Stopped: later"
    assert cluster.state(original) == "waiting"
