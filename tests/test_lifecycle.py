"""A thread's life, the same from every entry point: batch, Ctrl-C, a cancel from elsewhere,
`graph --thread`, and the Python API across processes.

Everything runs the real command line or the real API in subprocesses, against a real SQLite
store, real git and real agent processes.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.cli_helpers import LOOP_GRAPH, Project
from tests.process_helpers import live_with, marker, wait_until
from tests.test_worktree import branches, git, make_repo, write_graph

HUMAN_GRAPH = """
name: ask
description: A person decides.
roles:
  person:
    description: Decides
    goal: You decide.
    actor: human
    frontmatter:
      type: object
      properties:
        $status: { enum: [yes, no] }
        why: { type: string }
      required: [$status, why]
graph:
  $START:
    _: { role: person, prompt: "Ship {{{$inputs.task}}}?" }
  person:
    yes: { role: $END, prompt: "Shipped: {{{why}}}" }
    no: { role: $END, prompt: "Held: {{{why}}}" }
"""


def test_batch_threads_on_a_git_workspace_commit_their_work_on_their_own_branches(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    graph = write_graph(tmp_path, "edit")
    lines = tmp_path / "batch.jsonl"
    lines.write_text('{"task": "one"}\n{"task": "two"}\n')
    env = {**os.environ, "MARKER_PATH": str(tmp_path / "state")}
    out = subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", str(graph), "--batch", str(lines)],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    mine = [b for b in branches(repo) if b.startswith("orchestrator/")]
    assert len(mine) == 2
    for branch in mine:
        # The thread's work is a commit on its branch: fix.txt is in the branch's tree.
        assert git(repo, "log", "--format=%s", f"main..{branch}"), branch
        assert "fix.txt" in git(repo, "ls-tree", "--name-only", branch).split()
    assert not (repo / "fix.txt").exists()  # the checkout is untouched


def _read_until(fd: int, pattern: bytes, seconds: float) -> bytes:
    seen = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and pattern not in seen:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            seen += data
    return seen


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_ctrl_c_at_the_human_interview_leaves_a_thread_that_answer_accepts(
    tmp_path: Path,
) -> None:
    project = Project(tmp_path)
    project.graph(HUMAN_GRAPH, "ask")
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        project.cmd("run", "ask", "v2"),
        cwd=project.root,
        env={**project.env(), "TERM": "dumb"},
        stdin=follower,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    screen = _read_until(leader, b"status>", 60)
    assert b"status>" in screen, screen.decode(errors="replace")
    proc.send_signal(signal.SIGINT)
    screen += _read_until(leader, b"threads answer", 30)
    proc.wait(timeout=30)
    os.close(leader)
    text = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", screen.decode(errors="replace"))
    assert proc.returncode == 3, text
    assert "waits for a person" in text and "threads answer" in text

    (row,) = project.threads()
    assert row["state"] == "waiting"
    answered = project.run("threads", "answer", row["id"], "--status", "yes", "--set", "why=ok")
    assert answered.returncode == 0, answered.stderr
    assert "Shipped: ok" in answered.stdout
    assert project.threads()[0]["state"] == "completed"


SLOW_AGENT = textwrap.dedent(
    """
    import os, pathlib, sys, time
    sys.stdin.read()
    pathlib.Path(__file__).parent.joinpath("agent.started").write_text("yes")
    time.sleep(120)
    print("---\\n$status: done\\nnote: too late\\n---\\n")
    """
)


def test_a_cancel_from_another_process_stops_the_running_one_and_its_actor(
    tmp_path: Path,
) -> None:
    project = Project(tmp_path)
    project.agent.write_text(SLOW_AGENT)
    word = marker()  # the agent runs in a sandbox with PIDs of its own: found by its argv
    project.graph(LOOP_GRAPH.replace("[PYTHON, AGENT]", f"[PYTHON, AGENT, {word}]"), "loop")
    running = project.popen("run", "loop", "x")
    started = tmp_path / "agent.started"
    assert wait_until(started.exists, timeout=60), running.stderr.read() if running.stderr else ""
    assert live_with(word)
    (row,) = project.threads()

    cancelled = project.run("threads", "cancel", row["id"])
    assert cancelled.returncode == 0, cancelled.stderr
    _, stderr = running.communicate(timeout=30)
    assert "cancelled" in stderr and "another process" not in stderr, stderr
    assert running.returncode == 1
    assert wait_until(lambda: not live_with(word)), "the cancelled step's agent kept running"
    events = [e["type"] for e in project.events(row["id"])]
    assert events[-1] == "ThreadCancelled" and "StepCommitted" not in events


def test_graph_thread_of_another_graph_is_refused(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    project.graph(HUMAN_GRAPH, "ask")
    project.script(worker=["---\n$status: done\nnote: n\n---\n"])
    assert project.run("run", "loop", "x").returncode == 0
    (row,) = project.threads()
    drawn = project.run("graph", "ask", "--thread", row["id"], "--store", str(project.store))
    assert drawn.returncode == 2
    assert "graph 'loop'" in drawn.stderr and "not of 'ask'" in drawn.stderr
    same = project.run("graph", "loop", "--thread", row["id"], "--store", str(project.store))
    assert same.returncode == 0, same.stderr


def test_python_api_answers_a_waiting_thread_from_another_process(tmp_path: Path) -> None:
    project = Project(tmp_path)
    graph = project.graph(HUMAN_GRAPH, "ask")
    store = tmp_path / "api-store"
    start = textwrap.dedent(
        f"""
        import json
        from orchestrator import run_thread
        result = run_thread({str(graph)!r}, {{"task": "v3"}}, store={str(store)!r})
        print(json.dumps(result.to_dict()))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", start], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    started = json.loads(out.stdout)
    assert started["state"] == "waiting"

    answer = textwrap.dedent(
        f"""
        import json
        from orchestrator import answer_thread, get_thread
        result = answer_thread({started["thread"]!r}, status="no", fields={{"why": "later"}},
                               store={str(store)!r})
        info = get_thread({started["thread"]!r}, store={str(store)!r})
        print(json.dumps({{"state": result.state, "final": result.final,
                          "steps": [s.status for s in info.steps]}}))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", answer], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"state": "completed", "final": "Held: later", "steps": ["no"]}


def test_python_api_resume_and_cancel(tmp_path: Path) -> None:
    from orchestrator import cancel_thread, get_thread, resume_thread, run_thread
    from orchestrator.core.outcomes import Refused

    project = Project(tmp_path)
    graph = project.graph(HUMAN_GRAPH, "ask")
    store = tmp_path / "store2"
    result = run_thread(graph, {"task": "v4"}, store=store)
    assert result.state == "waiting"
    with pytest.raises(Refused, match="threads answer"):
        resume_thread(result.thread_id, store=store)
    info = cancel_thread(result.thread_id, store=store)
    assert info.state == "cancelled"
    assert get_thread(result.thread_id[-8:], store=store).state == "cancelled"
    with pytest.raises(Refused, match="already cancelled"):
        cancel_thread(result.thread_id, store=store)


SHELL_GRAPH = """
name: shelly
description: A role that runs commands.
roles:
  worker:
    description: Runs things
    goal: You run things.
    tools: [shell]
    actor: { command: [PYTHON, AGENT] }
    frontmatter:
      type: object
      properties: { $status: { const: done }, note: { type: string } }
      required: [$status, note]
graph:
  $START: { _: { role: worker, prompt: "Go {{{$inputs.task}}}" } }
  worker: { done: { role: $END, prompt: "{{{note}}}" } }
"""


def test_run_says_up_front_when_no_sandbox_can_be_made(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(SHELL_GRAPH, "shelly")
    project.script(worker=["---\n$status: done\nnote: n\n---\n"])
    env = {**project.env(), "ORCHESTRATOR_SANDBOX_WITH": "none"}
    out = subprocess.run(
        project.cmd("run", "shelly", "x"), cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 1
    assert "sandbox" in out.stderr and "'worker'" in out.stderr
    assert project.threads() == []  # nothing was started
    ran = project.run("run", "shelly", "x")  # where a sandbox can be made, it runs
    assert ran.returncode == 0, ran.stderr


def test_a_cancel_during_a_precondition_check_starts_no_agent(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.agent.write_text(SLOW_AGENT)
    checked = tmp_path / "checking"
    # Long enough that the cancel (two CLI starts, seconds each on a loaded machine) lands
    # during the check; the cancel stops the check, so the test does not wait for it.
    slow_check = f'[PYTHON, "-c", "import pathlib, time; pathlib.Path({str(checked)!r}).touch(); time.sleep(30)"]'
    graph = LOOP_GRAPH.replace(
        "    actor: { command: [PYTHON, AGENT], timeout: 60 }",
        f"    actor: {{ command: [PYTHON, AGENT], timeout: 60 }}\n    requires: [{{ command: {slow_check} }}]",
    )
    project.graph(graph, "loop")
    running = project.popen("run", "loop", "x")
    assert wait_until(checked.exists, timeout=60)
    (row,) = project.threads()
    assert project.run("threads", "cancel", row["id"]).returncode == 0
    _, stderr = running.communicate(timeout=30)
    assert running.returncode == 1 and "cancelled" in stderr, stderr
    assert not (tmp_path / "agent.started").exists()  # the step's agent never started
