"""A thread waiting for a person: what `threads show` and `run` tell, and `threads answer`
asking in a terminal as `run` does."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator import get_thread
from tests.cli_helpers import Project
from tests.test_lifecycle import _read_until
from tests.test_threads_cli import HUMAN_GRAPH

PROPOSAL = "---\n$status: proposed\nproposal: buy owls\n---\n"
GRAPH = HUMAN_GRAPH.replace(
    "budget: { type: integer }",
    "budget: { type: integer, description: in dollars }, note: { type: string }",
)


def waiting(tmp_path: Path) -> tuple[Project, str, subprocess.CompletedProcess[str]]:
    project = Project(tmp_path)
    project.graph(GRAPH, "approve")
    project.script(worker=[PROPOSAL])
    out = project.run("run", "approve", "owls")
    assert out.returncode == 3, out.stderr
    return project, project.threads()[0]["id"], out


def test_show_tells_the_question_and_the_answers_it_takes(tmp_path: Path) -> None:
    project, thread_id, run = waiting(tmp_path)
    yes = f"orchestrator threads answer {thread_id} --status yes --set budget=..."
    no = f"orchestrator threads answer {thread_id} --status no --set why=..."
    assert yes in run.stderr and no in run.stderr  # the end of `run` says it too

    out = project.run("threads", "show", thread_id)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "question (step 2, answered as 'boss': A person who approves):" in text
    assert "  Approve? buy owls" in text
    assert yes in text and no in text and "--status ..." not in text
    assert "budget: integer, required (in dollars)" in text
    assert "note: string, optional" in text
    assert f"orchestrator threads answer {thread_id}` in a terminal" in text

    data = json.loads(project.run("threads", "show", thread_id, "--json").stdout)
    assert data["waiting"]["prompt"] == "Approve? buy owls"
    answers = {a["status"]: a for a in data["waiting"]["answers"]}
    assert answers["yes"]["required"] == ["budget"] and answers["yes"]["optional"] == ["note"]
    assert answers["no"]["command"] == no

    info = get_thread(thread_id, store=project.store)
    assert info.question is not None and info.question.prompt == "Approve? buy owls"


def test_answer_without_options_and_without_a_terminal_says_what_to_pass(tmp_path: Path) -> None:
    project, thread_id, _ = waiting(tmp_path)
    out = project.run("threads", "answer", thread_id)
    assert out.returncode == 2
    assert "no terminal" in out.stderr
    assert f"answer {thread_id} --status yes --set budget=..." in out.stderr
    assert f"answer {thread_id} --file REPLY.md" in out.stderr
    assert project.threads()[0]["state"] == "waiting"


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_answer_in_a_terminal_asks_like_run_and_commits_through_the_session(
    tmp_path: Path,
) -> None:
    project, thread_id, _ = waiting(tmp_path)
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        project.cmd("threads", "answer", thread_id),
        cwd=project.root,
        env={**project.env(), "TERM": "dumb"},
        stdin=follower,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    try:
        screen = _read_until(leader, b"status>", 60)
        assert b"Approve? buy owls" in screen, screen
        assert b"Statuses: yes, no" in screen
        os.write(leader, b"yes\n")
        screen += _read_until(leader, b"budget>", 30)
        os.write(leader, b"lots\n")  # not an integer: shown the error, asked again
        screen += _read_until(leader, b"note (optional, Enter to skip)>", 30)
        os.write(leader, b"\n")
        screen += _read_until(leader, b"notes (optional)>", 30)
        os.write(leader, b"\n")
        screen += _read_until(leader, b"status>", 30)
        assert b"was not accepted" in screen and b"budget" in screen
        os.write(leader, b"yes\n")
        screen += _read_until(leader, b"budget>", 30)
        os.write(leader, b"300\n")
        screen += _read_until(leader, b"Enter to skip)>", 30)
        os.write(leader, b"\n")
        screen += _read_until(leader, b"notes (optional)>", 30)
        os.write(leader, b"fine\n")
        screen += _read_until(leader, b"Approved with budget 300", 60)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(leader)
    text = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", screen.decode(errors="replace"))
    assert proc.returncode == 0, text
    assert "Approved with budget 300" in text
    assert project.threads()[0]["state"] == "completed"
    committed = [e for e in project.events(thread_id) if e["type"] == "StepCommitted"]
    assert committed[-1]["frontmatter"] == {"$status": "yes", "budget": 300}
    assert committed[-1]["body"].strip() == "fine"
    rejected = [e for e in project.events(thread_id) if e["type"] == "AttemptRejected"]
    assert rejected == []  # a refused answer is asked again, never recorded


BRANCH_GRAPH = """
name: both
description: A worker and a person work side by side.
roles:
  worker:
    description: Works
    goal: You work.
    actor: { command: [PYTHON, AGENT] }
    frontmatter:
      type: object
      properties: { $status: { const: proposed }, proposal: { type: string } }
      required: [$status, proposal]
  boss:
    description: A person
    goal: You decide.
    actor: human
    frontmatter:
      type: object
      properties: { $status: { const: yes }, budget: { type: integer } }
      required: [$status, budget]
graph:
  $START:
    _:
      parallel:
        - { role: worker, prompt: "Propose for {{{$inputs.task}}}" }
        - { role: boss, prompt: "Budget for {{{$inputs.task}}}?" }
      join: { role: $END, prompt: "{{{$steps.worker.proposal}}} with {{{$steps.boss.budget}}}" }
