"""`threads fork` and `threads diff` on the command line (docs/format.md section 20): the fork
runs like a resume, lineage shows in `threads list` and `show` (and their `--json`), the diff
says step by step what differs, a refusal is one clear line and writes nothing, and the
fork's recording carries `forked_from`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from orchestrator.cli import cli
from tests.fork_project import make_project


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ORCHESTRATOR_HOME", str(tmp_path / "store"))
    (tmp_path / "ws").mkdir()
    monkeypatch.chdir(tmp_path / "ws")
    return tmp_path


def orch(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def ids() -> list[str]:
    out = orch("threads", "list", "--json").stdout
    return [json.loads(line)["id"] for line in out.splitlines() if line]


def test_fork_diff_and_lineage(home: Path) -> None:
    graph = make_project(home / "project")
    assert orch("run", str(graph), "--input", "task=owls").exit_code == 0
    (original,) = ids()

    forked = orch(
        "threads", "fork", original, "--at", "2", "--status", "changes",
        "--set", "notes=shorter", "--set", "tone=gentle", "--json",
    )  # fmt: skip
    assert forked.exit_code == 0, forked.stderr
    last = json.loads(forked.stdout.splitlines()[-1])
    assert last["state"] == "completed" and last["steps"] == 4
    fork = last["thread"]
    assert f"thread {fork} forked from {original}" in forked.stderr

    table = orch("threads", "list").stdout
    assert f"forked from {original} at step 2" in table.splitlines()[2]
    rows = [
        json.loads(line) for line in orch("threads", "list", "--json").stdout.split("\n") if line
    ]
    assert [r.get("forked_from") for r in rows] == [None, {"thread": original, "step": 2}]

    shown = orch("threads", "show", original).stdout
    assert f"fork {fork} at step 2" in shown
    data = json.loads(orch("threads", "show", fork, "--json").stdout)
    assert data["forked_from"] == {"thread": original, "step": 2} and data["forks"] == []

    diff = orch("threads", "diff", original, fork)
    assert diff.exit_code == 0
    assert diff.stdout.splitlines() == [
        f"A {original}",
        f"B {fork}",
        "first difference at step 2",
        'step 1: same  writer -> drafted  draft: "draft v1"',
        "step 2: status, fields differ",
        '  A reviewer -> approved  tone: "plain"',
        '  B reviewer -> changes  notes: "shorter", tone: "gentle"',
        'step 3: only in B  editor -> _  edit: "Edit: shorter"',
        'step 4: only in B  reviewer -> approved  tone: "plain"',
        "end: same  completed (done)",
    ]
    as_json = json.loads(orch("threads", "diff", original, fork, "--json").stdout)
    assert as_json["first_difference"] == 2
    assert [s["differs"] for s in as_json["steps"]] == [
        [],
        ["status", "fields"],
        ["step"],
        ["step"],
    ]

    exported = orch("threads", "export", fork)
    assert exported.exit_code == 0
    assert f"forked_from:\n  thread: {original}\n  step: 2" in exported.stdout


@pytest.mark.parametrize(
    ("args", "says", "code"),
    [
        (["--at", "5"], "has no step 5 to fork at: it may be forked at steps 1 to 3", 2),
        (["--at", "2", "--status", "rejected"], "step 2 (reviewer)", 1),
        (["--at", "2", "--status", "changes", "--set", "tone=x"], "notes", 1),
        (["--reply", "-", "--status", "changes"], "either --reply or --status/--set", 2),
    ],
)
def test_refusals_are_clear_and_write_nothing(
    home: Path, args: list[str], says: str, code: int
) -> None:
    graph = make_project(home / "project")
    assert orch("run", str(graph), "--input", "task=owls").exit_code == 0
    (original,) = ids()
    refused = orch("threads", "fork", original, *args)
    assert refused.exit_code == code, refused.output
    assert says in refused.stderr and "Traceback" not in refused.output
    assert ids() == [original]


@pytest.mark.parametrize("option", [("--model", "sonnet"), ("--max-steps", "3")])
def test_a_fork_on_temporal_refuses_options_it_would_not_take(
    home: Path, option: tuple[str, str]
) -> None:
    """A fork on Temporal keeps the original's settings: an option it cannot honour is said,
    before any server is reached (the address here answers nothing), not silently dropped."""
    got = orch("threads", "fork", "t-1", "--temporal", "127.0.0.1:1", *option)
    assert got.exit_code == 2
    assert "not taken by a fork on Temporal" in got.output
