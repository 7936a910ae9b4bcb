"""A person waiting inside a subgraph's child, answered through the parent from the command line
(`threads answer PARENT --status S --set ...`, docs/format.md section 14; rule S5).

The answer is judged against the child's waiting role, not the parent's subgraph role: the
attack-shaped case is an answer the child's contract refuses, which must be refused naming the
child's field, and the parent must go on waiting.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

STEPS = """\
def worker(call):
    person = call.latest("person")
    if person is None:
        return {"$status": "ask"}
    return {"$status": "fixed", "summary": "told: " + person.frontmatter["answer"]}


def report(call):
    return {"note": call.history[-1].body}
"""

CHILD = """\
name: child
description: Fixes one thing, asking a person
inputs:
  type: object
  properties: { issue: { type: string } }
  required: [issue]
roles:
  worker:
    description: works
    goal: You work.
    actor: { python: "steps:worker" }
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

PARENT = """\
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


def orchestrator(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def waiting_parent(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "steps.py").write_text(STEPS)
    (tmp_path / "child.yaml").write_text(CHILD)
    (tmp_path / "parent.yaml").write_text(textwrap.dedent(PARENT))
    store = tmp_path / "store"
    run = orchestrator(
        tmp_path, "run", "parent.yaml", "--input", "task=t", "--store", str(store), "--json"
    )
    last = json.loads(run.stdout.strip().splitlines()[-1])
    assert last["state"] == "waiting", run.stdout + run.stderr
    return store, last["thread"]


def test_threads_answer_through_the_parent_reaches_the_waiting_child(tmp_path: Path) -> None:
    store, parent = waiting_parent(tmp_path)
    answered = orchestrator(
        tmp_path,
        *("threads", "answer", parent, "--status", "told", "--set", "answer=use the cache"),
        *("--store", str(store), "--json"),
    )
    assert answered.returncode == 0, answered.stdout + answered.stderr
    last = json.loads(answered.stdout.strip().splitlines()[-1])
    assert last["state"] == "completed", last
    assert last["final"] == "Parent: told: use the cache"


def test_an_answer_the_childs_role_refuses_is_refused_with_its_errors(tmp_path: Path) -> None:
    """Control beside the fix: a status the child's `person` does not take is refused (by the
    child's contract, naming its statuses), and the parent still waits."""
    store, parent = waiting_parent(tmp_path)
    refused = orchestrator(
        tmp_path,
        *("threads", "answer", parent, "--status", "maybe", "--set", "answer=x"),
        *("--store", str(store)),
    )
    assert refused.returncode != 0
    assert "person" in refused.stderr and "told" in refused.stderr, refused.stderr
    shown = orchestrator(tmp_path, "threads", "show", parent, "--store", str(store), "--json")
    assert json.loads(shown.stdout)["state"] == "waiting"
