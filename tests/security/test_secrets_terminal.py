"""A role never sees a secret, and never rewrites what a person sees (docs/security.md).

Each attack beside a control that shows the test can see the attack succeed:

- a child's environment is an allow-list: the shell tool's commands and a command actor (under
  bubblewrap and the unshare fallback) see no DB_PASS, DATABASE_URL, GITHUB_PAT, NPM_AUTH,
  proxy with a password or API key; the control names them under the role's `env:` and sees
  them (and PATH, LANG always);
- a base URL with `user:password@` that fails: the password is in no suspend reason, event,
  `threads show` or `--json`; the host and port are;
- `-i KEY=@FILE`: a link to /proc/self/environ, /dev/zero, a FIFO and an 11 MB file are refused
  (at once, nothing stored); a regular file and a link to one are read;
- an input holding the API key is refused naming the input; other text is taken;
- on a pseudo-terminal, a reply's ESC/OSC/CSI sequences never reach the terminal raw (`run`
  and `threads show`); the same bytes printed by a plain `print` do.
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from orchestrator.actors.base import ActRequest
from orchestrator.actors.command import CommandProcessActor
from orchestrator.cli.terminal import neutralise
from orchestrator.definition.models import McpServer, Role, Sandbox
from orchestrator.testing.fake_anthropic import FakeAnthropic
from orchestrator.tools import Workspace, mcp_client
from orchestrator.tools.scrub import redact_url_credentials
from orchestrator.tools.shell import Shell
from tests.cli_helpers import LOOP_GRAPH, Project

KEY = "sk-ant-test-SECRET-terminal-0123456789"
SECRETS = {
    "DB_PASS": "db-pass-value-771",
    "DATABASE_URL": "postgres://app:dbsecret99@db.internal/app",
    "GITHUB_PAT": "ghp_patvalue0123456789",
    "NPM_AUTH": "npm-auth-value-5511",
    "https_proxy": "http://proxyuser:proxypw99@proxy.internal:3128",
    "ANTHROPIC_API_KEY": KEY,
}
NAMED = "ROLE_NAMED_SETTING"


@pytest.fixture
def mechanism(mechanism: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The suite's sandbox mechanism, with the secrets and the role's named variable set."""
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv(NAMED, "visible-to-the-role")
    monkeypatch.setenv("LANG", "C.UTF-8")
    return mechanism


def names_in(text: str) -> set[str]:
    return {line.split("=", 1)[0] for line in text.splitlines() if "=" in line}


# ---------------------------------------------------------------------- the environment


def shell_env(tmp_path: Path, passed: tuple[str, ...]) -> str:
    shell = Shell(Workspace(tmp_path), sandbox=Sandbox(), passed=passed)
    text, is_error = asyncio.run(shell.run({"command": "env"}))
    assert not is_error, text
    return text


def test_the_shell_tool_gets_an_allow_list(mechanism: str, tmp_path: Path) -> None:
    seen = names_in(shell_env(tmp_path, (NAMED,)))
    assert not seen & set(SECRETS), seen
    assert {"PATH", "LANG", NAMED} <= seen  # the control: the allow-list and the role's env:


def test_control_the_shell_tool_shows_what_a_role_names(mechanism: str, tmp_path: Path) -> None:
    """Named under `env:`, the same variables reach the command: the probe can see them. A
    provider's key never does."""
    seen = names_in(shell_env(tmp_path, tuple(SECRETS)))
    assert set(SECRETS) - {"ANTHROPIC_API_KEY"} <= seen
    assert "ANTHROPIC_API_KEY" not in seen


def actor_env(tmp_path: Path, env: list[str]) -> str:
    role = Role(description="d", goal="g", frontmatter={}, env=env)
    request = ActRequest(
        thread_id="T", step=1, role_name="probe", role=role, prompt="p", workspace=tmp_path
    )
    probe = "import os\nfor k in sorted(os.environ): print(k + '=x')"
    reply = asyncio.run(CommandProcessActor([sys.executable, "-c", probe]).play(request))
    return reply.text


def test_a_command_actor_gets_an_allow_list(mechanism: str, tmp_path: Path) -> None:
    seen = names_in(actor_env(tmp_path, [NAMED]))
    assert not seen & set(SECRETS), seen
    assert {"PATH", "LANG", NAMED} <= seen


def test_control_a_command_actor_shows_what_a_role_names(mechanism: str, tmp_path: Path) -> None:
    seen = names_in(actor_env(tmp_path, [n for n in SECRETS if n != "ANTHROPIC_API_KEY"]))
    assert set(SECRETS) - {"ANTHROPIC_API_KEY"} <= seen


