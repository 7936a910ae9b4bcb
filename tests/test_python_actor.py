"""Python actors (`actor: {python: module:function}`) through real threads.

The graph's folder holds the module; the thread runs in the SQLite store with the runner; a
reply is routed by its status, a function's exception suspends the step with its message, an
invalid reply is repaired with the errors, a replay never calls the function, and `validate`
reports a function that does not exist at the role's line without running any of the module.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from orchestrator import run_thread
from orchestrator.actors.recording import recording_from_events
from orchestrator.core.events import StepCommitted
from orchestrator.definition.loader import load_graph
from orchestrator.linter import lint_graph_file
from orchestrator.store.sqlite import SqliteStore

GRAPH = """\
name: pick
description: A Python function picks the next task; a person-free loop.
inputs:
  type: object
  properties:
    tasks: { type: array, items: { type: string } }
  required: [tasks]
roles:
  picker:
    description: Picks the next task
    goal: Pick the next task.
    actor: { python: "tasks.picker:pick" }
    frontmatter:
      oneOf:
        - type: object
          properties:
            $status: { const: next }
            task: { type: string }
          required: [$status, task]
        - type: object
          properties:
            $status: { const: all_done }
            count: { type: integer }
          required: [$status, count]
  doer:
    description: Does a task
    goal: Do it.
    actor: { python: "doer:do" }
    frontmatter:
      type: object
      properties:
        done: { type: string }
      required: [done]
graph:
  $START:
    _: { role: picker, prompt: "Pick from {{{$inputs.tasks}}}" }
  picker:
    next: { role: doer, prompt: "Do {{{task}}}" }
    all_done: { role: $END, prompt: "All {{count}} done" }
  doer:
    _: { role: picker, prompt: "Pick again" }
"""

PICKER = '''\
"""Picks the first task not done yet: the done ones are in `done.txt` in the workspace."""

from .state import done_tasks


def pick(call):
    done = done_tasks(call.workspace)
    left = [t for t in call.inputs["tasks"] if t not in done]
    if not left:
        return {"$status": "all_done", "count": len(done), "$body": "nothing left"}
    return {"$status": "next", "task": left[0]}
'''

STATE = """\
def done_tasks(workspace):
    path = workspace / "done.txt"
    return path.read_text().split() if path.exists() else []
"""

DOER = """\
import asyncio


async def do(call):
    await asyncio.sleep(0)
    task = call.prompt.removeprefix("Do ")
    if task == "explode":
        raise RuntimeError(f"cannot do {task} on step {call.step}")
    with open(call.workspace / "done.txt", "a") as f:
        f.write(task + "\\n")
    assert call.latest("picker").frontmatter["task"] == task
    return f"---\\ndone: {task}\\n---\\nDid {task} for thread {call.thread_id}."
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / "tasks").mkdir(parents=True)
    (folder / "pick.yaml").write_text(GRAPH)
    (folder / "tasks" / "__init__.py").write_text("")
    (folder / "tasks" / "picker.py").write_text(PICKER)
    (folder / "tasks" / "state.py").write_text(STATE)
    (folder / "doer.py").write_text(DOER)
    (tmp_path / "ws").mkdir()
    return folder


def test_replies_are_routed_and_the_graph_folder_is_not_left_on_sys_path(
    project: Path, tmp_path: Path
) -> None:
    import sys  # why: to check the import left nothing behind

    store = SqliteStore(tmp_path / "store")
    result = run_thread(
        project / "pick.yaml", {"tasks": ["a", "b"]}, store=store, workspace=tmp_path / "ws"
    )
    assert (result.state, result.final) == ("completed", "All 2 done")
    assert result.path == ["picker", "doer", "picker", "doer", "picker", "$END"]
    steps = [e.event for e in store.events(result.thread_id) if isinstance(e.event, StepCommitted)]
    assert {s.actor for s in steps} == {"python"}
    assert steps[1].frontmatter == {"done": "a"}
    assert steps[1].body.strip() == f"Did a for thread {result.thread_id}."
    assert steps[-1].body.strip() == "nothing left"
    assert (tmp_path / "ws" / "done.txt").read_text() == "a\nb\n"
    assert str(project) not in sys.path
    assert "tasks" not in sys.modules and "doer" not in sys.modules


