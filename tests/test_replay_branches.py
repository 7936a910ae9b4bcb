"""A recording of a thread with branches and a subgraph replays offline; a changed guard is
reported as the first divergence."""

from __future__ import annotations

from pathlib import Path

from orchestrator.actors.recording import load_recording
from orchestrator.replay import replay_recording
from orchestrator.run.session import Session
from orchestrator.testing import reply, simulate

CHILD = """\
name: fixer
description: Fixes one task
roles:
  worker:
    description: works
    goal: You work.
    frontmatter:
      properties: { $status: { const: fixed }, summary: { type: string } }
      required: [$status, summary]
graph:
  $START:
    _: { role: worker, prompt: "Fix: {{{$inputs.task}}}" }
  worker:
    fixed: { role: $END, prompt: "Fixed: {{{summary}}}" }
"""

PARENT = """\
name: tasks
description: Splits, fixes each task in a subgraph, checks
roles:
  planner:
    description: plans
    goal: You plan.
    frontmatter:
      properties:
        $status: { const: split }
        tasks: { type: array, items: { type: string } }
      required: [$status, tasks]
  fix:
    description: Fixes one task
    graph: fixer
  checker:
    description: checks
    goal: You check.
    frontmatter:
      properties: { score: { type: integer } }
      required: [score]
graph:
  $START:
    _: { role: planner, prompt: "Split {{{$inputs.task}}}" }
  planner:
    split:
      for_each: tasks
      role: fix
      prompt: "{{{item}}}"
      join: { role: checker, prompt: "Check {{#$branches}}{{{$body}}}; {{/$branches}}" }
  fix:
    done: { role: $END, prompt: "unused" }
  checker:
    _:
      - { when: "output.score >= 5", role: $END, prompt: "Good" }
      - { role: $END, ending: poor, prompt: "Poor" }
"""


def test_a_recording_with_branches_and_subgraphs_replays_and_a_changed_guard_diverges(
    tmp_path: Path,
) -> None:
    (tmp_path / "fixer.yaml").write_text(CHILD)
    graph = tmp_path / "tasks.yaml"
    graph.write_text(PARENT)
    trace = simulate(
        graph,
        {
            "planner": [reply("split", tasks=["a", "b"])],
            "worker": [reply("fixed", summary="A"), reply("fixed", summary="B")],
            "checker": [reply(score=7)],
        },
    )
    assert trace.state == "completed" and trace.final == "Good", trace.reason
    assert trace.steps[3].prompt == "Check Fixed: A; Fixed: B; "

    path = tmp_path / "run.yaml"
    path.write_text(Session(trace.store).recording(trace.thread_id).dump())
    recording = load_recording(path)
    assert [s.role for s in recording.steps] == ["planner", "fix", "fix", "checker"]
    child = recording.steps[1].child
    assert child is not None and child.steps[0].prompt == "Fix: a"
    assert child.steps[0].output == reply("fixed", summary="A")

    report = replay_recording(graph, recording)
    assert report.divergence is None, report.divergence
    assert report.trace.final == "Good"

    graph.write_text(PARENT.replace("output.score >= 5", "output.score >= 9"))
    report = replay_recording(graph, recording)
    assert report.divergence is not None
    assert report.divergence.step == 5 and "poor" in report.divergence.message
