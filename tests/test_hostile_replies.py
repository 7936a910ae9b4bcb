"""Replies an attacker or a broken model could send: each ends in a clear state, never a crash.

Through the real command line, with an agent process playing the role.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.core.engine import MAX_REPLY_CHARS
from orchestrator.testing import reply, simulate
from tests.cli_helpers import Project

PLACED = """
name: placed
description: A step that works in a folder a reply names.
roles:
  scout:
    description: Names a folder
    goal: You name folders.
    actor: { command: [PYTHON, AGENT] }
    frontmatter:
      type: object
      properties: { $status: { const: found }, dir: { type: string } }
      required: [$status, dir]
  worker:
    description: Works there
    goal: You work.
    actor: { command: [PYTHON, AGENT] }
    frontmatter:
      type: object
      properties: { $status: { const: done } }
      required: [$status]
graph:
  $START: { _: { role: scout, prompt: "Find a folder for {{{$inputs.task}}}" } }
  scout: { found: { role: worker, prompt: "Work", location: "{{{dir}}}" } }
  worker: { done: { role: $END, prompt: "Done" } }
"""


@pytest.mark.parametrize(
    ("dir_yaml", "says"),
    [
        ('"a\\0b"', "holds a NUL character"),
        (json.dumps("x" * 6000), "is 6,000 characters long"),
        (json.dumps("/etc"), "is absolute"),
        (json.dumps("a/../../up"), "leads outside the workspace"),
    ],
)
def test_a_hostile_location_suspends_the_thread_and_resume_says_so_again(
    tmp_path: Path, dir_yaml: str, says: str
) -> None:
    project = Project(tmp_path)
    project.graph(PLACED, "placed")
    project.script(
        scout=[f"---\n$status: found\ndir: {dir_yaml}\n---\n"], worker=["---\n$status: done\n---\n"]
    )
    out = project.run("run", "placed", "x")
    assert out.returncode == 3, out.stderr
    assert "Traceback" not in out.stderr and says in out.stderr
    (row,) = project.threads()
    again = project.run("threads", "resume", row["id"])
    assert again.returncode == 3 and "Traceback" not in again.stderr and says in again.stderr
    shown = project.run("threads", "show", row["id"])
    assert shown.returncode == 0 and says in shown.stdout


def test_a_huge_reply_is_rejected_unread_and_kept_cut(make_graph: object) -> None:
    graph = make_graph(  # type: ignore[operator]
        """
        name: huge
        description: d
        roles:
          w:
            description: w
            goal: g
            frontmatter: { type: object, properties: { $status: { const: ok }, a: { type: string } }, required: [$status, a] }
        graph:
          $START: { _: { role: w, prompt: "go" } }
          w: { ok: { role: $END, prompt: "{{{a}}}" } }
        """
    )
    huge = reply("ok", a="y" * (MAX_REPLY_CHARS + 10))
    trace = simulate(graph, [huge, reply("ok", a="short")])
    assert trace.state == "completed" and trace.final == "short"
    (attempt,) = trace.steps[0].attempts
    assert "at most 1,000,000 are accepted" in attempt.errors[0]
    assert len(attempt.reply) < 30_000 and attempt.reply.endswith("characters]")
