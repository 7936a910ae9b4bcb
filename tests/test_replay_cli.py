"""`orchestrator replay` end to end, as a user types it: a real subprocess in a temp project.

Recordings are made with `simulate()` (the real engine) and written as files; the graph is
then changed on disk the way a user would change it, and the command must report the first
divergence with its step, roles or validation error, exit 1, and never print a traceback.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from orchestrator.actors.recording import recording_from_events
from orchestrator.testing import reply, simulate
from tests.graphs_for_tests import REVIEW_LOOP

REPO = Path(__file__).resolve().parents[1]

LOOP_REPLIES = [
    reply("drafted", draft="v1"),
    reply("rejected", comments="too short"),
    reply("drafted", draft="v2"),
    reply("approved", comments="good"),
]


def orchestrator(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in out.stderr, out.stderr
    return out


def change(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """graphs/review-loop.yaml and recordings/{loop,stuck}.yaml, recorded through it."""
    (tmp_path / "graphs").mkdir()
    graph = tmp_path / "graphs" / "review-loop.yaml"
    graph.write_text(REVIEW_LOOP.lstrip())
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    for name, replies in (("loop", LOOP_REPLIES), ("stuck", [reply("stuck", question="?")])):
        trace = simulate(graph, replies, inputs={"topic": "owls"})
        events = [s.event for s in trace.store.events(trace.thread_id)]
        (recordings / f"{name}.yaml").write_text(recording_from_events(events).dump())
    return tmp_path


def test_same_route(project: Path) -> None:
    out = orchestrator(project, "replay", "graphs/review-loop.yaml", "recordings/loop.yaml")
    assert out.returncode == 0, out.stderr
    assert out.stdout == (
        "✓ recordings/loop.yaml: same route, 4 steps\n"
        "  route: writer(drafted) → reviewer(rejected) → writer(drafted) → reviewer(approved)"
        " → $END\n"
    )


def test_folder_of_recordings(project: Path) -> None:
    out = orchestrator(project, "replay", "review-loop", "recordings")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "✓ recordings/loop.yaml: same route, 4 steps"
    assert lines[2] == "✓ recordings/stuck.yaml: same route, 1 step"
    assert lines[-1] == "2 recordings: 2 same route"


def test_route_changed(project: Path) -> None:
    change(
        project / "graphs/review-loop.yaml", "rejected: { role: writer", "rejected: { role: $END"
    )
    out = orchestrator(project, "replay", "graphs/review-loop.yaml", "recordings")
    assert out.returncode == 1, out.stderr
    assert out.stdout.splitlines()[:4] == [
        "✗ recordings/loop.yaml: diverges at step 3 (ended-early)",
        "  step 3: the recording holds 'writer', but the graph now ends at $END"
        " (edge reviewer --rejected--> $END)",
        "  replayed as recorded: writer(drafted) → reviewer(rejected)",
        "  note: the graph changed since the recording was made (graph_hash differs)",
    ]
    assert "✓ recordings/stuck.yaml: same route" in out.stdout
    assert out.stdout.splitlines()[-1] == "2 recordings: 1 same route, 1 diverges"


def test_route_changed_to_another_role(project: Path) -> None:
    change(
        project / "graphs/review-loop.yaml",
        "rejected: { role: writer",
        "rejected: { role: reviewer",
    )
    out = orchestrator(project, "replay", "review-loop", "recordings/loop.yaml")
    assert out.returncode == 1
    assert (
        "step 3: the recording holds 'writer', but the graph now routes to 'reviewer'"
        " (edge reviewer --rejected--> reviewer)"
    ) in out.stdout


def test_schema_requires_a_new_field(project: Path) -> None:
    graph = project / "graphs/review-loop.yaml"
    change(graph, "required: [$status, comments]", "required: [$status, comments, severity]")
    change(
        graph,
        "comments: { type: string }\n",
        "comments: { type: string }\n        severity: { enum: [minor, major] }\n",
    )
    out = orchestrator(project, "replay", "review-loop", "recordings/loop.yaml")
    assert out.returncode == 1, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "✗ recordings/loop.yaml: diverges at step 2 (rejected)"
    assert (
        lines[1] == "  step 2 (reviewer): the recorded reply is now rejected by the role's schema:"
    )
    assert lines[2].startswith("    - status 'rejected': ") and "severity" in lines[2]


def test_json_one_object_per_recording(project: Path) -> None:
    change(
        project / "graphs/review-loop.yaml", "rejected: { role: writer", "rejected: { role: $END"
    )
    out = orchestrator(project, "replay", "review-loop", "recordings", "--json")
    assert out.returncode == 1
    loop, stuck = (json.loads(line) for line in out.stdout.splitlines())
    assert loop["recording"] == "recordings/loop.yaml"
    assert loop["same_route"] is False
    assert loop["graph_hash"] == "changed"
    assert loop["divergence"]["kind"] == "ended-early"
    assert loop["divergence"]["step"] == 3
    assert loop["divergence"]["recorded_role"] == "writer"
    assert loop["divergence"]["graph_role"] == "$END"
    assert stuck["same_route"] is True and stuck["divergence"] is None
    assert stuck["path"] == ["writer", "$END"]


def test_unreadable_recording_exits_2_and_names_it(project: Path) -> None:
    (project / "recordings" / "broken.yaml").write_text("steps: [\n")
    out = orchestrator(project, "replay", "review-loop", "recordings", "nothing.yaml")
    assert out.returncode == 2
    assert "error: nothing.yaml: no such file or folder" in out.stderr
    assert "error: recordings/broken.yaml: not valid YAML" in out.stderr
    # the readable recordings are still replayed and reported
    assert "✓ recordings/loop.yaml: same route" in out.stdout


def test_unreadable_graph_exits_2(project: Path) -> None:
    (project / "graphs" / "broken.yaml").write_text("name: broken\nroles: [\n")
    out = orchestrator(project, "replay", "graphs/broken.yaml", "recordings")
    assert out.returncode == 2
    assert "broken.yaml" in out.stderr
    missing = orchestrator(project, "replay", "no-such-graph", "recordings")
    assert missing.returncode == 2
    assert "no graph named 'no-such-graph'" in missing.stderr


def test_empty_folder_exits_2(project: Path) -> None:
    (project / "empty").mkdir()
    out = orchestrator(project, "replay", "review-loop", "empty")
    assert out.returncode == 2
    assert "error: empty: no recordings (*.yaml, *.yml) in this folder" in out.stderr


def test_coverage(project: Path) -> None:
    out = orchestrator(project, "replay", "--coverage", "review-loop", "recordings")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "edge coverage of 'review-loop' by 2 recordings (how many take each edge):",
        "    2  $START   --_-->        writer",
        "    0  $START   --resume-->   writer     not covered",
        "    1  writer   --drafted-->  reviewer",
        "    1  writer   --stuck-->    $END",
        "    1  reviewer --approved--> $END",
        "    1  reviewer --rejected--> writer",
        "5 of 6 edges covered (83%)",
        "not covered:",
        "  $START --resume--> writer",
    ]
    strict = orchestrator(
        project, "replay", "--coverage", "--fail-uncovered", "review-loop", "recordings"
    )
    assert strict.returncode == 1
    data = json.loads(
        orchestrator(project, "replay", "--coverage", "--json", "review-loop", "recordings").stdout
    )
    assert data["covered"] == 5 and data["total"] == 6
    assert data["uncovered"] == [
        {
            "source": "$START",
            "status": "resume",
            "target": "writer",
            "recordings": 0,
            "traversals": 0,
        }
    ]


def test_run_export_replay(project: Path) -> None:
    """A thread run (from a recording) and exported by the CLI replays as the same route."""
    env_store = ["--store", str(project / "store")]
    run = orchestrator(
        project, "run", "review-loop", "--replay", "recordings/loop.yaml", "--json", *env_store
    )
    assert run.returncode == 0, run.stderr
    thread = json.loads(run.stdout.splitlines()[-1])["thread"]
    export = orchestrator(project, "threads", "export", thread, "-o", "exported.yaml", *env_store)
    assert export.returncode == 0, export.stderr
    assert yaml.safe_load((project / "exported.yaml").read_text())["recording"] == 1
    out = orchestrator(project, "replay", "review-loop", "exported.yaml")
    assert out.returncode == 0, out.stdout
    assert out.stdout.startswith("✓ exported.yaml: same route, 4 steps")


def _demo_recordings() -> list[Path]:
    """The recordings of solve-issue shipped under examples/ (written by another change)."""
    found = []
    for path in sorted((REPO / "examples").rglob("*.y*ml")) if (REPO / "examples").is_dir() else []:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, OSError, UnicodeDecodeError):
            continue
        if isinstance(data, dict) and data.get("graph") == "solve-issue" and "steps" in data:
            found.append(path)
    return found


def test_coverage_of_the_bundled_solve_issue_graph(tmp_path: Path) -> None:
    """Coverage of the bundled graph by its demo recording (run from an empty folder, so the
    graph name resolves to the bundled graph)."""
    bundled = REPO / "graphs" / "solve-issue.yaml"
    demos = _demo_recordings()
    assert bundled.is_file() and demos, "the bundled solve-issue graph or its demo recording"
    graph = yaml.safe_load(bundled.read_text(encoding="utf-8"))
    all_edges = [(src, status) for src, edges in graph["graph"].items() for status in edges]

    out = orchestrator(tmp_path, "replay", "--coverage", "solve-issue", *map(str, demos))
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("edge coverage of 'solve-issue' by ")
    rows = [re.match(r"^ +(\d+)  (\S+) +--(\S+)--> +(\S+)", line) for line in lines[1:]]
    listed = [(m[2], m[3]) for m in rows if m]
    assert listed == all_edges  # every edge, in the graph's order
    counts = {(m[2], m[3]): int(m[1]) for m in rows if m}
    assert counts[("$START", "_")] == len(demos)
    assert counts[("tester", "passed")] >= 1  # the demo reaches $END through the tester
    assert counts[("$START", "resume")] == 0
    covered = sum(1 for n in counts.values() if n)
    assert f"{covered} of {len(all_edges)} edges covered" in out.stdout
    assert "not covered:" in lines
    assert "  $START --resume--> planner" in lines

    data = json.loads(
        orchestrator(
            tmp_path, "replay", "--coverage", "--json", "solve-issue", *map(str, demos)
        ).stdout
    )
    assert all(r["same_route"] for r in data["recordings"])
    assert data["covered"] == covered and data["total"] == len(all_edges)
