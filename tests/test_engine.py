"""The moderator through simulate(): routing, templates, guards, $SUSPEND, repairs, resume.

Every scenario ends in a stated thread state; none raises.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from orchestrator.core import engine
from orchestrator.core.events import StepCommitted, ThreadStarted, event_from_dict
from orchestrator.definition.models import Graph
from orchestrator.testing import reply, resume, simulate
from tests.graphs_for_tests import REVIEW_LOOP

MakeGraph = Callable[..., Graph]


@pytest.fixture
def loop(make_graph: MakeGraph) -> Graph:
    return make_graph(REVIEW_LOOP)


def test_routes_by_status_to_end(loop: Graph) -> None:
    trace = simulate(
        loop,
        [
            reply("drafted", draft="v1"),
            reply("rejected", comments="too short"),
            reply("drafted", draft="v2", notes="longer"),
            reply("approved", comments="good", tags=["a", "b"]),
        ],
        inputs={"topic": "owls"},
    )
    assert trace.state == "completed"
    assert trace.path == ["writer", "reviewer", "writer", "reviewer", "$END"]
    assert trace.statuses == ["drafted", "rejected", "drafted", "approved"]
    assert trace.prompts[0] == f"Write about owls (thread {trace.thread_id})."
    assert trace.prompts[1] == "Review this draft: v1"  # optional notes absent: section skipped
    assert trace.prompts[2] == "Fix: too short. Your last draft: v1"
    assert trace.prompts[3] == "Review this draft: v2 (notes: longer)"
    # $steps reaches back to an earlier role; lists interpolate as JSON
    assert trace.final == 'Approved: v2 / good / ["a", "b"]'


def test_role_keyed_replies(loop: Graph) -> None:
    trace = simulate(
        loop,
        {"writer": [reply("drafted", draft="d")], "reviewer": [reply("approved", comments="ok")]},
        inputs={"topic": "t"},
    )
    assert trace.state == "completed"
    assert trace.path == ["writer", "reviewer", "$END"]


def test_body_and_single_exit(make_graph: MakeGraph) -> None:
    graph = make_graph(
        """
        name: single
        description: d
        roles:
          a:
            description: d
            goal: g
            frontmatter: { type: object, properties: { n: { type: integer } }, required: [n] }
        graph:
          $START: { _: { role: a, prompt: "Do {{{$inputs.task}}}" } }
          a: { _: { role: $END, prompt: "n={{{n}}} body={{{$body}}}" } }
        """
    )
    trace = simulate(graph, ["---\nn: 3\n---\nthe body\n"], inputs={"task": "it"})
    assert trace.state == "completed"
    assert trace.prompts == ["Do it"]
    assert trace.final == "n=3 body=the body"


def test_implicit_task_input_defaults_in_simulate(make_graph: MakeGraph) -> None:
    graph = make_graph(
        """
        name: implicit
        description: d
        roles:
          a: { description: d, goal: g, frontmatter: { type: object } }
        graph:
          $START: { _: { role: a, prompt: "{{{$inputs.task}}}" } }
          a: { _: { role: $END, prompt: "done" } }
        """
    )
    trace = simulate(graph, ["---\n{}\n---\n"])
    assert trace.state == "completed"
    assert trace.prompts == ["(simulated task)"]


def test_suspend_status_then_resume_with_message(loop: Graph) -> None:
    trace = simulate(
        loop, ["---\n$status: $SUSPEND\nreason: which owls?\n---\n"], inputs={"topic": "owls"}
    )
    assert trace.state == "suspended"
    assert "which owls?" in (trace.reason or "")
    assert trace.steps[0].status is None  # the step did not commit

    trace = resume(
        trace,
        loop,
        [reply("drafted", draft="barn owls"), reply("approved", comments="ok")],
        message="barn owls",
    )
    assert trace.state == "completed"
    # the suspended step ran again, its prompt carrying the message
    assert "barn owls" in trace.steps[0].prompt
    assert [s.status for s in trace.steps] == ["drafted", "approved"]


def test_repairs_then_success_records_attempts(loop: Graph) -> None:
    trace = simulate(
        loop,
        [
            "Sure! here it is, no frontmatter",
            reply("drafted", draft=5),  # wrong type
            reply("drafted", draft="ok"),
            reply("approved", comments="fine"),
        ],
        inputs={"topic": "t"},
    )
    assert trace.state == "completed"
    first = trace.steps[0]
    assert len(first.attempts) == 2
    assert any("draft" in e for e in first.attempts[1][1])


def test_repairs_exhausted_suspends_then_resume_retries(loop: Graph) -> None:
    # reviewer has max_repairs: 1 -> two invalid replies suspend
    trace = simulate(
        loop,
        [reply("drafted", draft="d"), reply("approve", comments="x"), reply("nope")],
        inputs={"topic": "t"},
    )
    assert trace.state == "suspended"
    assert "max_repairs is 1" in (trace.reason or "")
    assert len(trace.steps[1].attempts) == 2
    trace = resume(trace, loop, [reply("approved", comments="now valid")])
    assert trace.state == "completed"
    assert trace.statuses == ["drafted", "approved"]


def test_max_steps_guard_and_resume_grants_anew(loop: Graph) -> None:
    replies = [reply("drafted", draft="d"), reply("rejected", comments="again")] * 2
    trace = simulate(loop, replies, inputs={"topic": "t"}, max_steps=3)
    assert trace.state == "suspended"
    assert "max_steps (3)" in (trace.reason or "")
    assert len(trace.statuses) == 3
    trace = resume(
        trace,
        loop,
        [
            reply("rejected", comments="x"),
            reply("drafted", draft="e"),
            reply("approved", comments="ok"),
        ],
        max_steps=3,
    )
    assert trace.state == "completed"


def test_max_visits_guard(loop: Graph) -> None:
    replies = [reply("drafted", draft="d"), reply("rejected", comments="again")] * 5
    trace = simulate(loop, replies, inputs={"topic": "t"})
    assert trace.state == "suspended"
    assert "max_visits (4)" in (trace.reason or "") and "'writer'" in (trace.reason or "")
    assert trace.path.count("writer") == 4


def test_max_cost_guard(make_graph: MakeGraph) -> None:
    from orchestrator import run_thread
    from orchestrator.actors.base import ActReply, ActRequest

    graph = make_graph(
        """
        name: costly
        description: d
        limits: { max_cost_usd: 0.05 }
        roles:
          a:
            description: d
            goal: g
            frontmatter: { type: object, properties: { $status: { enum: [again, done] } } }
        graph:
          $START: { _: { role: a, prompt: "go" } }
          a:
            again: { role: a, prompt: "again" }
            done: { role: $END, prompt: "done" }
        """
    )

    class Pricey:
        async def play(self, request: ActRequest) -> ActReply:
            return ActReply(text="---\n$status: again\n---\n", cost_usd=0.02)

    result = run_thread(graph, {"task": "t"}, actor_for=lambda n, r: Pricey())
    assert result.state == "suspended"
    assert "max_cost_usd" in (result.reason or "")
    assert result.steps == 3  # 0.06 >= 0.05 is noticed before the fourth step


def test_template_failure_suspends_with_edge_and_variable(make_graph: MakeGraph) -> None:
    graph = make_graph(
        """
        name: badvar
        description: d
        roles:
          a:
            description: d
            goal: g
            frontmatter:
              type: object
              properties: { $status: { const: ok }, x: { type: string } }
        graph:
          $START: { _: { role: a, prompt: "go" } }
          a: { ok: { role: $END, prompt: "value {{{y}}}" } }
        """
    )
    trace = simulate(graph, [reply("ok", x="1")])
    assert trace.state == "suspended"
    assert "edge a --ok--> $END" in (trace.reason or "")
    assert "'y'" in (trace.reason or "")


def test_empty_prompt_suspends(make_graph: MakeGraph) -> None:
    graph = make_graph(
        """
        name: emptyp
        description: d
        roles:
          a:
            description: d
            goal: g
            frontmatter: { type: object, properties: { $status: { const: ok }, x: { type: string } } }
        graph:
          $START: { _: { role: a, prompt: "go" } }
          a: { ok: { role: a, prompt: "{{{x}}}" } }
        """
    )
    trace = simulate(graph, [reply("ok")])
    assert trace.state == "suspended"
    assert "rendered empty" in (trace.reason or "")


def test_scripted_replies_running_out_suspends(loop: Graph) -> None:
    trace = simulate(loop, [reply("drafted", draft="d")], inputs={"topic": "t"})
    assert trace.state == "suspended"
    assert "no scripted reply left" in (trace.reason or "")


def test_completed_thread_resumes_through_start_resume(loop: Graph) -> None:
    trace = simulate(loop, [reply("stuck", question="what?")], inputs={"topic": "t"})
    assert trace.state == "completed" and trace.final == "Stopped: what?"
    trace = resume(
        trace,
        loop,
        [reply("drafted", draft="d"), reply("approved", comments="ok")],
        message="keep going",
    )
    assert trace.state == "completed"
    assert trace.steps[1].prompt == "Continue: keep going"
    assert trace.path == ["writer", "writer", "reviewer", "$END"]


def test_missing_edge_for_status_suspends(make_graph: MakeGraph) -> None:
    # lint would flag this graph; at run time it must still end in a clear state
    graph = make_graph(
        """
        name: noedge
        description: d
        roles:
          a:
            description: d
            goal: g
            frontmatter: { type: object, properties: { $status: { enum: [x, y] } } }
        graph:
          $START: { _: { role: a, prompt: "go" } }
          a: { x: { role: $END, prompt: "done" } }
        """
    )
    trace = simulate(graph, [reply("y")])
    assert trace.state == "suspended"
    assert "no edge" in (trace.reason or "")


def test_thread_step_and_workspace_variables(make_graph: MakeGraph, tmp_path) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph(
        """
        name: threadvars
        description: d
        roles:
          a: { description: d, goal: g, frontmatter: { type: object } }
        graph:
          $START: { _: { role: a, prompt: "step {{{$thread.step}}} in {{{$thread.workspace}}}" } }
          a: { _: { role: $END, prompt: "at {{{$thread.step}}}" } }
        """
    )
    trace = simulate(graph, ["---\n{}\n---\n"], workspace=tmp_path)
    assert trace.prompts == [f"step 1 in {tmp_path.resolve()}"]
    assert trace.final == "at 2"


def test_fold_is_deterministic_and_flat(loop: Graph) -> None:
    trace = simulate(
        loop, [reply("drafted", draft="d"), reply("approved", comments="c")], inputs={"topic": "t"}
    )
    events = [s.event for s in trace.store.events(trace.thread_id)]
    assert isinstance(events[0], ThreadStarted)
    a, b = engine.fold(events), engine.fold(events)
    assert a == b
    assert sum(isinstance(e, StepCommitted) for e in events) == 2
    # every event survives a round trip through its dict form (what the store writes)
    assert [event_from_dict(e.to_dict()) for e in events] == events


def test_optional_input_left_out_renders_through_sections(make_graph: MakeGraph) -> None:
    graph = make_graph(
        """
        name: optin
        description: d
        inputs:
          type: object
          properties: { issue: { type: string }, test_command: { type: string } }
          required: [issue]
        roles:
          a: { description: d, goal: g, frontmatter: { type: object } }
        graph:
          $START:
            _: { role: a, prompt: "Fix {{{$inputs.issue}}}{{#$inputs.test_command}} (run {{{$inputs.test_command}}}){{/$inputs.test_command}}" }
          a: { _: { role: $END, prompt: "done" } }
        """
    )
    without = simulate(graph, ["---\n{}\n---\n"], inputs={"issue": "bug"})
    assert without.prompts == ["Fix bug"]
    given = simulate(
        graph, ["---\n{}\n---\n"], inputs={"issue": "bug", "test_command": "make test"}
    )
    assert given.prompts == ["Fix bug (run make test)"]


def test_a_resume_message_survives_a_step_that_fails_again(loop: Graph) -> None:
    trace = simulate(loop, [], inputs={"topic": "t"})  # no reply: the first step fails
    trace = resume(trace, loop, [], message="USE BRITISH SPELLING")  # and fails again
    assert trace.state == "suspended"
    trace = resume(trace, loop, [reply("stuck", question="q")])
    assert trace.state == "completed"
    assert "USE BRITISH SPELLING" in trace.steps[0].prompt


def test_the_message_of_a_resume_from_an_ending_is_not_an_input(loop: Graph) -> None:
    from orchestrator.actors.recording import recording_from_events

    trace = simulate(loop, [reply("stuck", question="what?")], inputs={"topic": "t"})
    trace = resume(trace, loop, [reply("stuck", question="again?")], message="FIRST")
    assert trace.steps[1].prompt == "Continue: FIRST"
    events = [s.event for s in trace.store.events(trace.thread_id)]
    assert recording_from_events(events).inputs == {"topic": "t"}