def test_a_provider_key_under_env_is_refused_at_load() -> None:
    with pytest.raises(ValidationError, match="ANTHROPIC_API_KEY is a model provider's key"):
        Role(description="d", goal="g", frontmatter={}, env=["ANTHROPIC_API_KEY"])
    for name in ("OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "GOOGLE_APPLICATION_CREDENTIALS"):
        with pytest.raises(ValidationError):
            Role(description="d", goal="g", frontmatter={}, env=[name])
    assert Role(description="d", goal="g", frontmatter={}, env=["DB_PASS"]).env == ["DB_PASS"]


def test_an_mcp_server_gets_an_allow_list_and_never_a_provider_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    env = mcp_client._environment(McpServer(command=["srv"], env={"DB": "${DATABASE_URL}"}))
    assert not set(env) & set(SECRETS) and env["DB"] == SECRETS["DATABASE_URL"]  # named: passed
    with pytest.raises(mcp_client.ServerFailed, match="provider's key"):
        mcp_client._environment(McpServer(command=["srv"], env={"K": "${ANTHROPIC_API_KEY}"}))


# ---------------------------------------------------------------------- URL credentials

MODEL_GRAPH = """
name: ask
description: One model-played role.
roles:
  asker:
    description: Asks
    goal: You answer.
    frontmatter:
      type: object
      properties: { $status: { const: done } }
      required: [$status]
graph:
  $START:
    _: { role: asker, prompt: "Answer {{{$inputs.task}}}" }
  asker:
    done: { role: $END, prompt: "Done." }
"""


def test_a_base_url_password_is_never_shown_or_stored(tmp_path: Path) -> None:
    with FakeAnthropic() as fake:  # started and stopped: its port now refuses connections
        port = fake.url.rsplit(":", 1)[1].strip("/")
    project = Project(tmp_path)
    project.graph(MODEL_GRAPH, "ask")
    env = {
        **project.env(),
        "ANTHROPIC_API_KEY": KEY,
        "ANTHROPIC_BASE_URL": f"http://alice:hunter2pw@127.0.0.1:{port}",
    }

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            project.cmd(*args), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )

    run = cli("run", "ask", "x", "--json")
    assert run.returncode == 3, run.stderr
    result = json.loads(run.stdout.splitlines()[-1])
    thread_id = result.get("thread_id") or result["thread"]
    shown = [run.stdout + run.stderr]
    for args in (("threads", "show", thread_id), ("threads", "show", thread_id, "--json")):
        out = cli(*args)
        assert out.returncode in (0, 3), out.stderr
        shown.append(out.stdout + out.stderr)
    reason = [e for e in project.events(thread_id) if e["type"] == "ThreadSuspended"][-1]["reason"]
    assert f"127.0.0.1:{port}" in reason and "***@" in reason  # the control: the URL is quoted
    for text in shown:
        assert "hunter2pw" not in text and "alice" not in text
        assert f"127.0.0.1:{port}" in text
    for path in project.store.rglob("*"):
        if path.is_file():
            assert b"hunter2pw" not in path.read_bytes(), path


def test_url_credentials_are_redacted_by_shape() -> None:
    text = "at https://u:p%40ss@host:1/x and ssh://tok@h, not mail@example.com"
    assert (
        redact_url_credentials(text)
        == "at https://***@host:1/x and ssh://***@h, not mail@example.com"
    )


# ---------------------------------------------------------------------- -i KEY=@FILE


def loop_project(tmp_path: Path) -> Project:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    project.script(worker=["---\n$status: done\nnote: read\n---\n"])
    return project


