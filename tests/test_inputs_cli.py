"""What `run` refuses up front: unreadable input files, undeclared inputs, unpriced models."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from orchestrator import run_thread
from orchestrator.definition.loader import load_graph
from orchestrator.run.preflight import InputError
from orchestrator.run.session import Session, SessionError
from orchestrator.store import MemoryStore
from tests.cli_helpers import LOOP_GRAPH, Project

PRICED = """
name: priced
description: A writer under a cost limit.
limits: { max_cost_usd: 1.5 }
inputs:
  type: object
  properties:
    task: { type: string }
    priority: { type: integer }
  required: [task]
roles:
  writer:
    description: Writes
    goal: You write.
    frontmatter:
      type: object
      properties: { $status: { const: done }, text: { type: string } }
      required: [$status, text]
graph:
  $START: { _: { role: writer, prompt: "Write {{{$inputs.task}}} ({{{$inputs.priority}}})" } }
  writer: { done: { role: $END, prompt: "{{{text}}}" } }
"""

RECORDING = """
recording: 1
graph: priced
inputs: { task: t, priority: 1 }
steps:
  - role: writer
    output: "---\\n$status: done\\ntext: written\\n---\\n"
"""


def no_traceback(out: object) -> None:
    assert "Traceback" not in getattr(out, "stderr", ""), getattr(out, "stderr", "")


def test_an_input_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    (tmp_path / "issue.txt").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    out = project.run("run", "loop", "-i", "task=@issue.txt")
    no_traceback(out)
    assert out.returncode == 2
    assert "issue.txt" in out.stderr and "not UTF-8" in out.stderr and "0xe9" in out.stderr
    assert project.threads() == []  # nothing was created


def test_an_answer_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    (tmp_path / "reply.md").write_bytes(b"---\n$status: done\nnote: \xff\n---\n")
    out = project.run("threads", "answer", "01ABC", "--file", "reply.md")
    no_traceback(out)
    assert out.returncode == 2


def test_a_misspelt_input_is_refused_with_the_name_it_looks_like(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    out = project.run("run", "loop", "x", "-i", "tsak=more")
    no_traceback(out)
    assert out.returncode == 2
    assert "input 'tsak' is not declared" in out.stderr
    assert "did you mean 'task'?" in out.stderr
    assert project.threads() == []

    project.graph(PRICED, "priced")
    out = project.run("run", "priced", "-i", "task=t", "-i", "prioritty=5")
    assert out.returncode == 2 and "did you mean 'priority'?" in out.stderr


def test_more_inputs_are_taken_when_the_schema_says_so(tmp_path: Path) -> None:
    project = Project(tmp_path)
    open_graph = LOOP_GRAPH.replace(
        "name: loop",
        "name: open\ninputs:\n  type: object\n  properties: { task: { type: string } }\n"
        "  required: [task]\n  additionalProperties: { type: string }\n"
        "  patternProperties: { '^n_': { type: integer } }",
    )
    project.graph(open_graph, "open")
    project.script(worker=["---\n$status: done\nnote: ok\n---\n"])
    out = project.run("run", "open", "x", "-i", "colour=blue", "-i", "n_tries=3")
    assert out.returncode == 0, out.stderr


def test_the_python_api_refuses_an_undeclared_input(tmp_path: Path) -> None:
    project = Project(tmp_path)
    path = project.graph(PRICED, "priced")
    with pytest.raises(InputError, match="did you mean 'priority'"):
        run_thread(path, {"task": "t", "prioritty": 5}, store=MemoryStore(), workspace=tmp_path)


def test_a_model_without_a_price_under_a_cost_limit_is_refused_up_front(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")
    monkeypatch.delenv("ORCHESTRATOR_MODELS_FILE", raising=False)
    project = Project(tmp_path)
    project.graph(PRICED, "priced")
    out = project.run("run", "priced", "t", "--model", "gpt-4")
    no_traceback(out)
    assert out.returncode == 2, out.stderr
    assert "model 'gpt-4' (role writer)" in out.stderr and "max_cost_usd" in out.stderr
    assert str(Path("store") / "models.yaml") in out.stderr  # $ORCHESTRATOR_HOME/models.yaml
    assert project.threads() == []

    # A thread started from a recording cannot be continued on an unpriced model either (its
    # graph takes `$START.resume`, so only the price stands in the way).
    start = (
        '$START: { _: { role: writer, prompt: "Write {{{$inputs.task}}} '
        '({{{$inputs.priority}}})" } }'
    )
    resumable = start[:-2] + ', resume: { role: writer, prompt: "Again: {{{$inputs.message}}}" } }'
    assert start in PRICED
    project.graph(PRICED.replace(start, resumable), "priced")
    (tmp_path / "rec.yaml").write_text(textwrap.dedent(RECORDING))
    assert project.run("run", "priced", "--replay", "rec.yaml").returncode == 0
    (row,) = project.threads()
    seq = len(project.events(row["id"]))
    out = project.run("threads", "resume", row["id"], "--model", "gpt-4", "--message", "more")
    assert out.returncode == 2 and "model 'gpt-4'" in out.stderr
    assert len(project.events(row["id"])) == seq


def test_a_price_in_the_models_file_lets_it_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")
    models = tmp_path / "models.yaml"
    monkeypatch.setenv("ORCHESTRATOR_MODELS_FILE", str(models))
    graph = load_graph(Project(tmp_path).graph(PRICED, "priced"))
    session = Session(MemoryStore())
    with pytest.raises(SessionError, match=str(models)):
        session.preflight(graph, workspace=tmp_path, replay=False, model="gpt-4")
    models.write_text("prices:\n  gpt-4: {input: 30, output: 60}\n")
    assert session.preflight(graph, workspace=tmp_path, replay=False, model="gpt-4") == tmp_path
    # Without a cost limit any model goes: the cost is shown as unknown, nothing relies on it.
    models.write_text("")
    unlimited = graph.model_copy(
        update={"limits": graph.limits.model_copy(update={"max_cost_usd": None})}
    )
    assert session.preflight(unlimited, workspace=tmp_path, replay=False, model="gpt-4")
