"""solve-issue end to end: the bundled graph, the real `anthropic` client, the fake Messages API.

The model's words are scripted (tests/solve_issue_scenario.py); everything else is real: the
client and its streaming, the tools (the editor edits the sample repository's code, `bash` runs
its real test command and git), the worktree and the commit on the thread's branch.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from orchestrator.actors.recording import load_recording
from orchestrator.cli import cli
from orchestrator.core.steps import thread_view
from orchestrator.definition.loader import load_graph
from orchestrator.store.sqlite import SqliteStore
from orchestrator.testing import reply, simulate
from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse
from tests.solve_issue_scenario import (
    GIT_ENV,
    RECORDING,
    REPO,
    SAMPLE,
    TEST_COMMAND,
    Script,
    role_of,
    sample_repo,
)

TEST_KEY = "sk-test-not-a-real-key-e2e"


def git(cwd: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def snapshot(repo: Path) -> dict[str, str]:
    """Every file of a checkout outside .git and the store, with its text."""
    return {
        str(p.relative_to(repo)): p.read_text(errors="replace")
        for p in sorted(repo.rglob("*"))
        if p.is_file() and not {".git", ".orchestrator"} & set(p.relative_to(repo).parts)
    }


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    with FakeAnthropic(Script()) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
        for name in ("ANTHROPIC_AUTH_TOKEN", "ORCHESTRATOR_MODEL", "ORCHESTRATOR_MODELS_FILE"):
            monkeypatch.delenv(name, raising=False)
        yield fake


def tools_offered(body: dict[str, Any]) -> set[str]:
    return {t["name"] for t in body.get("tools") or []}


def test_solve_issue_fixes_the_sample_repo_on_its_own_branch(
    tmp_path: Path, server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = sample_repo(tmp_path / "statskit")
    before = snapshot(repo)
    head = git(repo, "rev-parse", "HEAD")
    store = tmp_path / "store"
    monkeypatch.chdir(repo)
    result = CliRunner().invoke(
        cli,
        ["run", "solve-issue", "-i", "issue=@ISSUE.md", "--store", str(store)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.stderr + result.stdout
    script: Script = server.handler  # type: ignore[assignment]
    assert script.finished, {role: len(turns) for role, turns in script.turns.items()}

    # The thread: planner, developer, a rejection loop, then approval and passing tests.
    db = SqliteStore(store)
    (row,) = db.threads()
    view = thread_view([s.event for s in db.events(row.id)])
    db.close()
    assert view.state.status == "completed"
    assert [(s.role, s.status) for s in view.committed] == [
        ("planner", "ready"),
        ("developer", "done"),
        ("reviewer", "rejected"),
        ("developer", "done"),
        ("reviewer", "approved"),
        ("tester", "passed"),
    ]

    # The developer edited with the editor tool and ran the real tests: failing, then passing.
    developer_results = script.tool_results["developer"]
    assert any("FAILED (failures=1)" in r and "test_even_count" in r for r in developer_results)
    assert any("has been edited" in r for r in developer_results)
    assert re.search(r"^OK$", developer_results[-1], re.MULTILINE)
    # The reviewer's check really raised; the tester really ran the suite, then the example.
    assert "TypeError" in script.tool_results["reviewer"][1]
    suite, example = script.tool_results["tester"]
    assert "test_decimals" in suite and re.search(r"Ran 8 tests.*\n\nOK", suite, re.DOTALL)
    assert example.strip() == "2.5"

    # Each role was offered only its own tools.
    offered: dict[str, set[str]] = {}
    for body in server.message_requests:
        offered.setdefault(role_of(body), set()).update(tools_offered(body))
    editor = {"str_replace_based_edit_tool", "search_files"}
    assert offered == {
        "planner": editor,
        "developer": editor | {"bash"},
        "reviewer": editor | {"bash"},
        "tester": editor | {"bash"},
    }

    # The fix is committed on the thread's branch ...
    branch = f"orchestrator/{row.id}"
    fixed = git(repo, "show", f"{branch}:statskit/stats.py")
    assert "return (ordered[middle - 1] + ordered[middle]) / 2\n" in fixed + "\n"
    assert "def test_decimals" in git(repo, "show", f"{branch}:tests/test_stats.py")
    # one commit a step ("step N: ROLE -> STATUS"), then the thread's summary, on the base
    subjects = git(repo, "log", "--format=%s", f"{head}..{branch}").splitlines()
    assert len(subjects) == row.steps + 1, subjects
    assert subjects[-1].startswith("step 1: planner -> ") and subjects[1].startswith(
        f"step {row.steps}: "
    )
    assert git(repo, "rev-parse", f"{branch}~{row.steps + 1}") == head
    check = subprocess.run(
        [sys.executable, "-m", "unittest", "-q"],
        cwd=store / "worktrees" / row.id,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr
    # ... and the user's checkout is unchanged.
    assert snapshot(repo) == before
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "branch", "--show-current") == "main"
    failing = subprocess.run(
        [sys.executable, "-m", "unittest", "-q"], cwd=repo, capture_output=True, text=True
    )
    assert "FAILED (failures=1)" in failing.stderr

    # The final message names the branch, the files changed and the test result.
    out = result.stdout
    assert f"Branch {branch}: 2 files changed" in out
    assert "  M statskit/stats.py" in out and "  M tests/test_stats.py" in out
    assert "Tests: passed. Ran 8 tests: OK" in out and f"(`{TEST_COMMAND}`)" in out
    assert "↺" not in result.stderr  # not a terminal: plain lines
    assert "step 3 reviewer → rejected" in result.stderr


def test_the_readme_real_command_works_inside_a_clone(
    tmp_path: Path, server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quick start's command without --replay, run from a repository holding the sample."""
    from tests.test_quickstart import quick_start_blocks

    replay_block, real_block = quick_start_blocks()[:2]
    command = [line for line in shell_lines(real_block) if line.startswith("orchestrator run")]
    assert command, real_block
    args = command[0].split()[1:]
    assert "--replay" not in args
    # The same command as the replay demo's, less --replay RECORDING.
    replay_args = next(
        line for line in shell_lines(replay_block) if line.startswith("orchestrator run")
    ).split()[1:]
    at = replay_args.index("--replay")
    assert replay_args[:at] + replay_args[at + 2 :] == args

    clone = tmp_path / "clone"
    shutil.copytree(SAMPLE, clone / "examples" / "sample-repo")
    (clone / "README.md").write_text("the project\n")
    git(clone, "init", "--quiet", "--initial-branch=main")
    git(clone, "add", "--all")
    git(clone, "commit", "--quiet", "-m", "init")
    monkeypatch.delenv("ORCHESTRATOR_HOME")  # the default store, ./.orchestrator, as a user has
    monkeypatch.chdir(clone)
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    branch = re.search(r"Branch (orchestrator/\S+):", result.stdout)
    assert branch, result.stdout
    assert "  M examples/sample-repo/statskit/stats.py" in result.stdout
    fixed = git(clone, "show", f"{branch.group(1)}:examples/sample-repo/statskit/stats.py")
    assert "/ 2\n" in fixed + "\n"
    assert git(clone, "status", "--porcelain", "--untracked-files=all") == ""


