"""`simulate()` beside a graph's own Python actors (docs/testing.md section 1).

A role the script does not name, whose actor is `{python: "module:function"}`, runs its function
as a real run would; a role the script names takes its scripted replies even when it has a
Python actor; a role that is neither scripted nor a Python actor keeps the "no scripted reply
left" suspension.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from orchestrator.testing import assert_path, assert_state, reply, resume, simulate

GRAPH = """\
name: counted
description: A Python function counts the writer's drafts; a model role writes them.
roles:
  counter:
    description: Counts drafts
    goal: Count.
    actor: { python: "counting:count" }
    frontmatter:
      oneOf:
        - { type: object, properties: { $status: { const: more } }, required: [$status] }
        - { type: object, properties: { $status: { const: enough }, n: { type: integer } }, required: [$status, n] }
  writer:
    description: Writes a draft
    goal: Write.
    frontmatter:
      type: object
      properties: { draft: { type: string } }
      required: [draft]
graph:
  $START: { _: { role: counter, prompt: "Count for {{{$inputs.task}}}" } }
  counter:
    more: { role: writer, prompt: "Write another" }
    enough: { role: $END, prompt: "{{n}} drafts" }
  writer:
    _: { role: counter, prompt: "Count again" }
"""

COUNTING = """\
def count(call):
    drafts = (call.step - 1) // 2  # the counter and the writer take turns
    with open(call.workspace / "calls.txt", "a") as f:
        f.write(f"{call.step}\\n")
    if drafts >= 2:
        return {"$status": "enough", "n": drafts}
    return {"$status": "more"}
"""


def _graph(write_graph: Callable[..., Path]) -> Path:
    path = write_graph(GRAPH)
    (path.parent / "counting.py").write_text(COUNTING)
    return path


def test_an_unscripted_python_role_runs_its_function(
    write_graph: Callable[..., Path], tmp_path: Path
) -> None:
    path = _graph(write_graph)
    trace = simulate(
        path,
        {"writer": [reply(draft="one"), reply(draft="two")]},
        inputs={"task": "owls"},
        workspace=tmp_path,
    )
    assert_path(trace, ["counter", "writer", "counter", "writer", "counter", "$END"])
    assert trace.final == "2 drafts"
    assert (tmp_path / "calls.txt").read_text().split() == ["1", "3", "5"]
    actors = [
        e.event.actor for e in trace.store.events(trace.thread_id) if hasattr(e.event, "actor")
    ]
    assert actors == ["python", "scripted", "python", "scripted", "python"]


def test_a_scripted_python_role_takes_its_script(
    write_graph: Callable[..., Path], tmp_path: Path
) -> None:
    path = _graph(write_graph)
    trace = simulate(
        path,
        {"counter": [reply("enough", n=7)], "writer": []},
        inputs={"task": "owls"},
        workspace=tmp_path,
    )
    assert_path(trace, ["counter", "$END"])
    assert trace.final == "7 drafts"
    assert not (tmp_path / "calls.txt").exists()  # the function never ran


def test_a_list_script_scripts_every_role(write_graph: Callable[..., Path], tmp_path: Path) -> None:
    path = _graph(write_graph)
    trace = simulate(path, [reply("enough", n=3)], inputs={"task": "owls"}, workspace=tmp_path)
    assert trace.final == "3 drafts"
    assert not (tmp_path / "calls.txt").exists()


def test_an_unscripted_model_role_still_suspends(
    write_graph: Callable[..., Path], tmp_path: Path
) -> None:
    path = _graph(write_graph)
    trace = simulate(path, {}, inputs={"task": "owls"}, workspace=tmp_path)
    assert_state(trace, "suspended", reason_contains="no scripted reply left for role 'writer'")
    assert_path(trace, ["counter"])


def test_resume_runs_the_python_role_too(write_graph: Callable[..., Path], tmp_path: Path) -> None:
    path = _graph(write_graph)
    trace = simulate(path, {}, inputs={"task": "owls"}, workspace=tmp_path)
    assert_state(trace, "suspended", reason_contains="role 'writer'")
    trace = resume(trace, path, {"writer": [reply(draft="one"), reply(draft="two")]})
    assert_path(trace, ["counter", "writer", "counter", "writer", "counter", "$END"])
    assert (tmp_path / "calls.txt").read_text().split() == ["1", "3", "5"]