"""


def test_answer_takes_a_person_waiting_inside_a_parallel_branch(tmp_path: Path) -> None:
    """The moderator takes the answer (the thread waits with no step in flight, its person in
    a branch); `threads answer` asks it rather than re-deriving the rule."""
    project = Project(tmp_path)
    project.graph(BRANCH_GRAPH, "both")
    project.script(worker=[PROPOSAL])
    out = project.run("run", "both", "owls")
    assert out.returncode == 3, out.stderr
    thread_id = project.threads()[0]["id"]
    answered = project.run("threads", "answer", thread_id, "--status", "yes", "--set", "budget=5")
    assert answered.returncode == 0, answered.stderr
    assert "buy owls with 5" in answered.stdout


TWO_PEOPLE = """
name: two
description: Two people answer side by side.
roles:
  boss:
    description: Sets the budget
    goal: You decide.
    actor: human
    frontmatter:
      type: object
      properties: { budget: { type: integer } }
      required: [budget]
  chief:
    description: Approves
    goal: You approve.
    actor: human
    frontmatter:
      type: object
      properties: { $status: { const: yes }, note: { type: string } }
      required: [$status, note]
graph:
  $START:
    _:
      parallel:
        - { role: boss, prompt: "Budget for {{{$inputs.task}}}?" }
        - { role: chief, prompt: "Approve {{{$inputs.task}}}?" }
      join: { role: $END, prompt: "{{{$steps.chief.note}}} with {{{$steps.boss.budget}}}" }
"""


def test_answer_takes_any_waiting_branch_by_its_step(tmp_path: Path) -> None:
    """Two branches wait for people: the moderator lists both (`allowed()`), `threads show`
    says which `--step` each answer names, and `threads answer --step` answers the second
    branch first; the thread waits for the other, then completes with both answers."""
    project = Project(tmp_path)
    project.graph(TWO_PEOPLE, "two")
    out = project.run("run", "two", "owls")
    assert out.returncode == 3, out.stderr
    thread_id = project.threads()[0]["id"]
    shown = project.run("threads", "show", thread_id)
    assert f"orchestrator threads answer {thread_id} --step 1 --set budget=..." in shown.stdout

    wrong = project.run("threads", "answer", thread_id, "--step", "9", "--set", "budget=5")
    assert wrong.returncode != 0 and "step 9" in wrong.stderr
    assert "these do: 1, 2" in wrong.stderr

    second = project.run(
        "threads", "answer", thread_id, "--step", "2", "--status", "yes", "--set", "note=go"
    )
    assert second.returncode == 3, second.stderr  # the first branch still waits
    thread = get_thread(thread_id, store=project.store)
    assert thread.state == "waiting"
    assert [s.role for s in thread.steps if s.committed] == ["chief"]
    # An answer naming no step goes to the step still waiting: the boss's.
    first = project.run("threads", "answer", thread_id, "--set", "budget=5")
    assert first.returncode == 0, first.stderr
    assert "go with 5" in first.stdout


KID = """
name: kid
description: A person approves inside a child thread.
inputs:
  type: object
  properties: { task: { type: string } }
  required: [task]
roles:
  boss:
    description: Approves
    goal: You approve.
    actor: human
    frontmatter:
      type: object
      properties: { ok: { type: boolean } }
      required: [ok]
graph:
  $START: { _: { role: boss, prompt: "Approve {{{$inputs.task}}}?" } }
  boss: { _: { role: $END, ending: approved, prompt: "approved={{{ok}}}" } }
"""

NESTS = """
name: nests
description: Runs kid as a subgraph role.
roles:
  approve:
    description: Runs the child graph
    graph: kid
graph:
  $START: { _: { role: approve, inputs: { task: "{{{$inputs.task}}}" } } }
  approve: { approved: { role: $END, prompt: "Parent: {{{$body}}}" } }
"""


def test_answer_through_the_parent_reaches_the_person_inside_its_child(tmp_path: Path) -> None:
    """`threads answer PARENT` answers the person who waits in the subgraph's child (as
    allowed() lists it): checked against the child's role, recorded there, and the parent
    continues to its end."""
    project = Project(tmp_path)
    project.graph(KID, "kid")
    project.graph(NESTS, "nests")
    assert project.run("run", "nests", "owls").returncode == 3
    parent = next(t["id"] for t in project.threads() if "." not in t["id"])
    shown = project.run("threads", "show", parent)
    assert f"orchestrator threads answer {parent} --set ok=..." in shown.stdout
    refused = project.run("threads", "answer", parent, "--set", "ok=[1]")
    assert refused.returncode == 1 and "ok" in refused.stderr  # the child's contract
    answered = project.run("threads", "answer", parent, "--set", "ok=true")
    assert answered.returncode == 0, answered.stderr
    assert "Parent: approved=true" in answered.stdout
    assert get_thread(f"{parent}.1", store=project.store).state == "completed"


def test_a_role_the_graph_lost_is_not_answered_but_resumed(tmp_path: Path) -> None:
    """The moderator takes no answer for a step whose role the graph no longer has (J8) and
    takes a resume (J17): `threads show` and `threads answer` say to resume, not to answer
    with a whole reply (which would be refused)."""
    project, thread_id, _ = waiting(tmp_path)
    path = project.root / "graphs" / "approve.yaml"
    path.write_text(path.read_text().replace("boss", "chief"))
    shown = project.run("threads", "show", thread_id)
    assert "the graph has no role 'boss' any more" in shown.stdout
    assert (
        f"orchestrator threads resume {thread_id}" in shown.stdout and "--file" not in shown.stdout
    )
    refused = project.run("threads", "answer", thread_id, "--file", "-", input=PROPOSAL)
    assert refused.returncode == 2
    assert "no longer has role 'boss', which step 2 waits for: resume" in refused.stderr
    resumed = project.run("threads", "resume", thread_id)
    assert resumed.returncode == 3, resumed.stderr  # decided again: the renamed role waits
    assert f"orchestrator threads answer {thread_id} --status yes" in resumed.stderr
