"""Counts say `1 step` and `2 steps` on every face, through one helper; `threads list` keeps
its columns in line when a subgraph's child thread (`PARENT.STEP`) is among the rows."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from orchestrator.cli.threads import thread_table
from orchestrator.core.events import ThreadStatus
from orchestrator.store.base import ThreadRow
from orchestrator.views.plural import noun, plural
from tests.cli_helpers import LOOP_GRAPH, Project

ROOT = Path(__file__).resolve().parents[1] / "orchestrator"
DONE = "---\n$status: done\nnote: ok\n---\n"


def test_plural_says_one_step_and_two_steps() -> None:
    assert plural(1, "step") == "1 step"
    assert plural(2, "step") == "2 steps"
    assert plural(0, "step") == "0 steps"
    assert plural(1234, "token") == "1,234 tokens"
    assert plural(1, "branch", "branches") == "1 branch"
    assert plural(3, "reply", "replies") == "3 replies"
    assert noun(1, "step") == "step" and noun(5, "step") == "steps"


# A count written into text beside a plural word by hand (`{n} steps`, `file{'s' if ...}`,
# `rate limit(s)`): each must go through `plural`.
HAND_MADE = re.compile(
    r"\{[^{}]+\}\s?(steps|threads|tokens|tool calls|lines|characters|files|worktrees|times"
    r"|rejected replies)\b|'s' if|\"s\" if|\(s\)[\"']"
)


def test_no_face_writes_a_plural_by_hand() -> None:
    faces = [
        *(ROOT / "cli").glob("*.py"),
        *(ROOT / "web").glob("*.py"),
        *(ROOT / "views").glob("*.py"),
    ]
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in faces
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if HAND_MADE.search(line) and not line.strip().startswith("#")
    ]
    assert found == []


def test_one_step_on_the_command_line(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    project.script(worker=[DONE])
    run = project.run("run", "loop", "owls")
    assert run.returncode == 0, run.stderr
    assert "completed in 1 step, " in run.stderr
    thread_id = project.threads()[0]["id"]
    show = project.run("threads", "show", thread_id)
    assert f"thread {thread_id} · loop · completed · 1 step · " in show.stdout
    assert "1 steps" not in show.stdout + run.stderr


CHILD = """
name: child
description: Fixes one thing
roles:
  worker:
    description: works
    goal: You work.
    actor: { command: [PYTHON, AGENT], timeout: 60 }
    frontmatter:
      type: object
      properties: { $status: { const: fixed }, note: { type: string } }
      required: [$status, note]
graph:
  $START: { _: { role: worker, prompt: "Fix: {{{$inputs.task}}}" } }
  worker: { fixed: { role: $END, prompt: "Fixed: {{{note}}}" } }
"""
PARENT = """
name: parent-of-a-child-with-a-long-graph-name
description: Runs the child
roles:
  fix:
    description: Runs the child graph
    graph: child
graph:
  $START: { _: { role: fix, inputs: { task: "{{{$inputs.task}}}" } } }
  fix: { done: { role: $END, prompt: "Done: {{{$body}}}" } }
"""


def test_threads_list_keeps_its_columns_on_a_child_thread_row(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(CHILD, "child")
    project.graph(PARENT, "parent-of-a-child-with-a-long-graph-name")
    project.graph(LOOP_GRAPH, "loop")
    project.script(worker=["---\n$status: fixed\nnote: ok\n---\n"])
    assert project.run("run", "parent-of-a-child-with-a-long-graph-name", "owls").returncode == 0
    out = project.run("threads", "list")
    assert out.returncode == 0, out.stderr
    header, *rows = out.stdout.splitlines()
    assert len(rows) == 2
    parent, child = rows
    parent_id = parent.split()[0]
    assert child.startswith(f"  {parent_id}.1 ")  # under its parent, indented
    for column in ("GRAPH", "STATE", "UPDATED"):
        at = header.index(column)
        for row in rows:
            assert row[at - 2 : at] == "  " and row[at] != " ", (column, header, row)
    steps_end = header.index("STEPS") + len("STEPS")
    assert [row[steps_end - 1] for row in rows] == ["1", "1"]  # right-aligned, in line


def test_a_child_comes_right_under_its_parent(tmp_path: Path) -> None:
    row = ThreadRow("A", "g", "", "", ThreadStatus.COMPLETED, 1, 0.0, 0, 0, 1.0, 1.0, "", "", 1)
    rows = [row, replace(row, id="B", created=2.0), replace(row, id="A.1", created=3.0)]
    lines = thread_table(rows)
    assert [line.split()[0] for line in lines[1:]] == ["A", "A.1", "B"]
    assert lines[2].startswith("  A.1")
    assert len({line.index("completed") for line in lines[1:]}) == 1
