"""A thread continued after its ending (`threads resume --message` through `$START.resume`):
its recording marks where it was resumed, and replays as it ran (docs/testing.md section 5)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from orchestrator import run_thread
from orchestrator.actors.recording import Recording, parse_recording, recording_from_events
from orchestrator.cli import cli
from orchestrator.definition.models import Graph
from orchestrator.replay import coverage, replay_recording
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
    return parse_recording(yaml.safe_load(text), "resumed.yaml")


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
    assert report.notes == [
        "the recorded thread ended after step 2 and was resumed with message 'add a summary'; "
        "so was the replay"
    ]


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


TURNS = """\
name: turns
description: A Python function answers; a completed thread can be continued.
roles:
  answerer:
    description: Answers
    goal: Answer.
    actor: { python: "answering:answer" }
    frontmatter: { type: object, properties: { text: { type: string } }, required: [text] }
graph:
  $START:
    _: { role: answerer, prompt: "Answer {{{$inputs.task}}}" }
    resume: { role: answerer, prompt: "Also: {{{$inputs.message}}}" }
  answerer:
    _: { role: $END, prompt: "{{{text}}}" }
"""


def test_threads_export_then_replay_on_the_command_line(tmp_path: Path) -> None:
    """The user's path: run, complete, `threads resume --message`, `threads export`, `replay`."""
    (tmp_path / "g").mkdir()
    graph = tmp_path / "g" / "turns.yaml"
    graph.write_text(TURNS)
    (tmp_path / "g" / "answering.py").write_text(
        "def answer(call):\n    return {'text': 're: ' + call.prompt}\n"
    )
    store = tmp_path / "store"
    first = run_thread(graph, {"task": "owls"}, store=store, workspace=tmp_path)
    assert first.state == "completed"
    runner = CliRunner()
    store_args = ["--store", str(store)]
    resumed = runner.invoke(
        cli, ["threads", "resume", first.thread_id, "--message", "and bats", *store_args]
    )
    assert resumed.exit_code == 0, resumed.output
    rec = tmp_path / "rec.yaml"
    out = runner.invoke(cli, ["threads", "export", first.thread_id, "-o", str(rec), *store_args])
    assert out.exit_code == 0, out.output
    replayed = runner.invoke(cli, ["replay", str(graph), str(rec)])
    assert replayed.exit_code == 0, replayed.output
    assert "same route, 2 steps" in replayed.output
    assert "route: answerer → answerer → $END" in replayed.output
    assert "note: the recorded thread ended after step 1 and was resumed" in replayed.output
    # `run --replay` plays it as it ran too: through the resume, to the second ending.
    played = runner.invoke(
        cli,
        ["run", str(graph), "--replay", str(rec), "--store", str(tmp_path / "s2"), "--json"],
    )
    assert played.exit_code == 0, played.output
    lines = [json.loads(line) for line in played.output.splitlines() if line.startswith("{")]
    kinds = [line.get("event", line.get("type")) for line in lines]
    assert sum(1 for k in kinds if k == "ThreadResumed") == 1, kinds
    assert lines[-1]["state"] == "completed" and lines[-1]["steps"] == 2
