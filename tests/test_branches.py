"""Parallel branches and for_each with join (docs/format.md section 15), through the real
engine, runner and session."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.actors.base import ActReply, ActRequest
from orchestrator.actors.human import HumanActor
from orchestrator.actors.scripted import ScriptedActor
from orchestrator.core.events import BranchesStarted, StepCommitted, StepStarted
from orchestrator.definition.loader import load_graph
from orchestrator.run.session import Session
from orchestrator.store.memory import MemoryStore
from orchestrator.testing import reply, resume, simulate

GRAPH = """\
name: fan
description: fans out
limits: { max_parallel: 4 }
roles:
  planner:
    description: plans
    goal: You plan.
    frontmatter:
      oneOf:
        - properties: { $status: { const: ready }, plan: { type: string } }
          required: [$status, plan]
        - properties:
            $status: { const: split }
            tasks: { type: array, items: { type: object } }
          required: [$status, tasks]
  front:
    description: f
    goal: g
    frontmatter: { properties: { summary: { type: string } }, required: [summary] }
  back:
    description: b
    goal: g
    frontmatter: { properties: { summary: { type: string } }, required: [summary] }
  worker:
    description: w
    goal: g
    frontmatter: { properties: { done: { type: string } }, required: [done] }
  integrator:
    description: i
    goal: g
    frontmatter: { properties: { verdict: { type: string } }, required: [verdict] }
graph:
  $START:
    _: { role: planner, prompt: "Plan {{{$inputs.task}}}" }
  planner:
    ready:
      parallel:
        - { role: front, prompt: "Front for {{{plan}}}" }
        - { role: back, prompt: "Back for {{{plan}}}" }
      join:
        role: integrator
        prompt: "{{{plan}}}: {{{$steps.front.summary}}} + {{{$steps.back.summary}}} {{{$branches}}}"
    split:
      for_each: tasks
      as: task
      role: worker
      prompt: "Do {{{task.title}}}"
      join: { role: $END, prompt: "Done:{{#$branches}}[{{{done}}}]{{/$branches}}" }
  integrator:
    _: { role: $END, prompt: "Verdict: {{{verdict}}}" }