def test_an_exception_suspends_the_step_with_its_message(project: Path, tmp_path: Path) -> None:
    result = run_thread(
        project / "pick.yaml",
        {"tasks": ["a", "explode"]},
        store=tmp_path / "store",
        workspace=tmp_path / "ws",
    )
    assert result.state == "suspended" and result.kind == "actor"
    assert result.reason is not None
    assert "doer:do raised RuntimeError: cannot do explode on step 4" in result.reason
    assert "Traceback" not in result.reason
    # fixed, the thread resumes where it stopped
    (project / "doer.py").write_text(DOER.replace('task == "explode"', 'task == "never"'))
    from orchestrator import resume_thread  # why: kept next to the step it belongs to

    resumed = resume_thread(result.thread_id, store=tmp_path / "store")
    assert resumed.state == "completed" and resumed.final == "All 2 done"


def test_an_invalid_reply_is_repaired_then_suspends(project: Path, tmp_path: Path) -> None:
    (project / "doer.py").write_text(
        "def do(call):\n    return {'done': len(call.attempts)} if call.attempts else {'done': 5}\n"
    )
    (project / "pick.yaml").write_text(
        GRAPH.replace("description: Does a task", "description: Does a task\n    max_repairs: 1")
    )
    store = SqliteStore(tmp_path / "store")
    result = run_thread(
        project / "pick.yaml", {"tasks": ["a"]}, store=store, workspace=tmp_path / "ws"
    )
    assert result.state == "suspended" and result.kind == "repairs"
    assert "done" in (result.reason or "")


def test_a_function_that_returns_nothing_suspends(project: Path, tmp_path: Path) -> None:
    (project / "doer.py").write_text("def do(call):\n    pass\n")
    result = run_thread(
        project / "pick.yaml", {"tasks": ["a"]}, store=tmp_path / "s", workspace=tmp_path / "ws"
    )
    assert result.state == "suspended" and result.kind == "actor"
    assert "doer:do returned NoneType; return the reply text or a mapping" in (result.reason or "")


def test_two_graphs_with_modules_of_the_same_name_each_get_their_own(tmp_path: Path) -> None:
    for n in (1, 2):
        folder = tmp_path / f"g{n}"
        folder.mkdir()
        (folder / "one.yaml").write_text(
            textwrap.dedent(
                """\
                name: one
                description: One step
                roles:
                  only:
                    description: Says which
                    goal: Say.
                    actor: { python: "helpers:say" }
                    frontmatter: { type: object, properties: { n: { type: integer } }, required: [n] }
                graph:
                  $START: { _: { role: only, prompt: go } }
                  only: { _: { role: $END, prompt: "{{n}}" } }
                """
            )
        )
        (folder / "helpers.py").write_text(f"def say(call):\n    return {{'n': {n}}}\n")
    finals = [
        run_thread(
            tmp_path / f"g{n}" / "one.yaml", {"task": "x"}, store=tmp_path / "s", workspace=tmp_path
        ).final
        for n in (1, 2, 1)
    ]
    assert finals == ["1", "2", "1"]


def test_replay_never_calls_the_function(project: Path, tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "store")
    first = run_thread(
        project / "pick.yaml", {"tasks": ["a"]}, store=store, workspace=tmp_path / "ws"
    )
    recording = recording_from_events([s.event for s in store.events(first.thread_id)])
    (project / "doer.py").write_text("def do(call):\n    raise SystemExit('called')\n")
    (project / "tasks" / "picker.py").write_text("def pick(call):\n    raise SystemExit(1)\n")
    replayed = run_thread(
        project / "pick.yaml", store=tmp_path / "store2", replay=recording, workspace=tmp_path
    )
    assert (replayed.state, replayed.final) == ("completed", "All 1 done")