@pytest.mark.parametrize("kind", ["proc-link", "dev-zero", "fifo", "too-big", "sys"])
def test_an_input_file_that_is_not_a_small_regular_file_is_refused(
    tmp_path: Path, kind: str
) -> None:
    project = loop_project(tmp_path)
    target = tmp_path / "input"
    if kind == "proc-link":
        target.symlink_to("/proc/self/environ")
    elif kind == "dev-zero":
        target = Path("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "too-big":
        target.write_bytes(b"a" * 11_000_000)
    else:
        target = Path("/sys/kernel/uevent_seqnum")
    started = time.monotonic()
    out = project.run("run", "loop", "-i", f"task=@{target}", timeout=60)
    assert out.returncode == 2, out.stderr
    assert time.monotonic() - started < 30  # at once: no FIFO hang, no endless read
    assert f"-i task=@{target}" in out.stderr and "Traceback" not in out.stderr
    assert not project.store.exists() or project.threads() == []


@pytest.mark.parametrize("kind", ["fifo", "proc-link"])
def test_a_batch_file_that_is_not_a_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    project = loop_project(tmp_path)
    batch = tmp_path / "batch.jsonl"
    if kind == "fifo":
        os.mkfifo(batch)
    else:
        batch.symlink_to("/proc/self/environ")
    out = project.run("run", "loop", "--batch", str(batch), timeout=60)
    assert out.returncode == 2, out.stderr
    assert str(batch) in out.stderr and "Traceback" not in out.stderr
    good = tmp_path / "good.jsonl"  # the control: a regular batch file runs
    good.write_text('{"task": "one"}\n')
    assert project.run("run", "loop", "--batch", str(good)).returncode == 0


@pytest.mark.parametrize("link", [False, True])
def test_control_a_regular_file_and_a_link_to_one_are_read(tmp_path: Path, link: bool) -> None:
    project = loop_project(tmp_path)
    path = tmp_path / "issue.md"
    path.write_text("the issue text")
    if link:
        (tmp_path / "issue-link").symlink_to(path)
        path = tmp_path / "issue-link"
    out = project.run("run", "loop", "-i", f"task=@{path}")
    assert out.returncode == 0, out.stderr
    started = [
        e for e in project.events(project.threads()[0]["id"]) if e["type"] == "ThreadStarted"
    ]
    assert started[0]["inputs"] == {"task": "the issue text"}


# ---------------------------------------------------------------------- inputs with secrets


def test_an_input_holding_the_key_is_refused_naming_it(tmp_path: Path) -> None:
    project = loop_project(tmp_path)
    env = {**project.env(), "ANTHROPIC_API_KEY": KEY}
    for given in (f"use {KEY} please", f"prefix {KEY[4:24]}"):  # the key, or a long piece
        out = subprocess.run(
            project.cmd("run", "loop", "-i", f"task={given}"),
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 2, out.stderr
        assert "input 'task' contains the value of ANTHROPIC_API_KEY" in out.stderr
        assert KEY[4:24] not in out.stderr
    assert not project.store.exists() or project.threads() == []
    control = subprocess.run(
        project.cmd("run", "loop", "-i", "task=ordinary text"),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert control.returncode == 0, control.stderr


def test_the_python_api_refuses_it_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator import run_thread
    from orchestrator.run.preflight import InputError

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    project = loop_project(tmp_path)
    graph = project.root / "graphs" / "loop.yaml"
    with pytest.raises(InputError, match="input 'task' contains the value of ANTHROPIC_API_KEY"):
        run_thread(graph, {"task": KEY}, store=tmp_path / "api-store")


def test_an_input_holding_a_urls_password_or_a_token_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from orchestrator.run.preflight import InputError, refuse_secrets

    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PIP_KEYRING_PROVIDER", "disabled")  # secret-named, but no credential
    with pytest.raises(InputError, match="input 'notes.1' contains the value of https_proxy"):
        refuse_secrets({"notes": ["fine", "the proxy password is proxypw99"]})
    with pytest.raises(InputError, match="contains the value of GITHUB_PAT"):
        refuse_secrets({"task": "token ghp_patvalue0123456789"})
    refuse_secrets({"task": "proxy.internal is disabled; db.internal too"})  # the control


# ---------------------------------------------------------------------- the terminal

PAYLOAD = "\x1b]0;pwned\x07 \x1b[2J \x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\ \x9b31m"
RAW = [b"\x1b]0;pwned", b"\x1b[2J", b"\x1b]8;;http://evil", b"\xc2\x9b31m", b"\x07"]
YAML_PAYLOAD = (
    "\\e]0;pwned\\a \\e[2J \\e]8;;http://evil.example/\\e\\\\click\\e]8;;\\e\\\\ \\x9b31m"
)


def on_pty(argv: list[str], cwd: Path, env: dict[str, str], seconds: float = 90) -> bytes:
    """Everything `argv` writes to a pseudo-terminal (stdout and stderr), until it exits."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower
    )
    os.close(follower)
    screen = b""
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                try:
                    data = os.read(leader, 65536)
                except OSError:
                    break
                if not data:
                    break
                screen += data
            elif proc.poll() is not None:
                break
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(leader)
    return screen


def assert_no_raw_sequence(screen: bytes) -> None:
    for raw in RAW:
        assert raw not in screen, (raw, screen)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_a_replys_escapes_never_reach_the_terminal(tmp_path: Path) -> None:
    project = loop_project(tmp_path)
    reply = f'---\n$status: done\nnote: "{YAML_PAYLOAD}"\n---\nbody {PAYLOAD}\n'
    project.script(worker=[reply])
    env = {**project.env(), "TERM": "xterm-256color"}
    screen = on_pty(project.cmd("run", "loop", "x"), tmp_path, env)
    assert b"Finished:" in screen, screen
    assert_no_raw_sequence(screen)
    assert b"^[]0;pwned^G" in screen  # shown, harmless
    thread_id = project.threads()[0]["id"]
    screen = on_pty(project.cmd("threads", "show", thread_id), tmp_path, env)
    assert b"pwned" in screen, screen
    assert_no_raw_sequence(screen)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_control_the_pty_sees_raw_escapes_printed_plainly(tmp_path: Path) -> None:
    script = f"import sys; sys.stdout.write({PAYLOAD!r}); sys.stdout.flush()"
    screen = on_pty([sys.executable, "-c", script], tmp_path, dict(os.environ))
    for raw in RAW:
        assert raw in screen, raw


def test_neutralise_keeps_text_and_shows_controls() -> None:
    assert neutralise("a\tb\nc — ünïcode [link=x]") == "a\tb\nc — ünïcode [link=x]"
    assert neutralise("\x1b[2J\x07\x7f\x9b\r\n") == "^[[2J^G^?\\u009b\n"
    assert not any(ch in neutralise(PAYLOAD) for ch in "\x1b\x07\x9b")
