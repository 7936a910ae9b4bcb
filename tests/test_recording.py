"""Recordings (docs/format.md section 8): export -> load round trip, hand-written files, and
files that are wrong.

A bad recording file must fail with a message naming the file and the problem, never with a
traceback; a recording without (or with another) graph_hash still loads and replays.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from orchestrator.actors.recording import (
    RECORDING_VERSION,
    RecordingError,
    load_recording,
    parse_recording,
    recording_from_events,
)
from orchestrator.definition.models import Graph
from orchestrator.replay import replay_recording
from orchestrator.testing import reply, simulate
from tests.graphs_for_tests import REVIEW_LOOP

MakeGraph = Callable[..., Graph]


@pytest.fixture
def loop(make_graph: MakeGraph) -> Graph:
    return make_graph(REVIEW_LOOP)


def write(tmp_path: Path, text: str, name: str = "rec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def test_export_load_round_trip(loop: Graph, tmp_path: Path) -> None:
    trace = simulate(
        loop,
        [
            reply("drafted", draft="v1", body="My first draft.\nTwo lines.\n"),
            reply("rejected", comments="needs: a colon"),
            "no frontmatter at all",
            reply("drafted", draft="v2 — ünïcode"),
            reply("approved", comments="ok", tags=["a", "b"]),
        ],
        inputs={"topic": "owls"},
    )
    exported = recording_from_events([s.event for s in trace.store.events(trace.thread_id)])
    text = exported.dump()
    path = write(tmp_path, text)
    loaded = load_recording(path)

    assert loaded.path == str(path)
    assert loaded.graph == "review-loop"
    assert loaded.graph_hash == loop.hash
    assert loaded.inputs == {"topic": "owls"}
    assert loaded.state == "completed"
    assert loaded.final == exported.final
    assert loaded.steps == exported.steps  # every reply verbatim, attempts with their errors
    assert loaded.steps[2].attempts[0].output == "no frontmatter at all"
    assert loaded.steps[2].attempts[0].errors
    assert [s.prompt for s in loaded.steps] == trace.prompts

    data = yaml.safe_load(text)
    assert data["recording"] == RECORDING_VERSION == 1
    assert list(data) == [
        "recording",
        "graph",
        "graph_hash",
        "inputs",
        "state",
        "final",
        "ending",
        "steps",
    ]
    assert "output: |" in text  # replies stay readable as block scalars
    assert replay_recording(loop, loaded).same_route


def test_hand_written_recording_minimal(loop: Graph, tmp_path: Path) -> None:
    # No version, no graph_hash, no prompts, no usage: the least a person writes by hand.
    path = write(
        tmp_path,
        """
        graph: review-loop
        inputs: { topic: owls }
        steps:
          - role: writer
            output: |
              ---
              $status: drafted
              draft: a short draft
              ---
          - role: reviewer
            output: |
              ---
              $status: approved
              comments: fine
              ---
        """,
    )
    rec = load_recording(path)
    assert rec.graph_hash is None and rec.state is None
    assert [s.role for s in rec.steps] == ["writer", "reviewer"]
    report = replay_recording(loop, rec)
    assert report.same_route
    assert report.graph_hash == "missing"
    assert report.path == ["writer", "reviewer", "$END"]


def test_differing_graph_hash_still_replays(loop: Graph, tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        recording: 1
        graph: review-loop
        graph_hash: "sha256:0000"
        inputs: { topic: owls }
        steps:
          - role: writer
            output: "---\\n$status: stuck\\nquestion: which owls?\\n---\\n"
        """,
    )
    report = replay_recording(loop, path)
    assert report.same_route
    assert report.graph_hash == "changed"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("steps: [\n", "not valid YAML"),
        ("- just\n- a list\n", "a recording must be a YAML mapping"),
        ("recording: 2\nsteps: []\n", "recording version 2 is not supported (expected 1)"),
        ("graph: g\n", "`steps` must be a list"),
        ("steps:\n  - output: x\n", "step 1 needs a `role`"),
        ("steps:\n  - role: writer\n", "step 1 (writer) needs an `output` text"),
        (
            "steps:\n  - role: writer\n    output: x\n    attempts: [{errors: []}]\n",
            "step 1 attempt 1 needs an `output` text",
        ),
    ],
)
def test_bad_files_name_the_file_and_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text, "broken.yaml")
    with pytest.raises(RecordingError) as info:
        load_recording(path)
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match=r"missing\.yaml: cannot read"):
        load_recording(tmp_path / "missing.yaml")


def test_parse_recording_names_its_source() -> None:
    with pytest.raises(RecordingError, match=r"^<test>: `steps` must be a list$"):
        parse_recording({"graph": "g"}, "<test>")