def test_validate_reports_a_missing_function_at_the_role_line(project: Path) -> None:
    marker = project / "ran.txt"
    (project / "doer.py").write_text(f"open({str(marker)!r}, 'w')\n\ndef other(call):\n    pass\n")
    (project / "pick.yaml").write_text(GRAPH.replace("tasks.picker:pick", "tasks.nothere:pick"))
    problems = lint_graph_file(project / "pick.yaml")
    found = sorted((p.code, p.line, p.message) for p in problems if p.code == "unknown-python")
    lines = GRAPH.splitlines()
    picker_line = next(i for i, t in enumerate(lines, 1) if "tasks.picker:pick" in t)
    doer_line = next(i for i, t in enumerate(lines, 1) if "doer:do" in t)
    assert [(c, line) for c, line, _ in found] == [
        ("unknown-python", picker_line),
        ("unknown-python", doer_line),
    ]
    assert "cannot find module 'tasks.nothere'" in found[0][2]
    assert "has no function 'do'" in found[1][2]
    assert not marker.exists()  # validating ran none of the module's code
    assert load_graph(project / "pick.yaml").roles["doer"].folder == str(project)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            'actor: { pyton: "a:b" }',
            ["unknown key 'pyton' in roles.r.actor", "did you mean 'python'"],
        ),
        ('actor: { python: "nocolon" }', ["must be package.module:function"]),
        ("tools: [read, browse]", ["unknown tool set 'browse'"]),
        ('tools: [{ pyhton: "a:b" }]', ["unknown key 'pyhton' in roles.r.tools.0", "'python'"]),
        ("tools: [{ mcp: { comand: [x] } }]", ["unknown key 'comand'", "did you mean 'command'"]),
        ('tools: [{ python: "nowhere_at_all:f" }]', ["cannot find module 'nowhere_at_all'"]),
    ],
)
def test_a_bad_entry_is_reported_against_its_own_form(
    tmp_path: Path, entry: str, expected: list[str]
) -> None:
    text = textwrap.dedent(
        """\
        name: g
        description: d
        roles:
          r:
            description: r
            goal: g
            ENTRY
            frontmatter: { type: object, properties: { x: { type: string } }, required: [x] }
        graph:
          $START: { _: { role: r, prompt: go } }
          r: { _: { role: $END, prompt: "{{{x}}}" } }
        """
    ).replace("ENTRY", entry)
    (tmp_path / "g.yaml").write_text(text)
    problems = [p for p in lint_graph_file(tmp_path / "g.yaml") if p.severity == "error"]
    shown = "\n".join(f"{p.message} {p.hint}" for p in problems)
    assert problems and all(p.line == 7 for p in problems), shown
    for words in expected:
        assert words in shown
    assert "unknown tool set '{" not in shown and len(problems) <= 2, shown


def test_a_credential_in_a_reply_or_an_error_never_reaches_the_store(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-ant-api03-" + "k3y" * 12
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    (project / "doer.py").write_text(
        "import os\n\n"
        "def do(call):\n"
        "    if call.attempts or call.step > 2:\n"
        "        raise RuntimeError('bad key ' + os.environ['ANTHROPIC_API_KEY'])\n"
        "    return {'done': 'x', '$body': 'the key is ' + os.environ['ANTHROPIC_API_KEY']}\n"
    )
    store = SqliteStore(tmp_path / "store")
    result = run_thread(
        project / "pick.yaml", {"tasks": ["a", "b"]}, store=store, workspace=tmp_path / "ws"
    )
    assert result.state == "suspended" and "bad key" in (result.reason or "")
    assert key not in (result.reason or "")
    store.close()
    for path in (tmp_path / "store").rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path


ONE = """\
name: one
description: One Python step
roles:
  only:
    description: Says a number
    goal: Say.
    actor: { python: "helpers:say" }
    frontmatter: { type: object, properties: { n: { type: integer } }, required: [n] }
graph:
  $START: { _: { role: only, prompt: go } }
  only: { _: { role: $END, prompt: "said {{n}}" } }
"""


def test_the_command_line_runs_validates_and_suspends_a_python_actor(tmp_path: Path) -> None:
    from tests.cli_helpers import Project  # why: the CLI helpers, for this test only

    project = Project(tmp_path)
    project.graph(ONE, "one")
    helpers = project.root / "graphs" / "helpers.py"
    helpers.write_text("def say(call):\n    return {'n': len(call.inputs['task'])}\n")

    ran = project.run("run", "one", "four", "--workspace", str(tmp_path))
    assert ran.returncode == 0, ran.stderr
    assert "said 4" in ran.stdout

    helpers.write_text("def say(call):\n    raise ValueError('no numbers today')\n")
    failed = project.run("run", "one", "four", "--workspace", str(tmp_path))
    assert failed.returncode == 3
    assert "helpers:say raised ValueError: no numbers today" in failed.stderr
    assert "Traceback" not in failed.stderr + failed.stdout

    helpers.write_text("def speak(call):\n    return {'n': 1}\n")
    checked = project.run("validate", "graphs/one.yaml")
    assert checked.returncode == 1
    assert "graphs/one.yaml:7:" in checked.stdout + checked.stderr
    assert "error[unknown-python]" in checked.stdout + checked.stderr
    assert "has no function 'say'" in checked.stdout + checked.stderr
