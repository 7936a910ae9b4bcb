"""What crosses Temporal survives the trip as JSON: outcomes, step plans, events, the graph.

No server and no temporalio needed: orchestrator/temporal/codec.py is plain Python.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from orchestrator.core import engine
from orchestrator.core.commands import RunStep
from orchestrator.core.events import Event, StepCommitted, SuspendKind, ThreadStarted
from orchestrator.core.outcomes import (
    ActorFailed,
    Answered,
    CancelRequested,
    Interrupted,
    NeedsPerson,
    Replied,
    ResumeRequested,
)
from orchestrator.definition.models import Graph
from orchestrator.run.memory import SessionMemory
from orchestrator.run.step import plan_step
from orchestrator.temporal.codec import (
    graph_from_snapshot,
    outcome_from_dict,
    outcome_to_dict,
    plan_from_dict,
    plan_to_dict,
    stored_from_dict,
    stored_to_dict,
)

LOOP = """
name: loop
description: A worker that loops, remembering its visits.
roles:
  worker:
    description: Works in rounds
    goal: You work.
    frontmatter:
      type: object
      properties:
        $status: { enum: [again, done] }
        note: { type: string }
      required: [$status, note]
graph:
  $START:
    _: { role: worker, prompt: "Start {{{$inputs.task}}}", location: sub }
  worker:
    again: { role: worker, prompt: "Round after {{{note}}}" }
    done: { role: $END, prompt: "Finished: {{{note}}}" }
"""


def trip(data: Any) -> Any:
    return json.loads(json.dumps(data))


def test_every_outcome_comes_back_as_it_went() -> None:
    outcomes = [
        Replied(3, "---\n$status: done\n---\n", message="m", usage={"input_tokens": 5},
                cost_usd=0.5, model="m1", tool_calls=2, duration_s=1.5, actor="anthropic"),
        ActorFailed(2, "down", SuspendKind.PROVIDER, usage={"output_tokens": 1}, cost_usd=0.1),
        NeedsPerson(4),
        Answered("---\n$status: yes\n---\n"),
        Interrupted(),
        CancelRequested("enough"),
        ResumeRequested("go on"),
    ]  # fmt: skip
    for outcome in outcomes:
        back = outcome_from_dict(trip(outcome_to_dict(outcome)))
        assert back == outcome
    assert isinstance(outcome_from_dict(trip(outcome_to_dict(outcomes[1]))).kind, SuspendKind)


def test_a_plan_comes_back_whole(make_graph: Callable[..., Graph]) -> None:
    graph = make_graph(LOOP)
    state = engine.fold([ThreadStarted("T1", graph.name, graph.hash, {"task": "x"}, "/w")])
    memory = SessionMemory(graph)  # fed what the state is, as the runner and workflow do

    def apply(event: Event) -> None:
        engine.apply(state, event)
        memory.observe(event)

    for n, note in enumerate(["one", "two"], 1):
        apply(engine.decide(graph, state).event)  # type: ignore[union-attr]
        apply(
            StepCommitted(n, "worker", "again", {"note": note}, "", f"reply {n}", message=f"m{n}")
        )
    apply(engine.decide(graph, state).event)  # type: ignore[union-attr]
    command = engine.decide(graph, state)
    assert isinstance(command, RunStep)
    command = RunStep(command.step, command.role, command.prompt, command.location,
                      (("bad reply", ("error one", "error two")),))  # fmt: skip
    plan = plan_step(graph, state, command, memory, model="haiku")
    assert plan.previous_visits and plan.attempts and plan.model == "haiku"
    assert plan_from_dict(trip(plan_to_dict(plan))) == plan


def test_events_and_the_graph_travel_as_json(make_graph: Callable[..., Graph]) -> None:
    graph = make_graph(LOOP)
    rebuilt = graph_from_snapshot(trip(graph.model_dump(mode="json")))
    assert rebuilt.hash == graph.hash
    assert rebuilt.roles["worker"].name == "worker"
    assert rebuilt.edge("$START", "_") == graph.edge("$START", "_")
    event = StepCommitted(1, "worker", "done", {"note": "n"}, "body", "reply", usage={"a": 1})
    stored = stored_from_dict(trip(stored_to_dict(7, 12.5, event)))
    assert (stored.seq, stored.at, stored.event) == (7, 12.5, event)
