"""`actor: claude-code`: the real Claude Code CLI plays a role in a real thread, offline.

The CLI is the one the Claude Agent SDK's wheel bundles (or `claude` on PATH), started by the SDK
as in production; its model calls go to the project's fake Messages API through
ANTHROPIC_BASE_URL, so nothing needs the internet or a real key. The fake scripts what "the
model" says: a tool call Claude Code then really runs in the workspace, then the reply.
Without the `claude-code` extra these tests skip, except in CI, where .ci/run installs it.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from orchestrator import run_thread
from orchestrator.actors.claude_code import claude_tools, find_cli, removed_variables
from orchestrator.core.events import StepCommitted
from orchestrator.store.sqlite import SqliteStore
from tests.anthropic_fixtures import TEST_KEY, fake_server

try:
    import claude_agent_sdk  # noqa: F401  (only asks whether the extra is installed)

    MISSING = None if find_cli() else "no `claude` command (neither on PATH nor in the SDK)"
except ImportError:
    MISSING = "the `claude-code` extra is not installed (pip install -e '.[claude-code]')"
if MISSING and os.environ.get("CI"):
    raise RuntimeError(f"{MISSING}; CI runs the Claude Code tests, never skips them")
pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")

MODEL = "claude-haiku-4-5-20251001"
OTHER_SECRET = "ghp_not-a-real-github-token-5c2e91"


def graph(name: str, tools: str) -> str:
    return textwrap.dedent(
        f"""\
        name: {name}
        description: Claude Code does one thing
        roles:
          coder:
            description: Writes code
            goal: You are the coder of this graph; you change files as asked.
            actor: claude-code
            model: {MODEL}
            tools: {tools}
            frontmatter:
              type: object
              properties:
                $status: {{const: done}}
                summary: {{type: string}}
              required: [$status, summary]
        graph:
          $START:
            _: {{role: coder, prompt: "{{{{{{$inputs.task}}}}}}"}}
          coder:
            done: {{role: $END, prompt: "{{{{{{summary}}}}}}"}}
        """
    )


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace, a fresh home (Claude Code writes its config there) and a stray secret."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("GITHUB_TOKEN", OTHER_SECRET)
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "code.yaml").write_text(graph("code", "[read, edit]"))
    (tmp_path / "shell.yaml").write_text(graph("shell", "[shell]"))
    return ws


def committed(store: SqliteStore, thread_id: str) -> list[StepCommitted]:
    return [e.event for e in store.events(thread_id) if isinstance(e.event, StepCommitted)]


def test_claude_code_edits_the_workspace_and_its_reply_is_routed(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SqliteStore(tmp_path / "store")
    with fake_server(monkeypatch) as fake:
        fake.reply_tool_use("Write", {"file_path": str(project / "hello.py"), "content": "X = 1\n"})
        fake.reply_text("---\n$status: done\nsummary: wrote hello.py\n---\nDone.")
        result = run_thread(
            tmp_path / "code.yaml",
            {"task": "Write hello.py"},
            store=store,
            workspace=project,
            in_place=True,
        )
        requests = fake.message_requests
    assert result.state.value == "completed", result.reason
    assert result.final == "wrote hello.py"
    assert (project / "hello.py").read_text() == "X = 1\n"  # Claude Code's Write tool ran
    first = requests[0]
    assert first["model"] == MODEL  # the role's model
    # The role's goal and reply format are appended to Claude Code's own system prompt.
    system = json.dumps(first["system"])
    assert "You are the coder of this graph" in system and "$status" in system
    assert "Write hello.py" in json.dumps(first["messages"])
    offered = {t["name"] for t in first.get("tools", [])}
    assert {"Read", "Edit", "Write"} <= offered
    assert "Bash" not in offered and "WebFetch" not in offered  # only the role's tool sets
    # The tool result went back to the model: Claude Code ran the loop, not us.
    assert "tool_result" in json.dumps(requests[1]["messages"])
    (step,) = committed(store, result.thread_id)
    assert step.model == MODEL and step.tool_calls == 1
    assert step.cost_usd > 0 and step.usage.get("output_tokens", 0) > 0  # into the ledger


def test_claude_code_gets_no_secret_but_its_own(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Bash command Claude Code runs sees its environment: the stray token is not in it."""
    store = SqliteStore(tmp_path / "store")
    with fake_server(monkeypatch) as fake:
        url = fake.url
        fake.reply_tool_use("Bash", {"command": "env > env.txt", "description": "env"})
        fake.reply_text("---\n$status: done\nsummary: listed the environment\n---\nDone.")
        result = run_thread(
            tmp_path / "shell.yaml",
            {"task": "Show the environment"},
            store=store,
            workspace=project,
            in_place=True,
        )
    assert result.state.value == "completed", result.reason
    seen = (project / "env.txt").read_text()
    assert OTHER_SECRET not in seen and "GITHUB_TOKEN" not in seen
    assert TEST_KEY not in seen  # Claude Code has its key; the commands it runs do not
    assert "ORCHESTRATOR_ROLE=coder" in seen
    assert f"ANTHROPIC_BASE_URL={url}" in seen  # what Claude Code needs to reach its model
    # Nothing of the key reaches the store.
    for path in (tmp_path / "store").rglob("*"):
        if path.is_file():
            assert TEST_KEY.encode() not in path.read_bytes()


