"""A Python actor's traceback is kept for `threads show --full` and `--json`, redacted.

Attack: the function's exception carries a credential (the Anthropic key) in its message, so the
traceback would carry it into the store and onto a terminal. Control: a marker that is not a
credential, in the same message, shows verbatim, so the test sees the traceback and would see
the key if redaction were switched off.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator import run_thread
from orchestrator.cli import cli
from orchestrator.core.events import ThreadSuspended, event_from_dict

KEY = "sk-ant-test-TRACEBACK-0123456789abcdef"
MARKER = "visible-marker-4242"

GRAPH = """\
name: raising
description: One Python step that fails.
roles:
  only:
    description: Fails
    goal: Fail.
    actor: { python: "failing:act" }
    frontmatter: { type: object }
graph:
  $START: { _: { role: only, prompt: "go" } }
  only: { _: { role: $END, prompt: "done" } }
"""

FAILING = f"""\
import os


def divide(n):
    return 1 / n


def act(call):
    token = os.environ["ANTHROPIC_API_KEY"]
    try:
        divide(0)
    except ZeroDivisionError as exc:
        raise RuntimeError(f"{MARKER} cannot divide with " + token) from exc
"""


@pytest.fixture
def failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "raising.yaml").write_text(GRAPH)
    (tmp_path / "g" / "failing.py").write_text(FAILING)
    store = tmp_path / "store"
    result = run_thread(
        tmp_path / "g" / "raising.yaml", {"task": "x"}, store=store, workspace=tmp_path
    )
    assert result.state == "suspended" and result.kind == "actor"
    return store, result.thread_id


def test_the_traceback_is_in_json_and_full_text_with_the_key_redacted(
    failed: tuple[Path, str],
) -> None:
    store, thread = failed
    runner = CliRunner()
    shown = runner.invoke(cli, ["threads", "show", thread, "--json", "--store", str(store)])
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.output)
    (suspended,) = [e for e in data["events"] if e["type"] == "ThreadSuspended"]
    detail = suspended["detail"]
    # control: the traceback is there, whole: both frames, the cause, the marker
    assert detail.startswith("Traceback (most recent call last):")
    assert "in divide" in detail and "ZeroDivisionError: division by zero" in detail
    assert f"RuntimeError: {MARKER} cannot divide with " in detail
    # attack: the key in the exception's message is not
    assert KEY not in detail and KEY not in shown.output
    assert "Traceback" not in (suspended["reason"] or "")  # the reason stays one line

    full = runner.invoke(cli, ["threads", "show", thread, "--full", "--store", str(store)])
    assert full.exit_code == 0, full.output
    assert "ZeroDivisionError: division by zero" in full.output and MARKER in full.output
    assert KEY not in full.output
    short = runner.invoke(cli, ["threads", "show", thread, "--store", str(store)])
    assert "ZeroDivisionError" not in short.output  # only --full prints it...
    assert f"threads show {thread} --full" in short.output  # ...and the short story says so


def test_the_key_is_nowhere_in_the_store(failed: tuple[Path, str]) -> None:
    store, thread = failed
    texts = []
    for path in sorted(store.rglob("*")):
        if path.is_file():
            texts.append(path.read_bytes())
    assert any(MARKER.encode() in t for t in texts) or _in_db(store, MARKER)  # control
    assert not any(KEY.encode() in t for t in texts)  # attack


def _in_db(store: Path, text: str) -> bool:
    for db in store.rglob("*.db"):
        with sqlite3.connect(db) as conn:
            for (name,) in conn.execute("select name from sqlite_master where type='table'"):
                for row in conn.execute(f"select * from {name}"):  # noqa: S608  (test tables)
                    if text in repr(row):
                        return True
    return False


def test_a_log_written_before_the_field_still_loads() -> None:
    old = {"type": "ThreadSuspended", "reason": "step 1 (a): boom", "kind": "actor", "step": 1}
    event = event_from_dict(old)
    assert isinstance(event, ThreadSuspended) and event.detail is None


FANNED = """\
name: fanned
description: Python branches, one of which fails.
inputs:
  type: object
  properties: { parts: { type: array, items: { type: string } } }
  required: [parts]
roles:
  worker:
    description: Works on a part
    goal: Work.
    actor: { python: "parts:work" }
    frontmatter: { type: object, properties: { done: { type: string } }, required: [done] }
  joiner:
    description: Joins
    goal: Join.
    actor: { python: "parts:join" }
    frontmatter: { type: object }
graph:
  $START:
    _:
      for_each: $inputs.parts
      as: part
      role: worker
      prompt: "{{{part}}}"
      join: { role: joiner, prompt: "joined" }
  joiner:
    _: { role: $END, prompt: "done" }
"""

PARTS = f"""\
import os


def work(call):
    if call.prompt == "b":
        raise ValueError("{MARKER} part b with " + os.environ["ANTHROPIC_API_KEY"])
    return {{"done": call.prompt}}


def join(call):
    return "ok"
"""


def test_a_failing_branch_keeps_its_traceback_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "fanned.yaml").write_text(FANNED)
    (tmp_path / "g" / "parts.py").write_text(PARTS)
    store = tmp_path / "store"
    result = run_thread(
        tmp_path / "g" / "fanned.yaml", {"parts": ["a", "b"]}, store=store, workspace=tmp_path
    )
    assert result.state == "suspended", result.reason
    runner = CliRunner()
    full = runner.invoke(
        cli, ["threads", "show", result.thread_id, "--full", "--store", str(store)]
    )
    assert full.exit_code == 0, full.output
    assert 'parts.py", line 6, in work' in full.output  # control: the traceback is shown
    assert f"ValueError: {MARKER} part b with [redacted]" in full.output
    assert KEY not in full.output  # attack
    data = json.loads(
        runner.invoke(
            cli, ["threads", "show", result.thread_id, "--json", "--store", str(store)]
        ).output
    )
    (failed,) = [e for e in data["events"] if e["type"] == "BranchFailed"]
    assert "Traceback (most recent call last):" in failed["detail"] and KEY not in failed["detail"]
