"""A small project for the fork tests: a writer and a reviewer played by Python functions.

The writer appends a version line to `draft.txt` in its workspace, the editor its prompt; the
reviewer asks for changes (to the editor) when its prompt says "be strict" (a fork's message),
or on its first review of a "picky" task, and approves otherwise. Every call
is counted in `calls.txt` beside the graph (outside any workspace), so a test sees which
actors ran.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

GRAPH = """\
name: review
description: A writer and a reviewer, both Python functions.
inputs:
  type: object
  properties: { task: { type: string } }
  required: [task]
roles:
  writer:
    description: Writes a draft
    goal: Write.
    actor: { python: "roles:write" }
    frontmatter:
      type: object
      properties:
        $status: { enum: [drafted] }
        draft: { type: string }
      required: [$status, draft]
  editor:
    description: Edits the draft
    goal: Edit.
    actor: { python: "roles:edit" }
    frontmatter:
      type: object
      properties: { edit: { type: string } }
      required: [edit]
  reviewer:
    description: Reviews the draft
    goal: Review.
    actor: { python: "roles:review" }
    frontmatter:
      type: object
      properties:
        $status: { enum: [approved, changes] }
        notes: { type: string }
        tone: { type: string }
      required: [$status, tone]
      oneOf:
        - { properties: { $status: { const: approved } } }
        - { properties: { $status: { const: changes } }, required: [notes] }
graph:
  $START:
    _: { role: writer, prompt: "Write about {{{$inputs.task}}}" }
  writer:
    drafted: { role: reviewer, prompt: "Review: {{{draft}}}" }
  editor:
    _: { role: reviewer, prompt: "Check the edit ({{{$steps.reviewer.tone}}})" }
  reviewer:
    approved: { role: $END, prompt: "Approved: {{{$steps.writer.draft}}}" }
    changes: { role: editor, prompt: "Edit: {{{notes}}}" }
"""

ROLES = """\
from pathlib import Path

CALLS = Path(__file__).parent / "calls.txt"


def _count(name):
    with open(CALLS, "a") as f:
        f.write(name + "\\n")


def write(call):
    _count("writer")
    path = call.workspace / "draft.txt"
    version = len(path.read_text().splitlines()) + 1 if path.exists() else 1
    with open(path, "a") as f:
        f.write(f"v{version}\\n")
    return {"$status": "drafted", "draft": f"draft v{version}"}


def edit(call):
    _count("editor")
    with open(call.workspace / "draft.txt", "a") as f:
        f.write(call.prompt + "\\n")
    return {"edit": call.prompt}


def review(call):
    _count("reviewer")
    with open(call.workspace / "prompts.txt", "a") as f:
        f.write(call.prompt.replace("\\n", " | ") + "\\n")
    picky = "picky" in call.inputs["task"] and call.prompt == "Review: draft v1"
    if "be strict" in call.prompt or picky:
        return {"$status": "changes", "notes": "shorter", "tone": "plain"}
    return {"$status": "approved", "tone": "plain"}
"""


def make_project(folder: Path) -> Path:
    """The graph file, with its roles module beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "review.yaml").write_text(textwrap.dedent(GRAPH), encoding="utf-8")
    (folder / "roles.py").write_text(ROLES, encoding="utf-8")
    return folder / "review.yaml"


def calls(graph_file: Path) -> list[str]:
    path = graph_file.parent / "calls.txt"
    return path.read_text().split() if path.exists() else []
