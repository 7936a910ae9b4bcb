"""`core/allowed.py`: what may be done to a thread is the moderator's judge's answer.

Threads are simulated (the real engine on an in-memory store); their logs are folded to the
state the faces read, and what `allowed()` says of resume and cancel is compared with what the
judge does.
"""

from __future__ import annotations

from collections.abc import Callable

from orchestrator.core.allowed import Verdict, allowed
from orchestrator.core.engine import judge
from orchestrator.core.events import ThreadCancelled
from orchestrator.core.fold import apply, fold
from orchestrator.core.outcomes import Refused, ResumeRequested
from orchestrator.core.state import ThreadState
from orchestrator.definition.models import Graph
from orchestrator.testing import reply, simulate
from tests.graphs_for_tests import REVIEW_LOOP

MakeGraph = Callable[..., Graph]
RESUME_EDGE = '    resume: { role: writer, prompt: "Continue: {{{$inputs.message}}}" }\n'


def state_of(graph: Graph, replies: list[object]) -> ThreadState:
    trace = simulate(graph, replies, inputs={"topic": "owls"})  # type: ignore[arg-type]
    return fold([s.event for s in trace.store.events(trace.thread_id)])


def judged(graph: Graph, state: ThreadState, message: str | None) -> bool:
    try:
        judge(graph, state, ResumeRequested(message))
    except Refused:
        return False
    return True


def test_a_completed_thread_resumes_with_the_message_its_resume_edge_reads(
    make_graph: MakeGraph,
) -> None:
    graph = make_graph(REVIEW_LOOP)
    state = state_of(graph, [reply("stuck", question="what?")])
    assert str(state.status) == "completed"
    verdict = allowed(graph, state).resume
    assert verdict.ok and verdict.needs_message
    assert "--message" in verdict.why
    assert judged(graph, state, "go on") and not judged(graph, state, None)
    assert not allowed(graph, state).cancel.ok


def test_a_resume_edge_testing_its_message_needs_none(make_graph: MakeGraph) -> None:
    optional = RESUME_EDGE.replace(
        '"Continue: {{{$inputs.message}}}"',
        '"Continue{{#$inputs.message}}: {{{$inputs.message}}}{{/$inputs.message}}"',
    )
    graph = make_graph(REVIEW_LOOP.replace(RESUME_EDGE, optional))
    state = state_of(graph, [reply("stuck", question="what?")])
    assert allowed(graph, state).resume == Verdict(True)


def test_a_completed_thread_without_a_resume_edge_cannot_resume(make_graph: MakeGraph) -> None:
    assert RESUME_EDGE in REVIEW_LOOP
    graph = make_graph(REVIEW_LOOP.replace(RESUME_EDGE, ""))
    state = state_of(graph, [reply("stuck", question="what?")])
    verdict = allowed(graph, state).resume
    assert not verdict.ok and not verdict.needs_message and "`$START.resume`" in verdict.why
    assert not judged(graph, state, "go on")


def test_a_suspended_thread_resumes_and_cancels_a_cancelled_one_neither(
    make_graph: MakeGraph,
) -> None:
    graph = make_graph(REVIEW_LOOP)
    state = state_of(graph, [])  # the scripted replies run out: suspended
    assert str(state.status) == "suspended"
    assert allowed(graph, state).resume == Verdict(True)
    assert allowed(graph, state).cancel.ok
    assert not allowed(None, state).resume.ok  # no graph, no judge: nothing offered

    cancelled = apply(state, ThreadCancelled("enough"))
    assert not allowed(graph, cancelled).resume.ok
    refused = allowed(graph, cancelled).cancel
    assert not refused.ok and "already cancelled" in refused.why