def test_a_claude_code_error_suspends_the_thread(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with fake_server(monkeypatch) as fake:
        fake.fail(400, times=12, message="this model does not exist")  # never retried
        result = run_thread(
            tmp_path / "code.yaml",
            {"task": "Write hello.py"},
            store=SqliteStore(tmp_path / "store"),
            workspace=project,
            in_place=True,
        )
    assert result.state.value == "suspended"
    assert "Claude Code" in (result.reason or "")
    assert "Traceback" not in (result.reason or "")


def test_without_the_sdk_the_step_suspends_saying_how_to_install_it(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "claude_agent_sdk", None)  # as if not installed
    with fake_server(monkeypatch):
        result = run_thread(
            tmp_path / "code.yaml",
            {"task": "Write hello.py"},
            store=SqliteStore(tmp_path / "store"),
            workspace=project,
            in_place=True,
        )
    assert result.state.value == "suspended"
    assert "pip install '.[claude-code]'" in (result.reason or "")


def test_tool_sets_and_secret_names() -> None:
    assert claude_tools(["read"]) == ["Read", "Glob", "Grep", "LS"]
    assert claude_tools(["edit", "shell"]) == ["Edit", "Write", "MultiEdit", "NotebookEdit", "Bash"]
    env = {"PATH": "/bin", "GITHUB_TOKEN": "x" * 20, "ANTHROPIC_API_KEY": "k" * 20}
    env["ECHO"] = "k" * 20  # holds the key's value under another name
    assert removed_variables(env) == ["ECHO", "GITHUB_TOKEN"]


def test_a_claude_that_fails_to_start_suspends_with_its_own_words(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The `claude` on PATH comes first: here one that cannot log in and says so."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stand_in = bin_dir / "claude"
    stand_in.write_text(
        '#!/bin/sh\necho "Invalid API key $ANTHROPIC_API_KEY [$GITHUB_TOKEN]" >&2\n'
        'echo "please run /login" >&2\nexit 1\n'
    )
    stand_in.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK", "1")
    assert find_cli() == str(stand_in)
    with fake_server(monkeypatch):
        result = run_thread(
            tmp_path / "code.yaml",
            {"task": "Write hello.py"},
            store=SqliteStore(tmp_path / "store"),
            workspace=project,
            in_place=True,
        )
    assert result.state.value == "suspended"
    reason = result.reason or ""
    assert "Claude Code failed" in reason and "please run /login" in reason
    assert "Traceback" not in reason
    assert "[]" in reason and OTHER_SECRET not in reason  # the stray token never reached it
    assert TEST_KEY not in reason and "[redacted]" in reason  # its own key is redacted
