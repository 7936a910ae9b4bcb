"""Replay as a library: same route, every kind of first divergence, notes, and edge coverage.

Each test records a thread with `simulate()` (the real engine), changes the graph the way a
user would, and replays the recording through the changed graph.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.actors.recording import (
    RecordedAttempt,
    RecordedStep,
    Recording,
    recording_from_events,
)
from orchestrator.definition.models import Graph
from orchestrator.replay import coverage, edges_taken, replay_recording
from orchestrator.testing import Trace, reply, simulate
from tests.graphs_for_tests import REVIEW_LOOP

MakeGraph = Callable[..., Graph]

# writer drafts, reviewer rejects, writer (after one invalid reply) drafts again, reviewer approves
LOOP_REPLIES = [
    reply("drafted", draft="v1"),
    reply("rejected", comments="too short"),
    "Sure, here is the new draft (no frontmatter)",
    reply("drafted", draft="v2"),
    reply("approved", comments="good"),
]


def variant(old: str, new: str, text: str = REVIEW_LOOP) -> str:
    """The review loop with one change; fails loudly if the text to change is not there."""
    assert old in text, old
    return text.replace(old, new)


def record(trace: Trace) -> Recording:
    return recording_from_events([s.event for s in trace.store.events(trace.thread_id)])


@pytest.fixture
def loop(make_graph: MakeGraph) -> Graph:
    return make_graph(REVIEW_LOOP)


@pytest.fixture
def recorded(loop: Graph) -> Recording:
    trace = simulate(loop, LOOP_REPLIES, inputs={"topic": "owls"})
    assert trace.state == "completed"
    return record(trace)


def test_same_route_for_an_exported_thread(loop: Graph, recorded: Recording) -> None:
    report = replay_recording(loop, recorded)
    assert report.same_route
    assert report.divergence is None
    assert report.graph_hash == "same"
    assert report.notes == []
    assert report.replayed == 4
    assert report.path == ["writer", "reviewer", "writer", "reviewer", "$END"]
    assert report.statuses == ["drafted", "rejected", "drafted", "approved"]
    # the recorded rejected attempt was replayed and rejected again
    assert len(report.trace.steps[2].attempts) == 1
    assert report.trace.prompts[1] == "Review this draft: v1"
    assert report.describe().splitlines()[1] == (
        "  route: writer(drafted) → reviewer(rejected) → writer(drafted) → reviewer(approved) → $END"
    )


def test_route_changed_to_another_role(make_graph: MakeGraph, recorded: Recording) -> None:
    changed = make_graph(variant("rejected: { role: writer", "rejected: { role: reviewer"))
    report = replay_recording(changed, recorded)
    d = report.divergence
    assert d is not None and not report.same_route
    assert (d.kind, d.step, d.recorded_role, d.graph_role) == ("route", 3, "writer", "reviewer")
    assert d.edge == ("reviewer", "rejected", "reviewer")
    assert d.message == (
        "step 3: the recording holds 'writer', but the graph now routes to 'reviewer' "
        "(edge reviewer --rejected--> reviewer)"
    )
    assert report.replayed == 2
    assert report.graph_hash == "changed"
    assert "the graph changed since the recording was made (graph_hash differs)" in report.notes


def test_graph_reaches_end_earlier(make_graph: MakeGraph, recorded: Recording) -> None:
    changed = make_graph(variant("rejected: { role: writer", "rejected: { role: $END"))
    d = replay_recording(changed, recorded).divergence
    assert d is not None
    assert (d.kind, d.step, d.recorded_role, d.graph_role) == ("ended-early", 3, "writer", "$END")
    assert "now ends at $END (edge reviewer --rejected--> $END)" in d.message


def test_schema_requires_a_new_field(make_graph: MakeGraph, recorded: Recording) -> None:
    changed = make_graph(
        variant(
            "required: [$status, comments]",
            "required: [$status, comments, severity]",
            variant(
                "comments: { type: string }\n",
                "comments: { type: string }\n        severity: { type: string }\n",
            ),
        )
    )
    report = replay_recording(changed, recorded)
    d = report.divergence
    assert d is not None
    assert (d.kind, d.step, d.recorded_role, d.graph_role) == (
        "rejected",
        2,
        "reviewer",
        "reviewer",
    )
    assert d.errors and "severity" in d.errors[0]
    assert "the recorded reply is now rejected" in d.message
    text = report.describe()
    assert f"    - {d.errors[0]}" in text
    assert "replayed as recorded: writer(drafted)" in text


def test_graph_continues_past_a_completed_recording(make_graph: MakeGraph, loop: Graph) -> None:
    rec = record(simulate(loop, [reply("stuck", question="which owls?")], inputs={"topic": "o"}))
    assert rec.state == "completed"
    changed = make_graph(variant("stuck: { role: $END", "stuck: { role: reviewer"))
    d = replay_recording(changed, rec).divergence
    assert d is not None
    assert (d.kind, d.step, d.recorded_role, d.graph_role) == ("continues", 2, "$END", "reviewer")
    assert "state: suspended" in d.message  # how to write a recording that stops mid-thread


def test_recording_that_stops_mid_thread(make_graph: MakeGraph, loop: Graph) -> None:
    # The script runs out at step 3: the thread is suspended, two steps are committed.
    trace = simulate(loop, LOOP_REPLIES[:2], inputs={"topic": "owls"})
    assert trace.state == "suspended"
    rec = record(trace)
    assert rec.state == "suspended" and len(rec.steps) == 2

    report = replay_recording(loop, rec)
    assert report.same_route
    assert any("would continue with 'writer'" in note for note in report.notes)

    # ...but a graph that now ends where the recorded thread went on diverges.
    changed = make_graph(variant("rejected: { role: writer", "rejected: { role: $END"))
    d = replay_recording(changed, rec).divergence
    assert d is not None
    assert (d.kind, d.step, d.recorded_role, d.graph_role) == ("ended-early", 3, None, "$END")
    assert "did not end after step 2 (it was suspended)" in d.message


def test_recorded_status_without_an_edge(make_graph: MakeGraph, recorded: Recording) -> None:
    text = variant(
        '    rejected: { role: writer, prompt: "Fix: {{{comments}}}. Your last draft: {{{$steps.writer.draft}}}" }\n',
        "",
    )
    report = replay_recording(make_graph(text), recorded)
    d = report.divergence
    assert d is not None
    assert (d.kind, d.step, d.recorded_role, d.graph_role) == ("no-edge", 3, "writer", None)
    assert "status 'rejected', which no longer has an edge (edges of 'reviewer': approved)" in (
        d.message
    )


def test_template_failure(make_graph: MakeGraph, recorded: Recording) -> None:
    changed = make_graph(variant("Fix: {{{comments}}}", "Fix: {{{remarks}}}"))
    d = replay_recording(changed, recorded).divergence
    assert d is not None
    assert (d.kind, d.step, d.recorded_role, d.graph_role) == ("template", 3, "writer", "writer")
    assert "'remarks'" in d.message


def test_rejected_attempt_now_accepted(make_graph: MakeGraph, loop: Graph) -> None:
    rec = record(
        simulate(
            loop,
            [reply("drafted"), reply("drafted", draft="v1"), reply("approved", comments="ok")],
            inputs={"topic": "owls"},
        )
    )
    assert len(rec.steps[0].attempts) == 1  # the first reply lacked `draft`
    assert replay_recording(loop, rec).same_route
    looser = make_graph(variant("required: [$status, draft]", "required: [$status]"))
    d = replay_recording(looser, rec).divergence
    assert d is not None
    assert (d.kind, d.step, d.recorded_role) == ("attempt-accepted", 1, "writer")
    assert "rejected when recorded is now accepted" in d.message


def test_fewer_repairs_allowed_than_recorded(make_graph: MakeGraph, recorded: Recording) -> None:
    stricter = make_graph(variant("goal: You write.", "goal: You write.\n    max_repairs: 0"))
    d = replay_recording(stricter, recorded).divergence
    assert d is not None
    assert (d.kind, d.step, d.recorded_role) == ("repairs", 3, "writer")
    assert "max_repairs is now 0" in d.message
    assert d.errors and "no frontmatter" in d.errors[0]


def test_inputs_no_longer_valid(make_graph: MakeGraph, recorded: Recording) -> None:
    changed = make_graph(
        variant(
            "  required: [topic]",
            "    audience: { type: string }\n  required: [topic, audience]",
        )
    )
    report = replay_recording(changed, recorded)
    d = report.divergence
    assert d is not None
    assert (d.kind, d.step, d.recorded_role, d.graph_role) == ("inputs", 1, "writer", None)
    assert "audience" in d.message
    assert report.replayed == 0


def test_missing_graph_hash_is_replayed_and_noted(loop: Graph, recorded: Recording) -> None:
    bare = Recording(graph="", steps=recorded.steps, inputs=recorded.inputs)
    report = replay_recording(loop, bare)
    assert report.same_route
    assert report.graph_hash == "missing"
    assert report.notes == ["the recording has no graph_hash; replayed against the current graph"]


def test_other_graph_name_is_noted(loop: Graph, recorded: Recording) -> None:
    other = Recording(
        graph="old-name", steps=recorded.steps, inputs=recorded.inputs, graph_hash="sha256:0"
    )
    report = replay_recording(loop, other)
    assert report.same_route
    assert report.notes[0] == "the recording is of graph 'old-name', replayed through 'review-loop'"


def test_limit_reached_during_replay_is_noted_not_a_divergence(
    make_graph: MakeGraph, recorded: Recording
) -> None:
    tight = make_graph(variant("max_visits: 4", "max_visits: 1"))
    report = replay_recording(tight, recorded)
    assert report.same_route, report.describe()
    assert any("max_visits (1)" in n and "resumed past it" in n for n in report.notes)


def test_suspend_reply_ends_a_hand_written_recording(loop: Graph) -> None:
    steps = (
        RecordedStep("writer", reply("drafted", draft="v1")),
        RecordedStep("reviewer", reply("$SUSPEND", reason="is this about birds?")),
    )
    stopped = Recording(graph="review-loop", steps=steps, inputs={"topic": "o"}, state="suspended")
    report = replay_recording(loop, stopped)
    assert report.same_route, report.describe()
    assert report.trace.state == "suspended"

    claims_end = Recording(graph="review-loop", steps=steps, inputs={"topic": "o"})
    d = replay_recording(loop, claims_end).divergence
    assert d is not None and (d.kind, d.step) == ("suspended", 2)


def test_replay_runs_in_a_throwaway_workspace(
    make_graph: MakeGraph, loop: Graph, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    located = make_graph(
        variant(
            'drafted: { role: reviewer, prompt: "',
            'drafted: { role: reviewer, location: "rev", prompt: "',
        )
    )
    rec = record(
        simulate(
            loop,
            [reply("drafted", draft="d"), reply("approved", comments="ok")],
            inputs={"topic": "t"},
        )
    )
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    assert replay_recording(located, rec).same_route
    assert list(work.iterdir()) == []  # `location: rev` was created elsewhere


def test_report_to_dict(make_graph: MakeGraph, recorded: Recording) -> None:
    changed = make_graph(variant("rejected: { role: writer", "rejected: { role: reviewer"))
    data = replay_recording(changed, recorded).to_dict()
    assert data["same_route"] is False
    assert data["steps"] == 4 and data["replayed"] == 2
    assert data["divergence"] == {
        "kind": "route",
        "step": 3,
        "recorded_role": "writer",
        "graph_role": "reviewer",
        "edge": {"source": "reviewer", "status": "rejected", "target": "reviewer"},
        "errors": [],
        "message": "step 3: the recording holds 'writer', but the graph now routes to "
        "'reviewer' (edge reviewer --rejected--> reviewer)",
    }


def test_edges_taken_and_coverage(make_graph: MakeGraph, loop: Graph, recorded: Recording) -> None:
    stuck = record(simulate(loop, [reply("stuck", question="?")], inputs={"topic": "o"}))
    report = replay_recording(loop, recorded)
    assert edges_taken(report.events) == [
        ("$START", "_", "writer"),
        ("writer", "drafted", "reviewer"),
        ("reviewer", "rejected", "writer"),
        ("writer", "drafted", "reviewer"),
        ("reviewer", "approved", "$END"),
    ]
    cov = coverage(loop, [recorded, stuck])
    counts = {e.label: (e.recordings, e.traversals) for e in cov.edges}
    assert counts == {
        "$START --_--> writer": (2, 2),
        "$START --resume--> writer": (0, 0),
        "writer --drafted--> reviewer": (1, 2),
        "writer --stuck--> $END": (1, 1),
        "reviewer --approved--> $END": (1, 1),
        "reviewer --rejected--> writer": (1, 1),
    }
    assert [e.label for e in cov.uncovered] == ["$START --resume--> writer"]
    assert cov.covered == 5 and not cov.diverging
    text = cov.describe()
    assert "5 of 6 edges covered (83%)" in text
    assert "not covered:\n  $START --resume--> writer" in text


def test_coverage_counts_a_diverging_recording_up_to_its_divergence(
    make_graph: MakeGraph, recorded: Recording
) -> None:
    changed = make_graph(variant("rejected: { role: writer", "rejected: { role: $END"))
    cov = coverage(changed, [recorded])
    counts = {e.label: e.recordings for e in cov.edges}
    assert counts["reviewer --rejected--> $END"] == 1  # the graph's own end, not the recording's
    assert counts["reviewer --approved--> $END"] == 0
    assert len(cov.diverging) == 1
    assert "diverges at step 3 (ended-early)" in cov.describe()


def test_hand_written_recording_with_attempts(loop: Graph) -> None:
    rec = Recording(
        graph="review-loop",
        inputs={"topic": "owls"},
        steps=(
            RecordedStep(
                "writer",
                reply("drafted", draft="v1"),
                attempts=(RecordedAttempt("no frontmatter here"),),
            ),
            RecordedStep("reviewer", reply("approved", comments="fine")),
        ),
    )
    report = replay_recording(loop, rec)
    assert report.same_route
    assert (report.trace.final or "").startswith("Approved: v1 / fine")