"""


@pytest.fixture
def graph_file(tmp_path: Path) -> Path:
    path = tmp_path / "fan.yaml"
    path.write_text(GRAPH)
    return path


def test_parallel_branches_join_with_their_outputs_in_branch_order(graph_file: Path) -> None:
    trace = simulate(
        graph_file,
        {
            "planner": [reply("ready", plan="P")],
            "front": [reply(summary="page")],
            "back": [reply(summary="api")],
            "integrator": [reply(verdict="fine")],
        },
    )
    assert trace.state == "completed" and trace.final == "Verdict: fine"
    by_role = {s.role: s for s in trace.steps}
    assert (by_role["front"].step, by_role["back"].step, by_role["integrator"].step) == (2, 3, 4)
    assert (by_role["front"].branch, by_role["back"].branch) == (0, 1)
    assert by_role["front"].prompt == "Front for P" and by_role["integrator"].join
    joined = by_role["integrator"].prompt
    assert joined.startswith("P: page + api ")
    branches = json.loads(joined[len("P: page + api ") :])
    assert branches == [
        {"role": "front", "status": "_", "$body": "", "summary": "page"},
        {"role": "back", "status": "_", "$body": "", "summary": "api"},
    ]


@pytest.mark.parametrize("count", [3, 0])
def test_for_each_runs_one_branch_per_item_and_none_goes_straight_to_the_join(
    graph_file: Path, count: int
) -> None:
    tasks = [{"title": f"t{i}"} for i in range(count)]
    trace = simulate(
        graph_file,
        {
            "planner": [reply("split", tasks=tasks)],
            "worker": [reply(done=str(i)) for i in range(count)],
        },
    )
    assert trace.state == "completed"
    assert [s.prompt for s in trace.steps[1:]] == [f"Do t{i}" for i in range(count)]
    assert trace.final == "Done:" + "".join(f"[{i}]" for i in range(count))


def test_branches_run_at_the_same_time_and_branches_keeps_branch_order(
    graph_file: Path, tmp_path: Path
) -> None:
    """`front` only finishes once `back` has: run one after the other, this would time out."""
    back_done = asyncio.Event()
    scripted = ScriptedActor(
        {"planner": [reply("ready", plan="P")], "integrator": [reply(verdict="v")]}
    )

    class Racing:
        kind = "racing"

        async def play(self, request: ActRequest) -> ActReply:
            if request.role_name == "back":
                back_done.set()
                return ActReply(text=reply(summary="api"))
            await asyncio.wait_for(back_done.wait(), timeout=10)
            return ActReply(text=reply(summary="page"))

    racing = Racing()
    graph = load_graph(graph_file)
    session = Session(MemoryStore())
    tid = session.start(graph, {"task": "t"}, folder=tmp_path).thread_id
    result = asyncio.run(
        session.advance(
            graph, tid, actor_for=lambda n, r: racing if n in ("front", "back") else scripted
        )
    )
    assert result.state == "completed", result.reason
    events = [s.event for s in session.events(tid)]
    committed = [e.role for e in events if isinstance(e, StepCommitted)]
    assert committed == ["planner", "back", "front", "integrator"]
    assert "page + api" in session.view(tid).committed[-1].prompt  # branch order, not commits


def test_max_parallel_bounds_the_branches_in_flight(graph_file: Path, tmp_path: Path) -> None:
    graph_file.write_text(GRAPH.replace("max_parallel: 4", "max_parallel: 2"))
    graph = load_graph(graph_file)
    in_flight, most = 0, 0

    class Counting:
        kind = "counting"

        async def play(self, request: ActRequest) -> ActReply:
            nonlocal in_flight, most
            if request.role_name == "planner":
                return ActReply(text=reply("split", tasks=[{"title": str(i)} for i in range(5)]))
            in_flight += 1
            most = max(most, in_flight)
            await asyncio.sleep(0.01)
            in_flight -= 1
            return ActReply(text=reply(done=request.prompt))

    session = Session(MemoryStore())
    tid = session.start(graph, {"task": "t"}, folder=tmp_path).thread_id
    result = asyncio.run(session.advance(graph, tid, actor_for=lambda n, r: Counting()))
    assert result.state == "completed" and result.final == "Done:[Do 0][Do 1][Do 2][Do 3][Do 4]"
    assert most == 2


def test_a_failing_branch_suspends_once_the_others_end_and_resume_runs_only_it(
    graph_file: Path,
) -> None:
    trace = simulate(
        graph_file,
        {
            "planner": [reply("split", tasks=[{"title": "a"}, {"title": "b"}, {"title": "c"}])],
            "worker": [reply(done="1"), reply("$SUSPEND", reason="no disk"), reply(done="3")],
        },
    )
    assert trace.state == "suspended"
    assert trace.reason is not None and trace.reason.startswith("branch 2 of 3:")
    assert "no disk" in trace.reason
    assert sorted(s.step for s in trace.steps if s.committed) == [1, 2, 4]
    trace = resume(trace, graph_file, {"worker": [reply(done="2")]})
    assert trace.state == "completed" and trace.final == "Done:[1][2][3]"
    events = [s.event for s in trace.store.events(trace.thread_id)]
    started = [e.step for e in events if isinstance(e, StepStarted)]
    assert started.count(3) == 2 and started.count(2) == 1 and started.count(4) == 1
    assert sum(isinstance(e, BranchesStarted) for e in events) == 1


def test_for_each_over_something_not_a_list_suspends_naming_the_edge(graph_file: Path) -> None:
    graph_file.write_text(GRAPH.replace("for_each: tasks", "for_each: $inputs.task"))
    trace = simulate(graph_file, {"planner": [reply("split", tasks=[])]})
    assert trace.state == "suspended"
    assert "edge planner --split--> worker" in (trace.reason or "")
    assert "is not a list (it is str)" in (trace.reason or "")


def test_a_fan_out_over_max_steps_suspends_before_any_branch(graph_file: Path) -> None:
    tasks = [{"title": str(i)} for i in range(5)]
    trace = simulate(graph_file, {"planner": [reply("split", tasks=tasks)]}, max_steps=4)
    assert trace.state == "suspended" and "max_steps" in (trace.reason or "")
    assert len(trace.steps) == 1


def test_a_branch_waiting_for_a_person_lets_the_others_finish_then_the_thread_waits(
    graph_file: Path, tmp_path: Path
) -> None:
    graph_file.write_text(
        GRAPH.replace(
            "  back:\n    description: b\n    goal: g\n",
            "  back:\n    description: b\n    goal: g\n    actor: human\n",
        )
    )
    graph = load_graph(graph_file)
    session = Session(MemoryStore())
    scripted = ScriptedActor(
        {
            "planner": [reply("ready", plan="P")],
            "front": [reply(summary="page")],
            "integrator": [reply(verdict="v")],
        }
    )
    human = HumanActor(interactive=False)

    def actor_for(name: str, role: Any) -> Any:
        return human if role.actor == "human" else scripted

    tid = session.start(graph, {"task": "t"}, folder=tmp_path).thread_id
    result = asyncio.run(session.advance(graph, tid, actor_for=actor_for))
    assert result.state == "waiting"
    assert [s.role for s in session.view(tid).committed] == ["planner", "front"]
    question = session.question(tid, graph)
    assert question is not None and (question.role_name, question.step) == ("back", 3)
    result = asyncio.run(session.answer(graph, tid, reply(summary="api"), actor_for=actor_for))
    assert result.state == "completed", result.reason
    assert "page + api" in session.view(tid).committed[-1].prompt


def test_a_graph_snapshot_with_fan_outs_reads_back_as_the_same_graph(graph_file: Path) -> None:
    """The store (and Temporal) keep a thread's graph as a snapshot; `as` must survive it."""
    from orchestrator.definition.models import Graph

    graph = load_graph(graph_file)
    again = Graph.model_validate(graph.model_dump(mode="json"))
    assert again.hash == graph.hash
    assert again.edge("planner", "split").item_name == "task"  # type: ignore[union-attr]
