"""Anthropic's bash client tool (`bash_20250124`, name `bash`), offered to roles with `shell`.

Each command runs as its own `bash -c` process in a new process group, with the workspace as
its working directory, stdin closed, stdout and stderr merged. There is no persistent session:
`cd` and `export` do not carry over (the system prompt says so), and `restart` is accepted and
does nothing, because every command already starts fresh.

- Timeout: a command that runs longer than `timeout` seconds (default 120) has its whole process
  group killed, and the result says so as an error.
- Output: cut to `max_output` characters (default 30,000) with a note saying how much was dropped;
  the rest is read and discarded so the process never blocks on a full pipe.
- Secrets: the environment is the orchestrator's own minus every variable whose name contains
  KEY, TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL (case-insensitive), every `ANTHROPIC_*`
  variable, and every variable whose value contains the Anthropic API key or auth token. A model's commands have no use for
  the orchestrator's credentials, and a prompt-injected command must not be able to print them.

The shell is not a sandbox: a command can still read files outside the workspace by absolute path.
Give a role `shell` only when it needs to run programs, and run untrusted work in a container.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping
from typing import Any

from .workspace import Workspace

TOOL_TYPE = "bash_20250124"
TOOL_NAME = "bash"
DEFAULT_TIMEOUT = 120.0
MAX_OUTPUT = 30_000
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
CREDENTIAL_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")

Result = tuple[str, bool]


def definition() -> dict[str, Any]:
    return {"type": TOOL_TYPE, "name": TOOL_NAME}


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return upper.startswith("ANTHROPIC_") or any(word in upper for word in SECRET_WORDS)


def secret_values(
    environ: Mapping[str, str] | None = None, extra: tuple[str, ...] = ()
) -> list[str]:
    """The credentials that must never reach a model: the Anthropic key and token, if set."""
    env = os.environ if environ is None else environ
    values = {env.get(name, "") for name in CREDENTIAL_VARIABLES} | set(extra)
    return sorted((v for v in values if len(v) >= 8), key=len, reverse=True)


def safe_environment(
    environ: Mapping[str, str] | None = None, extra_secrets: tuple[str, ...] = ()
) -> dict[str, str]:
    """The environment a tool process gets: secrets removed by name, credentials by value."""
    env = dict(os.environ if environ is None else environ)
    secrets = secret_values(env, extra_secrets)
    return {
        k: v for k, v in env.items() if not is_secret_name(k) and not any(s in v for s in secrets)
    }


class Shell:
    def __init__(
        self,
        workspace: Workspace,
        timeout: float = DEFAULT_TIMEOUT,
        max_output: int = MAX_OUTPUT,
        extra_secrets: tuple[str, ...] = (),
    ):
        self.workspace = workspace
        self.timeout = timeout
        self.max_output = max_output
        self.extra_secrets = extra_secrets

    async def run(self, args: dict[str, Any]) -> Result:
        if args.get("restart"):
            return "The shell was restarted (every command runs in a fresh shell anyway).", False
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            return "`command` is required (or `restart: true`)", True
        try:
            proc = await asyncio.create_subprocess_exec(
                "bash",
                "-c",
                command,
                cwd=self.workspace.root,
                env=safe_environment(extra_secrets=self.extra_secrets),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            return f"could not start bash: {exc.strerror or exc}", True
        assert proc.stdout is not None
        kept = bytearray()
        dropped = 0

        async def pump() -> None:
            nonlocal dropped
            assert proc.stdout is not None
            while chunk := await proc.stdout.read(65536):
                room = self.max_output * 4 - len(kept)  # bytes; cut again as text below
                kept.extend(chunk[: max(room, 0)])
                dropped += max(len(chunk) - max(room, 0), 0)
            await proc.wait()

        timed_out = False
        try:
            await asyncio.wait_for(pump(), timeout=self.timeout)
        except TimeoutError:
            timed_out = True
            _kill_group(proc.pid)
            await proc.wait()
        except asyncio.CancelledError:
            _kill_group(proc.pid)
            raise
        text = kept.decode("utf-8", errors="replace")
        cut = len(text) - self.max_output if len(text) > self.max_output else 0
        text = text[: self.max_output]
        if cut or dropped:
            more = f"{cut} more characters" if cut else ""
            more += (", " if cut and dropped else "") + (f"{dropped} more bytes" if dropped else "")
            text += f"\n… [output cut: {more}; narrow the command, e.g. with head or grep]"
        if timed_out:
            note = f"[command timed out after {self.timeout:g} s; its process group was killed]"
            return (text + "\n" + note).strip(), True
        code = proc.returncode
        if not text.strip():
            text = "(no output)"
        if code:
            text += f"\n[exit code {code}]"
        return text, False


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
