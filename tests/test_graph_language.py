"""The graph language, wave 2: guards, endings, preconditions and `$status`, through simulate()
and the command line (docs/format.md sections 6, 11, 12 and 13)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.actors.recording import recording_from_events
from orchestrator.definition.models import Graph
from orchestrator.replay import replay_recording
from orchestrator.testing import reply, resume, simulate
from tests.cli_helpers import Project

MakeGraph = Callable[..., Graph]

REVIEW = """
name: guarded
description: A developer and a reviewer; a blocker or a third rejection goes to a person.
limits: { max_visits: 10 }
roles:
  developer:
    description: Fixes
    goal: You fix.
    frontmatter:
      type: object
      properties: { $status: { enum: [fixed, stuck] }, summary: { type: string } }
      required: [$status, summary]
  reviewer:
    description: Reviews
    goal: You review.
    frontmatter:
      type: object
      properties:
        $status: { enum: [approved, rejected] }
        comments: { type: string }
        severity: { enum: [minor, blocker] }
      required: [$status, comments]
  requester:
    description: Decides
    goal: You decide.
    frontmatter:
      type: object
      properties: { $status: { enum: [retry, abandon] } }
      required: [$status]
graph:
  $START:
    _: { role: developer, prompt: "Fix {{{$inputs.task}}}" }
    resume: { role: developer, prompt: "Try again: {{{$inputs.message}}}" }
  developer:
    fixed: { role: reviewer, prompt: "Review ({{{$status}}}): {{{summary}}}" }
    stuck:
      role: $END
      ending: stuck
      outcome: failure
      prompt: "Stuck: {{{summary}}}"
      recovery: "orchestrator threads resume {{{$thread.id}}} --message 'another approach'"
  reviewer:
    approved: { role: $END, prompt: "Done after {{{$steps.developer.$status}}}: {{{comments}}}" }
    rejected:
      - when: "visits.developer >= 3 || output.severity == 'blocker'"
        role: requester
        prompt: "Still rejected: {{{comments}}}"
      - role: developer
        prompt: "Fix: {{{comments}}}"
  requester:
    retry: { role: developer, prompt: "Once more" }
    abandon: { role: $END, ending: abandoned, prompt: "Abandoned" }
"""


@pytest.fixture
def guarded(make_graph: MakeGraph) -> Graph:
    return make_graph(REVIEW)


def fixed(n: int = 1) -> str:
    return reply("fixed", summary=f"fix {n}")


def rejected(severity: str = "minor") -> str:
    return reply("rejected", comments="no", severity=severity)


# --------------------------------------------------------------------------- guards


def test_the_default_edge_when_no_guard_holds(guarded: Graph) -> None:
    trace = simulate(guarded, [fixed(), rejected(), fixed(2), reply("approved", comments="ok")])
    assert trace.path == ["developer", "reviewer", "developer", "reviewer", "$END"]
    assert trace.steps[2].prompt == "Fix: no"


def test_a_guard_on_the_output(guarded: Graph) -> None:
    trace = simulate(guarded, [fixed(), rejected("blocker"), reply("abandon")])
    assert trace.path == ["developer", "reviewer", "requester", "$END"]
    assert trace.steps[1].status == "rejected"
    assert trace.steps[2].prompt == "Still rejected: no"
    assert trace.steps[2].edge_status == "rejected"


def test_a_guard_on_visits(guarded: Graph) -> None:
    replies = [fixed(1), rejected(), fixed(2), rejected(), fixed(3), rejected(), reply("abandon")]
    trace = simulate(guarded, replies)
    assert trace.path[-2:] == ["requester", "$END"]
    assert [s.role for s in trace.steps].count("developer") == 3


def test_a_guard_that_fails_to_evaluate_suspends_naming_the_edge(make_graph: MakeGraph) -> None:
    graph = make_graph(
        REVIEW.replace("output.severity == 'blocker'", "output.severity > 3").replace(
            "guarded", "broken-guard"
        )
    )
    trace = simulate(graph, [fixed(), rejected()])
    assert trace.state == "suspended"
    assert "reviewer --rejected--> requester" in (trace.reason or "")
    assert "guard" in (trace.reason or "")


# --------------------------------------------------------------------------- endings


def test_a_success_ending_completes(guarded: Graph) -> None:
    trace = simulate(guarded, [fixed(), reply("approved", comments="fine")])
    assert (trace.state, trace.ending) == ("completed", "done")
    assert trace.final == "Done after fixed: fine"  # $steps.ROLE.$status


def test_a_failure_ending_fails_with_its_recovery(guarded: Graph) -> None:
    trace = simulate(guarded, [reply("stuck", summary="cannot build")])
    assert (trace.state, trace.ending) == ("failed", "stuck")
    assert trace.final == "Stuck: cannot build"
    assert trace.path == ["developer", "$END"]
    events = [s.event for s in trace.store.events(trace.thread_id)]
    recording = recording_from_events(events)
    assert recording.ending == "stuck" and recording.state == "failed"
    assert recording.recovery and recording.recovery.startswith("orchestrator threads resume")
    # A failed ending continues through $START.resume, like a completed thread.
    again = resume(trace, guarded, [fixed(), reply("approved", comments="ok")], message="new idea")
    assert again.state == "completed" and again.ending == "done"
    assert again.steps[1].prompt == "Try again: new idea"


def test_another_named_success_ending(guarded: Graph) -> None:
    trace = simulate(guarded, [fixed(), rejected("blocker"), reply("abandon")])
    assert (trace.state, trace.ending) == ("completed", "abandoned")


def test_a_changed_guard_is_the_first_divergence_of_a_replay(
    guarded: Graph, make_graph: MakeGraph
) -> None:
    trace = simulate(guarded, [fixed(), rejected("blocker"), reply("abandon")])
    recording = recording_from_events([s.event for s in trace.store.events(trace.thread_id)])
    assert replay_recording(guarded, recording).same_route
    changed = make_graph(REVIEW.replace("output.severity == 'blocker'", "false"), name="guarded")
    report = replay_recording(changed, recording)
    assert not report.same_route
    assert report.divergence is not None and report.divergence.step == 3
    assert report.divergence.kind == "route"
    assert report.divergence.graph_role == "developer"


# --------------------------------------------------------------------------- preconditions

NEEDY = """
name: needy
description: A role that needs things.
roles:
  worker:
    description: Works
    goal: You work.
    requires:
      - { env: NEEDY_TOKEN, message: "set NEEDY_TOKEN first" }
      - { file: "*.cfg" }
    frontmatter:
      type: object
      properties: { $status: { const: done } }
      required: [$status]
