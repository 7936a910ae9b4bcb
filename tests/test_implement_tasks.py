"""The bundled task loop `implement-tasks`: its Python picker and recorder run for real, every
model-played role (the task planner, and solve-issue's roles in each child thread) is scripted."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from orchestrator.actors.scripted import ScriptedActor
from orchestrator.definition.loader import load_graph
from orchestrator.definition.models import PythonActor
from orchestrator.run.actors import default_actor_for
from orchestrator.run.options import RunOptions
from orchestrator.run.session import Session
from orchestrator.store.memory import MemoryStore
from orchestrator.testing import reply

TASKS = [
    {"id": "T1", "title": "Add mean()", "description": "Add mean().", "depends_on": []},
    {"id": "T2", "title": "Add median()", "description": "Use mean().", "depends_on": ["T1"]},
]


def solved(n: int) -> dict[str, list[str]]:
    """solve-issue's roles, `n` tasks each solved on the first try."""
    return {
        "planner": [reply("ready", plan=f"plan {i}", files=["stats.py"]) for i in range(n)],
        "developer": [
            reply("done", summary=f"did {i}", files_changed=["stats.py"]) for i in range(n)
        ],
        "reviewer": [reply("approved", summary="fine")] * n,
        "tester": [reply("passed", test_command="pytest", test_output_summary="ok")] * n,
    }


def run(workspace: Path, replies: dict[str, list[str]], tasks: Any = TASKS) -> tuple[Session, Any]:
    (workspace / "tasks.json").write_text(json.dumps(tasks))  # as the task planner writes it
    graph = load_graph("implement-tasks")
    session = Session(MemoryStore())
    scripted = ScriptedActor({"task-planner": [reply("planned", count=2)] * 3, **replies})
    python = default_actor_for(RunOptions())

    def actor_for(name: str, role: Any) -> Any:
        return python(name, role) if isinstance(role.actor, PythonActor) else scripted

    tid = session.start(
        graph, {"spec": "mean and median"}, folder=workspace, in_place=True
    ).thread_id
    result = asyncio.run(session.advance(graph, tid, actor_for=actor_for))
    return session, result


def test_every_task_is_solved_in_dependency_order_by_a_solve_issue_child(tmp_path: Path) -> None:
    session, result = run(tmp_path, solved(2))
    assert result.state == "completed", result.reason
    assert result.final == 'Every task ended. Done: ["T1", "T2"]. Not done: [].'
    view = session.view(result.thread_id)
    assert [s.role for s in view.steps] == [
        "task-planner",
        "picker",
        "solve",
        "record",
        "picker",
        "solve",
        "record",
        "picker",
    ]
    first = view.steps[2]
    assert first.child == f"{result.thread_id}.3" and first.status == "done"
    child = session.view(first.child)
    assert child.state.inputs["issue"].startswith("Add mean() (task T1")
    assert [s.role for s in child.steps] == ["planner", "developer", "reviewer", "tester"]
    written = json.loads((tmp_path / "tasks.json").read_text())
    assert [(t["id"], t["status"]) for t in written] == [("T1", "done"), ("T2", "done")]


def test_a_stopped_task_blocks_the_tasks_that_depend_on_it(tmp_path: Path) -> None:
    replies = {
        "planner": [reply("insufficient_info", question="which mean?")],
        "requester": [reply("stop", reason="not now")],
    }
    session, result = run(tmp_path, replies)
    assert result.state == "failed" and result.ending == "blocked"
    assert result.final == "Tasks T2 cannot start: they depend on tasks that did not end done: T1"
    assert "fix or re-plan" in (result.recovery or "")
    written = json.loads((tmp_path / "tasks.json").read_text())
    assert written[0]["status"] == "stopped" and "status" not in written[1]


def test_a_broken_tasks_file_goes_back_to_the_task_planner(tmp_path: Path) -> None:
    broken = [{"id": "T1", "title": "x", "depends_on": ["T9"]}]
    session, result = run(tmp_path, {}, tasks=broken)
    assert result.state == "suspended"  # the script has no fixed file to offer: it ran out
    steps = session.view(result.thread_id).steps
    assert [s.role for s in steps[:3]] == ["task-planner", "picker", "task-planner"]
    assert "depends on 'T9', which is no task" in steps[2].prompt


def test_the_readme_replay_of_the_recorded_loop_completes(tmp_path: Path) -> None:
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator",
            "run",
            "implement-tasks",
            "--workspace",
            str(repo / "examples" / "sample-repo"),
            "-i",
            f"spec=@{repo / 'examples' / 'tasks-spec.md'}",
            "--replay",
            str(repo / "examples" / "implement-tasks.recording.yaml"),
            "--store",
            str(tmp_path / "store"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["state"] == "completed"
    assert result["final"] == 'Every task ended. Done: ["T1", "T2", "T3"]. Not done: [].'
    assert not (repo / "examples" / "sample-repo" / "tasks.json").exists()  # a replay writes none


def test_roles_says_the_solve_role_is_played_by_a_solve_issue_thread() -> None:
    from orchestrator.definition.catalog import graph_roles

    actors = {entry.name: entry.actor for entry in graph_roles(load_graph("implement-tasks"))}
    assert actors["solve"] == "graph: solve-issue"
    assert actors["picker"].startswith("python: ") and actors["task-planner"] == "anthropic"
