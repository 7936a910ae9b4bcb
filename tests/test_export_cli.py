"""`threads export` of big threads, read back identically; `threads show` cuts long values."""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.actors.recording import RecordedAttempt, RecordedStep, Recording, load_recording
from tests.cli_helpers import LOOP_GRAPH, Project

TRICKY = [
    "",
    "yes",
    "No",
    "on",
    "null",
    "~",
    "0o17",
    "0x1F",
    "1e3",
    "12",
    "true",
    "  leading spaces",
    "trailing spaces  ",
    "tab\tinside",
    "#not a comment",
    "- not a list",
    "key: value",
    "'single' and \"double\" quotes",
    "unicode: ü ✓ 😀",
    "line\nwith a trailing space \nafter",
    " starts with a space\nsecond line\n",
    "windows\r\nline ends\r\n",
    "many trailing newlines\n\n\n",
    "no newline at the end\nat all",
    "---\n$status: done\nnote: x\n---\nbody\n",
    "a line separator\u2028inside",
    "control \x07 bell and \x1b escape",
    "\ttab first\nthen text\n",
]


def test_tricky_strings_are_read_back_identically(tmp_path: Path) -> None:
    steps = tuple(
        RecordedStep(
            role="worker",
            output=text,
            prompt=text[::-1],
            attempts=(RecordedAttempt(text + "!", (text, "error")),),
            usage={"input_tokens": 3},
        )
        for text in TRICKY
    )
    recording = Recording(
        graph="loop",
        steps=steps,
        graph_hash="sha256:abc",
        inputs={"task": "yes", "n": 3, "list": ["0o17", "on"], "text": TRICKY[-5]},
        state="completed",
        final="\n".join(TRICKY),
    )
    path = tmp_path / "rec.yaml"
    path.write_text(recording.dump(), encoding="utf-8")
    again = load_recording(path)
    assert again.to_dict() == recording.to_dict()


def test_a_thread_with_the_longest_replies_exports_and_reads_back(tmp_path: Path) -> None:
    """Two replies just under the 1,000,000-character limit: about 2 MB to export and read."""
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    body = "\n".join(f"line {i}: " + "x" * 60 for i in range(950_000 // 75))
    first = f"---\n$status: again\nnote: big\n---\n{body}\n"
    last = f"---\n$status: done\nnote: end\n---\n{body}\n"
    project.script(worker=[first, last])
    assert project.run("run", "loop", "big").returncode == 0
    thread_id = project.threads()[0]["id"]

    out = project.run("threads", "export", thread_id, "-o", "rec.yaml")
    assert out.returncode == 0, out.stderr
    recording = load_recording(tmp_path / "rec.yaml")
    assert [s.output for s in recording.steps] == [first, last]
    assert "|" in (tmp_path / "rec.yaml").read_text()[:2000]  # replies stay readable blocks

    replay = project.run("run", "loop", "--replay", "rec.yaml")
    assert replay.returncode == 0, replay.stderr


def test_show_cuts_a_long_final_message_and_says_how_to_see_it_all(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    note = "\n".join(f"finding {i}" for i in range(500))
    project.script(
        worker=[
            "---\n$status: done\nnote: |\n"
            + "".join(f"  {line}\n" for line in note.splitlines())
            + "---\n"
        ]
    )
    assert project.run("run", "loop", "x").returncode == 0
    thread_id = project.threads()[0]["id"]

    shown = project.run("threads", "show", thread_id).stdout
    assert "finding 10" in shown and "finding 499" not in shown
    assert f"`orchestrator threads show {thread_id} --full` prints everything" in shown
    assert "500 lines" in shown

    full = project.run("threads", "show", thread_id, "--full").stdout
    assert "finding 499" in full and "cut:" not in full
    data = json.loads(project.run("threads", "show", thread_id, "--json").stdout)
    assert data["final"] == "Finished: " + note + "\n"