graph:
  $START: { _: { role: worker, prompt: "Go" } }
  worker: { done: { role: $END, prompt: "Done" } }
"""


def test_a_role_precondition_suspends_and_resume_checks_again(
    make_graph: MakeGraph, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = make_graph(NEEDY)
    monkeypatch.delenv("NEEDY_TOKEN", raising=False)
    trace = simulate(graph, [reply("done")], workspace=tmp_path)
    assert trace.state == "suspended"
    assert "set NEEDY_TOKEN first" in (trace.reason or "")
    assert "*.cfg" in (trace.reason or "")
    monkeypatch.setenv("NEEDY_TOKEN", "x")
    (tmp_path / "app.cfg").write_text("")
    again = resume(trace, graph, [reply("done")])
    assert again.state == "completed"


def test_a_graph_precondition_stops_run_before_a_thread_exists(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(
        """
        name: pre
        description: Needs a tool and a file.
        requires:
          - { tool: no-such-tool-xyz, message: "pre needs no-such-tool-xyz" }
          - { file: "pyproject.toml", message: "run it in a Python project" }
          - { command: [PYTHON, "-c", "import sys; sys.exit(0)"] }
        roles:
          w:
            description: w
            goal: g
            actor: { command: [PYTHON, AGENT] }
            frontmatter: { type: object, properties: { $status: { const: done } } }
        graph:
          $START: { _: { role: w, prompt: "go" } }
          w: { done: { role: $END, prompt: "end" } }
        """,
        "pre",
    )
    out = project.run("run", "pre", "x")
    assert out.returncode == 1
    assert "pre needs no-such-tool-xyz" in out.stderr
    assert "run it in a Python project" in out.stderr
    assert "import sys" not in out.stderr  # the command that succeeds is not listed
    assert project.threads() == []


# --------------------------------------------------------------------------- the command line

CLI_GRAPH = """
name: ends
description: An agent that gives up.
roles:
  w:
    description: w
    goal: g
    actor: { command: [PYTHON, AGENT] }
    frontmatter:
      type: object
      properties: { $status: { enum: [ok, stuck] }, why: { type: string } }
      required: [$status, why]
graph:
  $START: { _: { role: w, prompt: "go {{{$inputs.task}}}" } }
  w:
    ok: { role: $END, prompt: "fine: {{{why}}}" }
    stuck:
      role: $END
      ending: tests-still-fail
      outcome: failure
      prompt: "The tests still fail: {{{why}}}"
      recovery: "orchestrator threads resume {{{$thread.id}}} --message 'try another approach'"
