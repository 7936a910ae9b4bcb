"""Subgraph roles (docs/format.md section 14) through the real engine, runner and session."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import pytest

from orchestrator import run_thread
from orchestrator.actors.human import HumanActor
from orchestrator.actors.scripted import ScriptedActor
from orchestrator.definition.loader import load_graph
from orchestrator.run.options import RunOptions
from orchestrator.run.session import Session
from orchestrator.store.memory import MemoryStore
from orchestrator.testing import reply, resume, simulate

CHILD = """\
name: child
description: Fixes one thing
inputs:
  type: object
  properties: { issue: { type: string } }
  required: [issue]
roles:
  worker:
    description: works
    goal: You work.
    frontmatter:
      oneOf:
        - properties: { $status: { const: fixed }, summary: { type: string } }
          required: [$status, summary]
        - properties: { $status: { const: ask } }
        - properties: { $status: { const: stuck }, why: { type: string } }
          required: [$status, why]
  person:
    description: answers
    goal: You answer.
    actor: human
    frontmatter:
      properties: { answer: { type: string } }
      required: [answer]
graph:
  $START:
    _: { role: worker, prompt: "Fix: {{{$inputs.issue}}}" }
  worker:
    fixed: { role: $END, prompt: "Fixed: {{{summary}}}" }
    ask: { role: person, prompt: "Help the worker" }
    stuck: { role: $END, ending: stuck, outcome: failure, prompt: "Stuck: {{{why}}}" }
  person:
    _: { role: worker, prompt: "The person says: {{{answer}}}" }
"""

PARENT = """\
name: parent
description: Runs the child
limits: { max_steps: 6 }
roles:
  fix:
    description: Runs the child graph
    graph: child
  report:
    description: reports
    goal: You report.
    frontmatter:
      properties: { note: { type: string } }
      required: [note]
graph:
  $START:
    _: { role: fix, inputs: { issue: "{{{$inputs.task}}}" } }
  fix:
    done: { role: report, prompt: "Say: {{{summary}}} / {{{$body}}}" }
    stuck: { role: $END, ending: gave-up, outcome: failure, prompt: "Child: {{{$body}}}" }
  report:
    _: { role: $END, prompt: "Report: {{{note}}}" }
