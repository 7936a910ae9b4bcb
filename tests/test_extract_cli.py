"""`orchestrator extract` end to end: a real process in a temporary directory, as a user types it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent / "replies" / "graph.yaml"
VALID = '---\n$status: ready\nplan: "Fix it"\nrepoPath: /r\n---\nThe body.\n'
INVALID = "---\n$status: ready\nplan: 5\n---\n"


@pytest.fixture()
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "graphs").mkdir()
    shutil.copy(FIXTURE, tmp_path / "graphs" / "graph.yaml")
    (tmp_path / "valid.md").write_text(VALID)
    (tmp_path / "invalid.md").write_text(INVALID)
    return tmp_path


def run(cwd: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator", "extract", *args],
        cwd=cwd,
        input=stdin if stdin is not None else b"",
        capture_output=True,
        timeout=60,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    out = subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode()
    )
    assert "Traceback" not in out.stderr
    return out


def test_valid_reply_prints_json(workdir: Path) -> None:
    proc = run(workdir, "--graph", "graphs/graph.yaml", "--role", "planner", "valid.md")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "status": "ready",
        "frontmatter": {"$status": "ready", "plan": "Fix it", "repoPath": "/r"},
        "body": "The body.",
    }
    assert proc.stderr == ""


def test_graph_by_name_from_the_graphs_folder(workdir: Path) -> None:
    proc = run(workdir, "--graph", "graph", "--role", "planner", "valid.md")
    assert proc.returncode == 0, proc.stderr


def test_invalid_reply_exits_1_with_one_error_per_line(workdir: Path) -> None:
    proc = run(workdir, "--graph", "graph", "--role", "planner", "invalid.md")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "error: status 'ready': field 'plan' must be of type string, got integer (5); "
        "write it in double quotes to make it text",
        "error: status 'ready': field 'repoPath' is required (status 'ready' requires: plan, "
        "repoPath)",
    ]


@pytest.mark.parametrize("file_args", [["-"], []])
def test_reply_from_stdin(workdir: Path, file_args: list[str]) -> None:
    proc = run(workdir, "--graph", "graph", "--role", "planner", *file_args, stdin=VALID.encode())
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "ready"


def test_status_only(workdir: Path) -> None:
    proc = run(workdir, "--graph", "graph", "--role", "planner", "--status-only", "valid.md")
    assert (proc.returncode, proc.stdout) == (0, "ready\n")
    proc = run(workdir, "--graph", "graph", "--role", "planner", "--status-only", "invalid.md")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("error: ")


def test_single_exit_and_suspend(workdir: Path) -> None:
    proc = run(
        workdir, "--graph", "graph", "--role", "summarizer", "-", stdin=b"---\nsummary: s\n---\n"
    )
    assert json.loads(proc.stdout) == {"status": "_", "frontmatter": {"summary": "s"}, "body": ""}
    suspend = b"---\n$status: $SUSPEND\nreason: need a key\n---\n"
    proc = run(workdir, "--graph", "graph", "--role", "planner", "--status-only", stdin=suspend)
    assert (proc.returncode, proc.stdout) == (0, "$SUSPEND\n")


def test_crlf_bom_and_unicode_bytes(workdir: Path) -> None:
    reply = "\ufeff---\r\n$status: ready\r\nplan: café ✓\r\nrepoPath: /r\r\n---\r\nbody\r\n"
    (workdir / "messy.md").write_bytes(reply.encode("utf-8"))
    proc = run(workdir, "--graph", "graph", "--role", "planner", "messy.md")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["frontmatter"]["plan"] == "café ✓" and data["body"] == "body"


def test_unknown_role_exits_2_with_a_suggestion(workdir: Path) -> None:
    proc = run(workdir, "--graph", "graph", "--role", "planer", "valid.md")
    assert proc.returncode == 2
    assert "no role 'planer'" in proc.stderr and "did you mean 'planner'?" in proc.stderr


def test_bad_graph_exits_2_with_problems(workdir: Path) -> None:
    (workdir / "graphs" / "broken.yaml").write_text("name: broken\nroles: [\n")
    proc = run(workdir, "--graph", "broken", "--role", "planner", "valid.md")
    assert proc.returncode == 2
    assert "broken.yaml:" in proc.stderr and "error[" in proc.stderr


def test_missing_graph_exits_2(workdir: Path) -> None:
    proc = run(workdir, "--graph", "nope", "--role", "planner", "valid.md")
    assert proc.returncode == 2
    assert "no graph named 'nope'" in proc.stderr


def test_unreadable_reply_exits_2(workdir: Path) -> None:
    proc = run(workdir, "--graph", "graph", "--role", "planner", "missing.md")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: cannot read missing.md")
    (workdir / "latin1.md").write_bytes("---\n$status: caf\xe9\n---\n".encode("latin-1"))
    proc = run(workdir, "--graph", "graph", "--role", "planner", "latin1.md")
    assert proc.returncode == 2
    assert "not UTF-8" in proc.stderr


def test_missing_required_options_is_a_usage_error(workdir: Path) -> None:
    proc = run(workdir, "--role", "planner", "valid.md")
    assert proc.returncode == 2
    assert "--graph" in proc.stderr
