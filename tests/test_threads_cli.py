"""`orchestrator run` and `orchestrator threads ...` end to end, as a user types them."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.cli_helpers import LOOP_GRAPH, Project

HUMAN_GRAPH = """
name: approve
description: A worker proposes, a person approves.
roles:
  worker:
    description: Proposes
    goal: You propose.
    actor: { command: [PYTHON, AGENT] }
    frontmatter:
      type: object
      properties: { $status: { const: proposed }, proposal: { type: string } }
      required: [$status, proposal]
  boss:
    description: A person who approves
    goal: You approve or reject.
    actor: human
    frontmatter:
      oneOf:
        - properties: { $status: { const: yes }, budget: { type: integer } }
          required: [$status, budget]
        - properties: { $status: { const: no }, why: { type: string } }
          required: [$status, why]
graph:
  $START: { _: { role: worker, prompt: "Propose for {{{$inputs.task}}}" } }
  worker: { proposed: { role: boss, prompt: "Approve? {{{proposal}}}" } }
  boss:
    yes: { role: $END, prompt: "Approved with budget {{{budget}}}" }
    no: { role: $END, prompt: "Rejected: {{{why}}}" }
"""


def reply(status: str, note: str) -> str:
    return f"---\n$status: {status}\nnote: {note}\n---\nbody of {note}\n"


def make(tmp_path: Path) -> Project:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    return project


def test_run_json_streams_events_then_result(tmp_path: Path) -> None:
    project = make(tmp_path)
    project.script(worker=[reply("again", "a"), reply("done", "b")])
    out = project.run("run", "loop", "the task", "--json")
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    kinds = [line.get("event") for line in lines[:-1]]
    assert kinds[0] == "ThreadStarted" and kinds[-1] == "ThreadCompleted"
    assert kinds.count("StepCommitted") == 2
    result = lines[-1]
    assert result["state"] == "completed" and result["final"] == "Finished: b"
    assert result["thread"] == lines[0]["thread"]


def test_invalid_reply_repaired_then_suspended_exit_3_and_show(tmp_path: Path) -> None:
    project = make(tmp_path)
    project.script(
        worker=[
            "no frontmatter here",
            "---\n$status: Done\nnote: x\n---\n",
            "---\n$status: finished\n---\n",
        ]
    )
    out = project.run("run", "loop", "x")
    assert out.returncode == 3
    assert "reply rejected" in out.stderr
    assert "threads resume" in out.stderr
    thread_id = project.threads()[0]["id"]
    show = project.run("threads", "show", thread_id)
    assert show.returncode == 0
    assert "suspended" in show.stdout and "max_repairs is 2" in show.stdout
    assert show.stdout.count("rejected") >= 3
    data = json.loads(project.run("threads", "show", thread_id, "--json").stdout)
    assert data["state"] == "suspended"
    assert len(data["steps"][0]["rejected"]) == 3


def test_graph_with_errors_is_refused_before_any_call(tmp_path: Path) -> None:
    project = make(tmp_path)
    broken = LOOP_GRAPH.replace("done: { role: $END", "finished: { role: $END")
    project.graph(broken, "loop")
    out = project.run("run", "loop", "x")
    assert out.returncode == 1
    assert "missing-status-edge" in out.stderr or "unknown-status-edge" in out.stderr
    assert not (tmp_path / "count-worker").exists()  # the agent never ran


def test_bad_inputs_and_unknown_graph_are_usage_errors(tmp_path: Path) -> None:
    project = make(tmp_path)
    out = project.run("run", "loop")  # the implicit `task` input is required
    assert out.returncode == 2
    assert "task" in out.stderr and "Traceback" not in out.stderr
    out = project.run("run", "lopo", "x")
    assert out.returncode == 2
    assert "did you mean 'loop'" in out.stderr
    out = project.run("run", "loop", "x", "-i", "task=@missing.txt")
    assert out.returncode == 2 and "missing.txt" in out.stderr


def test_input_from_file(tmp_path: Path) -> None:
    project = make(tmp_path)
    project.script(worker=[reply("done", "ok")])
    (tmp_path / "task.txt").write_text("from a file")
    out = project.run("run", "loop", "-i", "task=@task.txt", "--json")
    assert out.returncode == 0, out.stderr
    first = json.loads(out.stdout.splitlines()[0])
    assert first["inputs"] == {"task": "from a file"}


def test_human_role_waits_then_answer_continues(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(HUMAN_GRAPH, "approve")
    project.script(worker=["---\n$status: proposed\nproposal: buy owls\n---\n"])
    out = project.run("run", "approve", "owls")
    assert out.returncode == 3
    assert "waits for a person" in out.stderr
    thread_id = project.threads()[0]["id"]
    assert project.threads()[0]["state"] == "waiting"

    bad = project.run("threads", "answer", thread_id, "--status", "yes", "--set", "budget=lots")
    assert bad.returncode == 1
    assert "budget" in bad.stderr
    assert project.threads()[0]["state"] == "waiting"  # nothing was committed

    good = project.run("threads", "answer", thread_id, "--status", "yes", "--set", "budget=300")
    assert good.returncode == 0, good.stderr
    assert "Approved with budget 300" in good.stdout


def test_answer_from_file(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(HUMAN_GRAPH, "approve")
    project.script(worker=["---\n$status: proposed\nproposal: p\n---\n"])
    project.run("run", "approve", "t")
    thread_id = project.threads()[0]["id"]
    (tmp_path / "reply.md").write_text("---\n$status: no\nwhy: too expensive\n---\nSorry.\n")
    out = project.run("threads", "answer", thread_id, "--file", "reply.md")
    assert out.returncode == 0, out.stderr
    assert "Rejected: too expensive" in out.stdout


def test_cancel_and_export(tmp_path: Path) -> None:
    project = make(tmp_path)
    project.script(worker=[reply("again", "a"), reply("again", "b"), reply("done", "c")])
    project.set("fail", {"worker:2": "boom"})
    assert project.run("run", "loop", "x").returncode == 3
    thread_id = project.threads()[0]["id"]

    exported = project.run("threads", "export", thread_id, "-o", "rec.yaml")
    assert exported.returncode == 0, exported.stderr
    rec = yaml.safe_load((tmp_path / "rec.yaml").read_text())
    assert rec["recording"] == 1 and rec["graph"] == "loop"
    assert rec["graph_hash"].startswith("sha256:")
    assert [s["role"] for s in rec["steps"]] == ["worker"]
    assert rec["steps"][0]["output"] == reply("again", "a")
    assert rec["steps"][0]["prompt"] == "Start x"

    out = project.run("threads", "cancel", thread_id)
    assert out.returncode == 0
    assert project.threads()[0]["state"] == "cancelled"
    again = project.run("threads", "resume", thread_id)
    assert again.returncode == 2 and "cancelled" in again.stderr


def test_replay_a_recording_offline(tmp_path: Path) -> None:
    project = make(tmp_path)
    project.script(worker=[reply("again", "a"), reply("done", "b")])
    assert project.run("run", "loop", "x").returncode == 0
    thread_id = project.threads()[0]["id"]
    project.run("threads", "export", thread_id, "-o", "rec.yaml")
    (tmp_path / "count-worker").unlink()
    (tmp_path / "script.json").unlink()  # the agent could not answer now
    out = project.run("run", "loop", "--replay", "rec.yaml")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Finished: b"
    assert not (tmp_path / "count-worker").exists()


def test_resume_under_changed_graph_says_what_changed(tmp_path: Path) -> None:
    project = make(tmp_path)
    project.script(worker=[reply("again", "a"), reply("done", "b")])
    project.set("fail", {"worker:2": "down"})
    assert project.run("run", "loop", "x").returncode == 3
    thread_id = project.threads()[0]["id"]
    (tmp_path / "fail.json").unlink()
    project.graph(LOOP_GRAPH.replace("Finished: {{{note}}}", "All done: {{{note}}}"), "loop")
    out = project.run("threads", "resume", thread_id)
    assert out.returncode == 0, out.stderr
    assert "the graph changed" in out.stderr
    assert "edge worker --done--> $END: prompt or location changed" in out.stderr
    assert "All done: b" in out.stdout


def test_unknown_thread_is_a_clear_error(tmp_path: Path) -> None:
    project = make(tmp_path)
    for args in (
        ("threads", "show", "nope"),
        ("threads", "resume", "nope"),
        ("threads", "export", "nope"),
    ):
        out = project.run(*args)
        assert out.returncode == 2
        assert "no thread 'nope'" in out.stderr and "Traceback" not in out.stderr


def test_resume_refuses_a_changed_graph_with_errors(
    tmp_path: Path,
) -> None:
    project = make(tmp_path)
    project.script(worker=[reply("again", "a"), reply("done", "b")])
    project.set("fail", {"worker:2": "down"})
    assert project.run("run", "loop", "x").returncode == 3
    thread_id = project.threads()[0]["id"]
    broken = LOOP_GRAPH.replace("done: { role: $END", "finished: { role: $END")
    project.graph(broken, "loop")
    out = project.run("threads", "resume", thread_id)
    assert out.returncode == 1
    assert "missing-status-edge" in out.stderr or "unknown-status-edge" in out.stderr
    assert project.threads()[0]["state"] == "suspended"  # nothing ran


def test_roles_played_by_claude_need_a_key_before_anything_starts(tmp_path: Path) -> None:
    import os
    import subprocess

    project = make(tmp_path)
    project.graph(
        LOOP_GRAPH.replace("    actor: { command: [PYTHON, AGENT], timeout: 60 }\n", ""), "loop"
    )
    env = project.env()
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("ANTHROPIC_AUTH_TOKEN", None)
    (tmp_path / "batch.jsonl").write_text('{"task": "a"}\n')
    for args in (("run", "loop", "x"), ("run", "loop", "--batch", "batch.jsonl")):
        out = subprocess.run(
            project.cmd(*args), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 2, out.stderr
        assert "No Anthropic API key" in out.stderr and "Traceback" not in out.stderr
    assert not (project.store / "threads.db").exists() or project.threads() == []
    assert os.environ.get("ANTHROPIC_API_KEY")  # the test's own environment is untouched


RESUMABLE = LOOP_GRAPH.replace(
    '    _: { role: worker, prompt: "Start {{{$inputs.task}}}" }\n',
    '    _: { role: worker, prompt: "Start {{{$inputs.task}}}" }\n'
    '    resume: { role: worker, prompt: "Continue: {{{$inputs.message}}}" }\n',
)


def test_resume_without_the_message_its_edge_reads_is_refused_and_the_thread_stays_usable(
    tmp_path: Path,
) -> None:
    project = make(tmp_path)
    project.graph(RESUMABLE, "loop")
    project.script(worker=[reply("done", "a"), reply("done", "b")])
    assert project.run("run", "loop", "x").returncode == 0
    thread_id = project.threads()[0]["id"]
    out = project.run("threads", "resume", thread_id)
    assert out.returncode != 0
    assert "needs a message" in out.stderr and "--message" in out.stderr
    assert "Traceback" not in out.stderr
    assert project.threads()[0]["state"] == "completed"  # nothing recorded
    again = project.run("threads", "resume", thread_id, "--message", "one more")
    assert again.returncode == 0, again.stderr
    assert "Finished: b" in again.stdout


def test_a_resume_edge_that_tests_for_the_message_resumes_without_one(tmp_path: Path) -> None:
    project = make(tmp_path)
    optional = RESUMABLE.replace(
        '"Continue: {{{$inputs.message}}}"',
        '"Continue.{{#$inputs.message}} {{{$inputs.message}}}{{/$inputs.message}}"',
    )
    project.graph(optional, "loop")
    project.script(worker=[reply("done", "a"), reply("done", "b")])
    assert project.run("run", "loop", "x").returncode == 0
    out = project.run("threads", "resume", project.threads()[0]["id"])
    assert out.returncode == 0, out.stderr
    assert "Finished: b" in out.stdout
