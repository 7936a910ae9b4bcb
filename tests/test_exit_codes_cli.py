"""What the command line says and returns where a user could be misled: the quick start's
replay, refusals' exit codes, and the docs that list them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from orchestrator.cli.threads import threads
from tests.cli_helpers import LOOP_GRAPH, Project

REPO = Path(__file__).resolve().parents[1]


def reply(status: str, note: str) -> str:
    return f"---\n$status: {status}\nnote: {note}\n---\n"


def test_the_quick_start_replay_says_the_files_it_lists_were_not_changed(tmp_path: Path) -> None:
    examples = REPO / "examples"
    before = {p: p.read_bytes() for p in examples.rglob("*") if p.is_file()}
    out = subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", "solve-issue"]
        + ["--workspace", "examples/sample-repo", "-i", "issue=@examples/sample-repo/ISSUE.md"]
        + ["--replay", "examples/solve-issue.recording.yaml", "--store", str(tmp_path / "s")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "Files changed:" in out.stdout  # the recorded run's own words, kept verbatim
    err = out.stderr
    assert "replay: recorded replies only; no tool runs, no file changes" in err
    assert "the recorded run's final message, replayed:" in err
    note = err[err.index("(a replay:") :]
    assert "no file was changed now, including any file the message above lists" in note
    assert "no file changed" not in err.replace("no file changes", "")  # the old contradiction
    assert {p: p.read_bytes() for p in examples.rglob("*") if p.is_file()} == before


def test_refusals_exit_alike_a_second_cancel_and_resuming_a_cancelled_thread(
    tmp_path: Path,
) -> None:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    project.script(worker=[reply("again", "a"), reply("done", "b")])
    project.set("fail", {"worker:2": "boom"})
    assert project.run("run", "loop", "x").returncode == 3
    thread_id = project.threads()[0]["id"]
    assert project.run("threads", "cancel", thread_id).returncode == 0
    seq = len(project.events(thread_id))

    again = project.run("threads", "cancel", thread_id)
    resumed = project.run("threads", "resume", thread_id)
    answered = project.run("threads", "answer", thread_id, "--status", "done")
    for out in (again, resumed, answered):
        assert out.returncode == 2, out.stderr
        assert "cancelled" in out.stderr and "Traceback" not in out.stderr
    assert len(project.events(thread_id)) == seq  # refusals record nothing
    # Under a graph whose worker Claude plays, with no key: still "cancelled", not the key.
    (tmp_path / "claude").mkdir()
    claude = tmp_path / "claude" / "loop.yaml"
    claude.write_text(
        LOOP_GRAPH.replace("    actor: { command: [PYTHON, AGENT], timeout: 60 }\n", "")
    )
    env = {k: v for k, v in project.env().items() if not k.startswith("ANTHROPIC_")}
    keyless = subprocess.run(
        project.cmd("threads", "resume", thread_id, "--graph", str(claude)),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert keyless.returncode == 2 and "cancelled" in keyless.stderr, keyless.stderr
    missing = project.run("threads", "cancel", "01NOSUCHTHREAD")
    assert missing.returncode == 2 and "no thread" in missing.stderr


def test_threads_md_lists_the_exit_codes_of_every_threads_command() -> None:
    text = (REPO / "docs" / "threads.md").read_text(encoding="utf-8")
    table = text[text.index("### Exit codes of the `threads` commands") :]
    rows = re.findall(r"^\| `threads (\w+)", table, re.MULTILINE)
    assert sorted(rows) == sorted(threads.commands), rows


def test_models_md_tells_what_a_command_actor_gets() -> None:
    text = (REPO / "docs" / "models.md").read_text(encoding="utf-8")
    section = text[text.index("## Command actors") : text.index("## The sandbox")]
    source = (REPO / "orchestrator" / "actors" / "command.py").read_text(encoding="utf-8")
    for name in re.findall(r"(ORCHESTRATOR_\w+)=", source):
        assert f"`{name}`" in section, name
    for words in ("Working folder", "stdin", "stdout", "Environment", "Sandbox", "timeout"):
        assert words in section, words
