"""The error family (docs/format.md section 10, "Errors"): every public error is an
`OrchestratorError` with a message and a hint, keeps its old import path, survives pickling, and
is worded by one function."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import orchestrator
from orchestrator.actors.base import ActorError
from orchestrator.actors.recording import RecordingError, ReplayDivergence
from orchestrator.definition.model_config import ModelConfigError
from orchestrator.definition.problems import Problem
from orchestrator.errors import (
    GraphError,
    InputError,
    OrchestratorError,
    ProviderError,
    Refused,
    SessionError,
    StoreError,
    ThreadBusy,
    ThreadNotFound,
    WorkspaceError,
    word,
)
from orchestrator.extract import ExtractError
from orchestrator.mcp_server.confine import Refusal
from orchestrator.mcp_server.operations import OperationFailed
from orchestrator.run.batch import BatchInputError
from orchestrator.run.input_files import FileRefused
from orchestrator.tools.sandbox import SandboxUnavailable
from orchestrator.vcs.git_safe import WorktreeError, WorktreeTampered

PROBLEM = Problem("g.yaml", 3, 5, "unknown-role", "error", "no role 'x'", "did you mean 'y'?")

# Every public error, made as the code that raises it makes it, with its category.
EXAMPLES: list[tuple[OrchestratorError, type[OrchestratorError], str]] = [
    (GraphError([PROBLEM]), GraphError, "graph"),
    (InputError("input 'tsak' is not declared"), InputError, "inputs"),
    (BatchInputError("b.jsonl:2: not JSON"), InputError, "inputs"),
    (FileRefused("/dev/zero is not a regular file"), InputError, "inputs"),
    (RecordingError("r.yaml: not a recording"), InputError, "inputs"),
    (Refused("the thread is not waiting", ("status: required",)), Refused, "refused"),
    (Refusal("refused: /etc is not a graph folder"), Refused, "refused"),
    (OperationFailed("thread T is already running in this server"), Refused, "refused"),
    (SessionError("no credentials", usage=False), SessionError, "session"),
    (StoreError("the disk is full", "full"), StoreError, "store"),
    (ThreadBusy("thread T is being advanced by process 7"), StoreError, "store"),
    (ThreadNotFound("T"), StoreError, "store"),
    (ActorError("the provider is down", "provider"), ProviderError, "provider"),
    (
        ReplayDivergence("diverged", step=2, recorded_role="a", graph_role="b"),
        ProviderError,
        "provider",
    ),
    (ModelConfigError("models.yaml: line 2: not a mapping"), ProviderError, "provider"),
    (WorktreeError("git worktree add failed"), WorkspaceError, "workspace"),
    (WorktreeTampered("the worktree's .git moved"), WorkspaceError, "workspace"),
    (SandboxUnavailable("no bubblewrap"), WorkspaceError, "workspace"),
    (ExtractError(["no frontmatter"], None), OrchestratorError, "reply"),
]


@pytest.mark.parametrize(("error", "category", "code"), EXAMPLES, ids=lambda v: type(v).__name__)
def test_every_public_error_is_an_orchestrator_error_with_message_and_hint(
    error: OrchestratorError, category: type[OrchestratorError], code: str
) -> None:
    assert isinstance(error, OrchestratorError) and isinstance(error, category)
    assert isinstance(error.message, str) and error.message
    assert isinstance(error.hint, str)
    assert error.code == code
    wording = word(error)
    assert wording.expected and wording.code == code
    assert wording.text().startswith(error.message)


@pytest.mark.parametrize(("error", "category", "code"), EXAMPLES, ids=lambda v: type(v).__name__)
def test_every_error_survives_pickling_whole(
    error: OrchestratorError, category: type[OrchestratorError], code: str
) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert (copy.message, copy.hint, str(copy)) == (error.message, error.hint, str(error))
    assert word(copy) == word(error)


def test_the_family_is_exported_from_orchestrator_and_the_old_paths() -> None:
    for name in (
        "OrchestratorError",
        "GraphError",
        "InputError",
        "Refused",
        "SessionError",
        "StoreError",
        "ThreadBusy",
        "ThreadNotFound",
        "ProviderError",
        "WorkspaceError",
    ):
        assert name in orchestrator.__all__
        exported = getattr(orchestrator, name)
        assert issubclass(exported, OrchestratorError), name
    # The modules that defined them before the family still give the same classes.
    from orchestrator.core.outcomes import Refused as outcomes_refused
    from orchestrator.definition.problems import GraphError as problems_graph_error
    from orchestrator.run.preflight import InputError as preflight_input_error
    from orchestrator.run.session import SessionError as session_error
    from orchestrator.store.base import StoreError as base_store_error
    from orchestrator.store.base import ThreadBusy as base_busy
    from orchestrator.store.base import ThreadNotFound as base_not_found

    assert outcomes_refused is Refused and problems_graph_error is GraphError
    assert preflight_input_error is InputError and session_error is SessionError
    assert (base_store_error, base_busy, base_not_found) == (StoreError, ThreadBusy, ThreadNotFound)


def test_old_behaviours_kept() -> None:
    """What code written before the family relied on still holds."""
    graph = GraphError([PROBLEM, PROBLEM])
    assert str(graph).startswith("g.yaml:3:5: error[unknown-role]") and "(and 1 more)" in str(graph)
    assert graph.problems == [PROBLEM, PROBLEM]
    assert isinstance(InputError("x"), ValueError)  # it was a ValueError
    assert isinstance(RecordingError("x"), ValueError)
    assert ThreadNotFound("01ABC").thread_id == "01ABC"  # stores raise it with the id
    assert str(ThreadNotFound("01ABC")) == "no thread '01ABC'"  # what a person reads
    assert isinstance(ThreadNotFound("x"), SessionError)  # the session raised that for an id
    assert str(ExtractError(["a", "b"])) == "a\nb"
    assert SessionError("x", usage=False).usage is False
    assert ActorError("x", "rate-limit").kind == "rate-limit"


def test_usage_errors_are_the_requests_own() -> None:
    """Exit 2 on the command line: the request was wrong; exit 1: the world it met."""
    assert word(GraphError([PROBLEM])).usage_error
    assert word(ThreadNotFound("x")).usage_error
    assert word(Refused("the thread has ended")).usage_error
    assert not word(Refused("the answer was not taken", ("bad",))).usage_error
    assert not word(StoreError("full", "full")).usage_error
    assert not word(SessionError("no sandbox", usage=False)).usage_error


def test_the_wording_lists_details_and_the_hint() -> None:
    text = word(GraphError([PROBLEM])).text()
    assert text.splitlines() == [
        "the graph has problems",
        "  g.yaml:3:5: error[unknown-role]: no role 'x'",
        "      hint: did you mean 'y'?",
    ]
    refused = word(Refused("the answer was not taken", ("status: required", "why: too short")))
    assert refused.text() == "the answer was not taken\n  - status: required\n  - why: too short"
    missing = word(ThreadNotFound("T", "no thread 'T' in st", hint="see `threads list`"))
    assert missing.text() == "no thread 'T' in st\nhint: see `threads list`"
    assert missing.to_dict() == {
        "error": "store",
        "message": "no thread 'T' in st",
        "hint": "see `threads list`",
        "details": [],
    }


def test_an_unexpected_exception_is_worded_as_a_bug_without_its_traceback() -> None:
    def fails() -> Any:
        raise KeyError("role")

    try:
        fails()
    except KeyError as exc:
        wording = word(exc)
    assert not wording.expected and wording.code == "internal"
    assert wording.message == "orchestrator stopped on an unexpected error: KeyError: 'role'"
    assert "Traceback" not in wording.text() and "bug" in wording.hint
    # control: an error of the family is not a bug
    assert word(StoreError("full")).expected


def test_a_bug_in_a_command_shows_no_traceback_and_saves_it_in_a_file(tmp_path: Path) -> None:
    """The command line as a person runs it (`main`), with one command made to crash."""
    crash = (
        "import sys, click, orchestrator.cli.validate as v\n"
        "@click.command()\n"
        "def broken() -> None:\n"
        "    raise RuntimeError('the bug\\nsecond line')\n"
        "v.validate = broken\n"
        "from orchestrator.cli import main\n"
        "sys.argv = ['orchestrator', 'validate']\n"
        "main()\n"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    shown = subprocess.run(
        [sys.executable, "-c", crash], capture_output=True, text=True, env=env, timeout=60
    )
    assert shown.returncode == 1
    assert "Traceback" not in shown.stderr and "second line" not in shown.stderr
    assert shown.stderr.startswith(
        "error: orchestrator stopped on an unexpected error: RuntimeError: the bug\n"
    )
    saved = list(tmp_path.glob("orchestrator-crash-*.txt"))
    assert len(saved) == 1 and str(saved[0]) in shown.stderr
    assert "Traceback" in saved[0].read_text() and "second line" in saved[0].read_text()
    assert saved[0].stat().st_mode & 0o077 == 0  # the traceback may quote what a thread held
    # control: an error of the family from the same place is worded, and saves nothing
    family = crash.replace(
        "raise RuntimeError('the bug\\nsecond line')", "raise StoreError('disk full', 'full')"
    )
    family = "from orchestrator.errors import StoreError\n" + family
    worded = subprocess.run(
        [sys.executable, "-c", family], capture_output=True, text=True, env=env, timeout=60
    )
    assert (worded.returncode, worded.stderr) == (1, "error: disk full\n")
    assert len(list(tmp_path.glob("orchestrator-crash-*.txt"))) == 1