"""


def test_a_failure_ending_exits_1_and_prints_its_recovery(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(CLI_GRAPH, "ends")
    project.script(w=["---\n$status: stuck\nwhy: 2 failures\n---\n"])
    out = project.run("run", "ends", "x")
    assert out.returncode == 1, out.stderr
    assert "The tests still fail: 2 failures" in out.stdout
    (row,) = project.threads()
    assert f"recovery: orchestrator threads resume {row['id']}" in out.stderr
    as_json = project.run("threads", "show", row["id"], "--json")
    data = json.loads(as_json.stdout)
    assert data["ending"] == "tests-still-fail" and data["state"] == "failed"
    assert "try another approach" in data["recovery"]
    shown = project.run("threads", "show", row["id"])
    assert "ending: tests-still-fail (failure)" in shown.stdout
    exported = project.run("threads", "export", row["id"])
    assert "ending: tests-still-fail" in exported.stdout


def test_validate_strict_fails_on_warnings(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(CLI_GRAPH.replace("fine: {{{why}}}", "fine: {{why}}"), "ends")
    loose = project.run("validate", "graphs/ends.yaml")
    assert loose.returncode == 0 and "html-escape" in loose.stdout
    strict = project.run("validate", "graphs/ends.yaml", "--strict")
    assert strict.returncode == 1 and "html-escape" in strict.stdout


@pytest.mark.parametrize(
    ("guard", "code"),
    [
        ("output.why ==", "guard-syntax"),
        ("output.wy == 'x'", "guard-var"),
        ("steps.nobody.why == 'x'", "guard-var"),
        ("inputs.nope == 1", "guard-var"),
        ("foo", "guard-var"),
    ],
)
def test_guard_problems(tmp_path: Path, guard: str, code: str) -> None:
    project = Project(tmp_path)
    text = CLI_GRAPH.replace(
        '    ok: { role: $END, prompt: "fine: {{{why}}}" }',
        f'    ok:\n      - {{ when: "{guard}", role: $END, prompt: "a" }}\n'
        '      - { role: $END, prompt: "b" }',
    )
    project.graph(text, "ends")
    out = project.run("validate", "graphs/ends.yaml", "--format", "json")
    codes = [p["code"] for p in json.loads(out.stdout)["problems"]]
    assert codes == [code], out.stdout


def test_guard_no_default_and_misplaced_ending(tmp_path: Path) -> None:
    project = Project(tmp_path)
    text = CLI_GRAPH.replace(
        '    ok: { role: $END, prompt: "fine: {{{why}}}" }',
        '    ok: { role: $END, prompt: "a", when: "true" }',
    ).replace(
        '  $START: { _: { role: w, prompt: "go {{{$inputs.task}}}" } }',
        '  $START: { _: { role: w, prompt: "go", ending: early } }',
    )
    project.graph(text, "ends")
    out = project.run("validate", "graphs/ends.yaml", "--format", "json")
    codes = sorted(p["code"] for p in json.loads(out.stdout)["problems"])
    assert codes == ["guard-no-default", "misplaced-ending"], out.stdout


def test_status_is_not_seen_on_start_edges(tmp_path: Path) -> None:
    project = Project(tmp_path)
    text = CLI_GRAPH.replace('prompt: "go {{{$inputs.task}}}"', 'prompt: "go {{{$status}}}"')
    project.graph(text, "ends")
    out = project.run("validate", "graphs/ends.yaml", "--format", "json")
    codes = [p["code"] for p in json.loads(out.stdout)["problems"]]
    assert codes == ["template-var"]


def test_a_clean_guarded_graph_has_no_problem(tmp_path: Path) -> None:
    project = Project(tmp_path)
    path = project.graph(REVIEW, "guarded")
    out = project.run("validate", str(path), "--strict")
    assert out.returncode == 0, out.stdout
    assert os.path.exists(path)


def test_diagrams_label_guards_and_endings(guarded: Graph) -> None:
    from orchestrator.render.diagram import to_dot, to_mermaid

    mermaid = to_mermaid(guarded)
    assert "rejected if visits.developer #gt;= 3" in mermaid
    assert '"stuck (stuck, failure)"' in mermaid and '"abandon (abandoned)"' in mermaid
    dot = to_dot(guarded)
    assert 'label="rejected if visits.developer >= 3' in dot