"""


@pytest.fixture
def graphs(tmp_path: Path) -> Path:
    (tmp_path / "child.yaml").write_text(CHILD)
    (tmp_path / "parent.yaml").write_text(PARENT)
    return tmp_path / "parent.yaml"


def test_the_child_ending_is_the_status_and_its_fields_and_message_carry_on(graphs: Path) -> None:
    trace = simulate(
        graphs,
        {"worker": [reply("fixed", summary="null check")], "report": [reply(note="ok")]},
        {"task": "crash on empty"},
    )
    assert trace.state == "completed" and trace.path == ["fix", "report", "$END"]
    fix = trace.steps[0]
    assert fix.status == "done" and fix.frontmatter == {"summary": "null check"}
    assert fix.child == f"{trace.thread_id}.1"
    assert trace.steps[1].prompt == "Say: null check / Fixed: null check"
    child = simulate_child_view(trace)
    assert child["inputs"] == {"issue": "crash on empty"}
    assert child["parent"] == (trace.thread_id, 1) and child["path"] == ["worker", "$END"]


def simulate_child_view(trace: Any) -> dict[str, Any]:
    session = Session(trace.store)
    child_id = f"{trace.thread_id}.1"  # a child's id: its parent's and the step's
    view = session.view(child_id)
    first = session.events(child_id)[0].event
    return {
        "inputs": view.state.inputs,
        "parent": (first.parent, first.parent_step),
        "path": list(view.path),
        "status": view.state.status,
    }


def test_a_failure_ending_of_the_child_routes_the_parent(graphs: Path) -> None:
    trace = simulate(graphs, {"worker": [reply("stuck", why="no repro")]}, {"task": "t"})
    assert trace.state == "failed" and trace.ending == "gave-up"
    assert trace.final == "Child: Stuck: no repro"
    assert simulate_child_view(trace)["status"] == "failed"  # the child reached its failure


def test_a_suspended_child_suspends_the_parent_and_resume_continues_the_same_child(
    graphs: Path,
) -> None:
    trace = simulate(graphs, {"worker": [reply("$SUSPEND", reason="need a key")]}, {"task": "t"})
    assert trace.state == "suspended" and "need a key" in (trace.reason or "")
    assert simulate_child_view(trace)["status"] == "suspended"
    trace = resume(
        trace,
        graphs,
        {"worker": [reply("fixed", summary="s")], "report": [reply(note="n")]},
        message="the key is in the vault",
    )
    assert trace.state == "completed", trace.reason
    child = Session(trace.store).view(f"{trace.thread_id}.1")
    assert [s.role for s in child.committed] == ["worker"]
    assert "the key is in the vault" in child.committed[0].prompt  # the message went down


def test_the_childs_steps_count_against_the_parents_max_steps(graphs: Path) -> None:
    looping = [reply("ask")] * 10
    answers = [reply(answer="x")] * 10
    trace = simulate(graphs, {"worker": looping, "person": answers}, {"task": "t"})
    assert trace.state == "suspended" and "max_steps" in (trace.reason or "")
    assert Session(trace.store).state(f"{trace.thread_id}.1").committed == 6


def test_a_person_in_the_child_makes_the_parent_wait_and_the_answer_goes_through(
    graphs: Path, tmp_path: Path
) -> None:
    graph = load_graph(graphs)
    session = Session(MemoryStore())
    scripted = ScriptedActor(
        {"worker": [reply("ask"), reply("fixed", summary="done it")], "report": [reply(note="n")]}
    )
    human = HumanActor(interactive=False)

    def actor_for(name: str, role: Any) -> Any:
        return human if role.actor == "human" else scripted

    tid = session.start(graph, {"task": "t"}, folder=tmp_path).thread_id
    result = asyncio.run(session.advance(graph, tid, actor_for=actor_for, options=RunOptions()))
    assert result.state == "waiting"
    question = session.question(tid, graph)
    assert question is not None and question.role_name == "person"
    assert session.check_answer(graph, tid, reply(answer=3)) != ()  # wrong type: refused
    result = asyncio.run(
        session.answer(graph, tid, reply(answer="use the cache"), actor_for=actor_for)
    )
    assert result.state == "completed", result.reason
    child = session.view(f"{tid}.1")
    assert [s.role for s in child.committed] == ["worker", "person", "worker"]
    assert scripted.requests[-2].prompt == "The person says: use the cache"


def test_cancelling_the_parent_cancels_its_waiting_child(graphs: Path, tmp_path: Path) -> None:
    graph = load_graph(graphs)
    session = Session(MemoryStore())
    scripted = ScriptedActor({"worker": [reply("ask")]})
    human = HumanActor(interactive=False)
    tid = session.start(graph, {"task": "t"}, folder=tmp_path).thread_id
    asyncio.run(
        session.advance(
            graph, tid, actor_for=lambda n, r: human if r.actor == "human" else scripted
        )
    )
    session.cancel(tid)
    assert session.thread(f"{tid}.1").state == "cancelled"
    assert session.thread(tid).state == "cancelled"


def test_unknown_graph_and_graph_cycle_are_reported_at_the_role(tmp_path: Path) -> None:
    from orchestrator.definition.problems import GraphError

    (tmp_path / "a.yaml").write_text(PARENT.replace("graph: child", "graph: nowhere"))
    with pytest.raises(GraphError) as err:
        load_graph(tmp_path / "a.yaml")
    (p,) = err.value.problems
    assert p.code == "unknown-graph" and p.line == 7
    (tmp_path / "child.yaml").write_text(
        CHILD.replace(
            "  person:\n    description: answers",
            "  again:\n    description: d\n"
            "    graph: parent.yaml\n  person:\n    description: answers",
        )
    )
    (tmp_path / "parent.yaml").write_text(PARENT)
    with pytest.raises(GraphError) as err:
        load_graph(tmp_path / "parent.yaml")
    assert [p.code for p in err.value.problems] == ["graph-cycle"]
    assert err.value.problems[0].file.endswith("child.yaml")


def test_threads_show_tells_the_childs_steps_under_its_step(graphs: Path, tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    from orchestrator.store.sqlite import SqliteStore

    store_dir = tmp_path / "store"
    session = Session(SqliteStore(store_dir))
    graph = load_graph(graphs)
    scripted = ScriptedActor(
        {"worker": [reply("fixed", summary="null check")], "report": [reply(note="ok")]}
    )
    tid = session.start(graph, {"task": "t"}, folder=tmp_path).thread_id
    asyncio.run(session.advance(graph, tid, actor_for=lambda n, r: scripted))
    session.store.close()

    def show(*args: str) -> str:
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "orchestrator",
                "threads",
                "show",
                tid,
                "--store",
                str(store_dir),
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        return out.stdout

    text = show()
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("#1   fix → done"))
    assert lines[at + 2].strip() == f"↳ {tid}.1 · child · completed"
    assert lines[at + 3].strip().startswith("#1   worker → fixed")
    data = json.loads(show("--json"))
    child = data["steps"][0]["child"]
    assert child["thread"] == f"{tid}.1" and child["steps"][0]["role"] == "worker"


def test_inputs_the_child_refuses_suspend_the_parent_naming_them(graphs: Path) -> None:
    graphs.write_text(PARENT.replace('inputs: { issue: "{{{$inputs.task}}}" }', 'prompt: "x"'))
    trace = simulate(graphs, {}, {"task": "t"})
    assert trace.state == "suspended"
    assert "the inputs of graph 'child'" in (trace.reason or "")
    assert "issue" in (trace.reason or "")


def test_the_thread_page_links_a_subgraph_step_to_its_child(graphs: Path) -> None:
    from orchestrator.web.thread_page import _timeline

    trace = simulate(
        graphs,
        {"worker": [reply("fixed", summary="s")], "report": [reply(note="n")]},
        {"task": "t"},
    )
    session = Session(trace.store)
    html = _timeline(session.view(trace.thread_id), session.allowed(trace.thread_id))
    assert f'<a href="/threads/{trace.thread_id}.1">' in html


def test_temporal_takes_a_graph_with_a_subgraph_role(graphs: Path) -> None:
    """Subgraph roles run on Temporal as child workflows (tests/test_temporal_subgraphs.py);
    the preflight, which refused them before, takes the graph."""
    from orchestrator.temporal.session import TemporalSession

    session = TemporalSession("127.0.0.1:1")  # never reached: the preflight is local
    assert session.preflight(load_graph(graphs), workspace=graphs.parent, replay=False)


def test_python_actors_in_parent_and_child_need_no_api_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subgraph role is played by its child thread: with every role of both graphs a Python
    actor, `run_thread` asks for no Anthropic key (it did, from the role's `actor` default)."""
    folder = tmp_path / "graphs"
    folder.mkdir()
    (folder / "steps.py").write_text(
        "def child(call):\n    return {'$status': 'done', 'note': 'from the child'}\n\n"
        "def parent(call):\n    return {'$status': 'go'}\n"
    )
    (folder / "inner.yaml").write_text(
        textwrap.dedent(
            """
            name: inner
            description: the child
            roles:
              c:
                description: c
                goal: g
                actor: {python: "steps:child"}
                frontmatter:
                  type: object
                  properties: {$status: {const: done}, note: {type: string}}
                  required: [$status, note]
            graph:
              $START: {_: {role: c, prompt: "{{{$inputs.task}}}"}}
              c: {done: {role: $END, prompt: "{{{note}}}"}}
            """
        )
    )
    outer = folder / "outer.yaml"
    outer.write_text(
        textwrap.dedent(
            """
            name: outer
            description: the parent
            roles:
              p:
                description: p
                goal: g
                actor: {python: "steps:parent"}
                frontmatter: {type: object, properties: {$status: {const: go}}, required: [$status]}
              sub: {description: runs inner, graph: inner}
            graph:
              $START: {_: {role: p, prompt: "{{{$inputs.task}}}"}}
              p: {go: {role: sub, prompt: "child task"}}
              sub: {done: {role: $END, prompt: "{{{$body}}}"}}
            """
        )
    )
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    result = run_thread(outer, {"task": "t"}, store=tmp_path / "store", workspace=tmp_path)
    assert result.state == "completed", result.reason
    assert result.final == "from the child"
