"""A thread continued after its ending (`threads resume --message` through `$START.resume`):
its recording marks where it was resumed, and replays as it ran (docs/testing.md section 5)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from orchestrator.recording import Recording, parse_recording, recording_from_events
from orchestrator.replay import coverage, replay_recording
from orchestrator.spec.models import Graph
from orchestrator.testing import reply, resume, simulate
from tests.graphs_for_tests import REVIEW_LOOP

MakeGraph = Callable[..., Graph]

FIRST = [reply("drafted", draft="v1"), reply("approved", comments="good")]
AFTER = [reply("drafted", draft="v2"), reply("approved", comments="better")]


def exported(graph: Graph) -> Recording:
    """Run, complete, resume with a message, complete again; export and read back the file."""
    trace = simulate(graph, FIRST, inputs={"topic": "owls"})
    assert trace.state == "completed"
    trace = resume(trace, graph, AFTER, message="add a summary")
    assert trace.state == "completed" and len(trace.steps) == 4
    events = [s.event for s in trace.store.events(trace.thread_id)]
    text = recording_from_events(events).dump()
    return parse_recording(__import__("yaml").safe_load(text), "resumed.yaml")


@pytest.fixture
def loop(make_graph: MakeGraph) -> Graph:
    return make_graph(REVIEW_LOOP)


def test_a_thread_resumed_after_its_ending_replays_as_it_ran(loop: Graph) -> None:
    recording = exported(loop)
    assert [(r.after, r.ending, r.message) for r in recording.resumed] == [
        (2, "done", "add a summary")
    ]
    report = replay_recording(loop, recording)
    assert report.same_route, report.describe()
    assert report.path == ["writer", "reviewer", "writer", "reviewer", "$END"]
    assert report.trace.prompts[2] == "Continue: add a summary"  # through $START.resume


def test_the_export_says_where_it_was_resumed(loop: Graph) -> None:
    trace = simulate(loop, FIRST, inputs={"topic": "owls"})
    trace = resume(trace, loop, AFTER, message="add a summary")
    text = recording_from_events([s.event for s in trace.store.events(trace.thread_id)]).dump()
    assert "resumed:\n- after: 2\n  ending: done\n  message: add a summary\n" in text
    plain = simulate(loop, FIRST, inputs={"topic": "owls"})
    events = [s.event for s in plain.store.events(plain.thread_id)]
    assert "resumed" not in recording_from_events(events).dump()  # nothing new when not resumed


def test_a_graph_that_no_longer_ends_there_diverges(make_graph: MakeGraph, loop: Graph) -> None:
    recording = exported(loop)
    # approved now goes back to the writer: the recorded thread's first ending is gone
    changed = make_graph(
        REVIEW_LOOP.replace(
            'approved: { role: $END, prompt: "Approved',
            'approved: { role: writer, prompt: "Again',
        )
    )
    d = replay_recording(changed, recording).divergence
    assert d is not None
    assert (d.kind, d.step, d.recorded_role, d.graph_role) == ("continues", 3, "$END", "writer")
    assert "was resumed" in d.message


def test_a_changed_first_ending_diverges(make_graph: MakeGraph, loop: Graph) -> None:
    recording = exported(loop)
    changed = make_graph(
        REVIEW_LOOP.replace(
            'approved: { role: $END, prompt: "Approved',
            'approved: { role: $END, ending: shipped, prompt: "Approved',
        )
    )
    d = replay_recording(changed, recording).divergence
    assert d is not None and (d.kind, d.step) == ("ending", 3), d
    assert "'done'" in d.message and "'shipped'" in d.message


def test_coverage_counts_the_resume_edge(loop: Graph) -> None:
    report = coverage(loop, [exported(loop)])
    taken = {(e.source, e.status, e.target): e.recordings for e in report.edges}
    assert taken[("$START", "resume", "writer")] == 1