def shell_lines(block: str) -> list[str]:
    """A shell block's commands, with backslash continuations joined."""
    return [" ".join(line.split()) for line in block.replace("\\\n", " ").splitlines()]


def test_the_demo_recording_replays_through_the_bundled_graph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording = load_recording(RECORDING)
    graph = load_graph("solve-issue")
    assert recording.graph_hash == graph.hash, (
        "the bundled solve-issue graph changed since examples/solve-issue.recording.yaml was "
        "made; make it again with `python -m tests.solve_issue_scenario`"
    )
    assert recording.inputs["issue"] == (SAMPLE / "ISSUE.md").read_text()
    roles = [(s.role, s.output.split("$status: ")[1].split()[0]) for s in recording.steps]
    assert ("reviewer", "rejected") in roles and roles[-1] == ("tester", "passed")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        cli, ["run", "solve-issue", "--replay", str(RECORDING)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.stderr
    assert "Tests: passed." in result.stdout
    assert "graph changed" not in result.stderr


# --------------------------------------------------------------------------- routes and limits


def test_work_goes_back_when_the_planner_lacks_information_or_the_tests_fail() -> None:
    trace = simulate(
        "solve-issue",
        [
            reply("insufficient_info", question="Round half up or to even?"),
            reply("answered", answer="To even."),
            reply("ready", plan="Round to even.", files=["m.py"]),
            reply("done", summary="Rounded.", files_changed=["m.py"]),
            reply("approved", summary="Fine."),
            reply("failed", test_command="make test", failures="test_round: 2 != 3"),
            reply("blocked", reason="The test expects half up; the person said to even."),
            reply("ready", plan="Update the test to round to even.", files=["test_m.py"]),
            reply("done", summary="Test updated.", files_changed=["test_m.py"]),
            reply("approved", summary="Fine."),
            reply("passed", test_command="make test", test_output_summary="3 passed"),
        ],
        {"issue": "rounding"},
    )
    assert trace.state == "completed", trace.reason
    assert trace.path == [
        "planner",
        "requester",
        "planner",
        "developer",
        "reviewer",
        "tester",
        "developer",
        "planner",
        "developer",
        "reviewer",
        "tester",
        "$END",
    ]
    assert "Round half up or to even?" in trace.steps[1].prompt
    assert "To even." in trace.steps[2].prompt
    assert "test_round: 2 != 3" in trace.steps[6].prompt
    assert "the person said to even" in trace.steps[7].prompt
    assert trace.final is not None and "Tests: passed. 3 passed (`make test`)" in trace.final
    assert "- test_m.py" in trace.final


def test_a_reviewer_that_never_approves_is_stopped_by_the_limits() -> None:
    graph = load_graph("solve-issue")
    rounds = [reply("ready", plan="p", files=[])]
    for _ in range(10):
        rounds += [
            reply("done", summary="s", files_changed=["a.py"]),
            reply("rejected", comments="no"),
        ]
    trace = simulate(graph, rounds, {"issue": "x"})
    assert trace.state == "suspended"
    assert "max_visits" in (trace.reason or "")
    assert len(trace.steps) <= graph.limits.max_steps


def test_the_bundled_graph_and_roles_validate() -> None:
    result = CliRunner().invoke(cli, ["validate", str(REPO / "graphs"), str(REPO / "roles")])
    assert result.exit_code == 0, result.output
    assert "no problems" in result.output


def test_roles_get_only_the_tools_they_need() -> None:
    graph = load_graph("solve-issue")
    assert {name: list(role.tools) for name, role in graph.roles.items()} == {
        "planner": ["read"],
        "developer": ["read", "edit", "shell"],
        "reviewer": ["read", "shell"],
        "tester": ["read", "shell"],
        "requester": [],
    }
    assert graph.roles["requester"].actor == "human"


# --------------------------------------------------------------------------- Ctrl-C


def test_ctrl_c_suspends_the_thread_and_resume_finishes_it(tmp_path: Path) -> None:
    """A real SIGINT to `orchestrator run` while the planner's request is in flight."""
    script = Script()
    calls: list[str] = []

    def handler(body: dict[str, Any]) -> FakeResponse:
        calls.append(role_of(body))
        if len(calls) == 1:
            return FakeResponse.text("never sent", delay=60)  # the request Ctrl-C interrupts
        return script(body)

    repo = sample_repo(tmp_path / "statskit")
    store = tmp_path / "store"
    with FakeAnthropic(handler) as fake:
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": fake.url,
            "ANTHROPIC_API_KEY": TEST_KEY,
            "ORCHESTRATOR_HOME": str(store),
        }
        cmd = [sys.executable, "-m", "orchestrator"]
        proc = subprocess.Popen(
            [*cmd, "run", "solve-issue", "-i", "issue=@ISSUE.md"],
            cwd=repo,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not calls and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert calls, "the planner's request never reached the fake server"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 3, err
        thread_id = re.search(r"threads resume (\S+)", err)
        assert thread_id and "interrupted: thread" in err and "is suspended" in err, err
        assert "Traceback" not in err

        db = SqliteStore(store)
        row = db.thread(thread_id.group(1))
        db.close()
        assert row.state == "suspended" and "interrupted" in row.reason

        resumed = subprocess.run(
            [*cmd, "threads", "resume", row.id, "--json"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert resumed.returncode == 0, resumed.stderr
    last = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert last["state"] == "completed"
    assert last["worktree"]["branch"] == f"orchestrator/{row.id}"
    assert "/ 2\n" in git(repo, "show", f"orchestrator/{row.id}:statskit/stats.py") + "\n"
    assert git(repo, "status", "--porcelain") == ""
