"""One scrubbing module for the shell tool, the command actor and tool results (tools/scrub.py)."""

from __future__ import annotations

import asyncio
import base64
import sys
from pathlib import Path

import pytest

from orchestrator.actors.base import ActorError, ActRequest
from orchestrator.actors.command import CommandProcessActor, scrubbed_environment
from orchestrator.definition.models import Role
from orchestrator.tools import ToolBox, Workspace
from orchestrator.tools.scrub import REDACTED, Secrets, is_secret_name, safe_environment
from orchestrator.tools.shell import Shell

KEY = "sk-ant-test-SECRET-0123456789abcdef"


def test_names_and_values() -> None:
    assert is_secret_name("DB_PASSWD") and is_secret_name("anthropic_base_url")
    env = {
        "PATH": "/bin",
        "ANTHROPIC_API_KEY": KEY,
        "MY_CONFIG": f"https://host/?k={KEY}",
        "REVERSED": KEY[::-1],
        "DB_PASSWD": "hunter2hunter2",
        "HARMLESS": "yes",
    }
    assert safe_environment(env) == {"PATH": "/bin"}  # an allow-list
    # Names a role lists under `env:` pass, but never a provider's key nor a value holding one.
    named = ["HARMLESS", "DB_PASSWD", "MY_CONFIG", "REVERSED", "ANTHROPIC_API_KEY"]
    assert safe_environment(env, passed=named) == {
        "PATH": "/bin",
        "HARMLESS": "yes",
        "DB_PASSWD": "hunter2hunter2",
    }


def test_a_credentials_file_path_is_not_a_credential() -> None:
    """GOOGLE_APPLICATION_CREDENTIALS names a file: hiding every piece of its path would drop
    PATH (it shares the home folder) and garble every output that mentions the home folder."""
    env = {
        "PATH": "/home/alice/.local/bin:/bin",
        "GOOGLE_APPLICATION_CREDENTIALS": "/home/alice/c.json",
    }
    assert safe_environment(env) == {"PATH": env["PATH"]}


def test_command_actor_uses_the_same_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("MY_CONFIG", f"url?k={KEY}")
    monkeypatch.setenv("DB_PASSWD", "hunter2hunter2")
    env = scrubbed_environment()
    assert "MY_CONFIG" not in env and "DB_PASSWD" not in env and "ANTHROPIC_API_KEY" not in env


@pytest.mark.parametrize(
    "leak",
    [
        KEY,
        KEY[::-1],
        base64.b64encode(KEY.encode()).decode(),
        base64.b64encode(b"ANTHROPIC_API_KEY=" + KEY.encode() + b"\0PATH=/bin").decode(),
        base64.b64encode(b"X=" + KEY.encode()).decode(),
        base64.urlsafe_b64encode(b"XY=" + KEY[::-1].encode()).decode(),
        KEY[:20],
        KEY[7:25],
        KEY[::-1][:15],
    ],
)
def test_redacts_the_key_its_forms_and_fragments(leak: str) -> None:
    secrets = Secrets([KEY])
    out = secrets.redact(f"before {leak} after")
    assert REDACTED in out and out.startswith("before ") and out.endswith(" after")
    for i in range(len(KEY) - 11):
        assert KEY[i : i + 12] not in out


def test_leaves_ordinary_text_alone() -> None:
    text = "sk-ant is a prefix; SECRET and 0123 alone are fine\n" * 3
    assert Secrets([KEY]).redact(text) == text
    assert Secrets([]).redact(KEY) == KEY  # nothing to hide


def test_a_cut_cannot_leave_a_prefix() -> None:
    secrets = Secrets([KEY])
    assert secrets.redact_cut("output: " + KEY[:6]) == "output: " + REDACTED
    assert secrets.redact_cut("output: " + KEY[:3]) == "output: " + KEY[:3]  # too short to tell


def test_shell_redacts_before_cutting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The output limit falls inside the key: not even its first characters are shown."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    (tmp_path / "k").write_text(KEY)
    shell = Shell(Workspace(tmp_path), max_output=100, sandbox="off")
    text, _ = asyncio.run(shell.run({"command": "printf 'A%.0s' $(seq 1 95); cat k; echo"}))
    assert "output cut" in text and "sk-an" not in text and KEY[:5] not in text


def test_tool_results_redact_before_cutting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    (tmp_path / "long.txt").write_text("x" * 290 + KEY + "\n")
    box = ToolBox(tmp_path, ["read"])
    text, err = asyncio.run(box.run("search_files", {"pattern": "x+"}))
    assert not err and KEY[:10] not in text and "sk-ant" not in text


def test_command_actor_redacts_reply_and_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    role = Role(description="d", goal="g", frontmatter={}, sandbox="off")
    request = ActRequest(
        thread_id="T", step=1, role_name="r", role=role, prompt="p", workspace=tmp_path
    )
    leak = f"print({KEY!r}); print({KEY[::-1]!r}); print({KEY[:20]!r})"
    reply = asyncio.run(CommandProcessActor([sys.executable, "-c", leak]).play(request))
    assert KEY[:12] not in reply.text and KEY[::-1][:12] not in reply.text
    fail = f"import sys; sys.stderr.write({KEY!r} + '\\n'); sys.exit(3)"
    with pytest.raises(ActorError) as err:
        asyncio.run(CommandProcessActor([sys.executable, "-c", fail]).play(request))
    assert "status 3" in err.value.message and KEY[:12] not in err.value.message
