"""Anthropic's bash client tool (`bash_20250124`, name `bash`), offered to roles with `shell`.

Each command runs as its own `bash -c` process in a new process group, with the workspace as
its working directory, stdin closed, stdout and stderr merged. There is no persistent session:
`cd` and `export` do not carry over (the system prompt says so), and `restart` is accepted and
does nothing, because every command already starts fresh.

- Timeout: a command that runs longer than `timeout` seconds (default 120) has its whole process
  group killed, and the result says so as an error.
- Output: cut to `max_output` characters (default 30,000) with a note saying how much was dropped;
  the rest is read and discarded so the process never blocks on a full pipe.
- Secrets: the environment is an allow-list (PATH, HOME, LANG, LC_*, TERM, TZ, USER, TMPDIR and
  the names the role lists under `env:`, never a provider's key nor a value holding one), and
  the output is redacted (credentials, their
  reversed and base64 forms, and long fragments of them) before it is cut (`scrub.py`).
- Sandbox: the command runs inside the role's sandbox (`sandbox.py`): its own PID namespace and
  `/proc`, the filesystem read-only outside the workspace and the role's `writable:` paths, no
  network unless the role's `sandbox: {network: true}`; inside the workspace the thread's
  boundary (`boundary.py`) keeps git metadata and the orchestrator's files read-only or hidden.
  When no sandbox can be made the tool refuses with an error result; `sandbox: off` runs the
  command unconfined, with a warning on the orchestrator's stderr.
- Limits: the sandbox bounds processes, memory and disk (`limits.py`); a command that hit one
  gets an error result that names the limit and the `sandbox:` key that raises it.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from ..definition.models import Sandbox
from . import sandbox as sandboxing
from .boundary import Boundary
from .scrub import Secrets, safe_environment
from .workspace import Workspace

TOOL_TYPE = "bash_20250124"
TOOL_NAME = "bash"
DEFAULT_TIMEOUT = 120.0
MAX_OUTPUT = 30_000

Result = tuple[str, bool]


def definition() -> dict[str, Any]:
    return {"type": TOOL_TYPE, "name": TOOL_NAME}


class Shell:
    def __init__(
        self,
        workspace: Workspace,
        timeout: float = DEFAULT_TIMEOUT,
        max_output: int = MAX_OUTPUT,
        extra_secrets: tuple[str, ...] = (),
        passed: tuple[str, ...] = (),
        sandbox: Sandbox | Literal["off"] | None = None,
        role_name: str = "",
        boundary: Boundary | None = None,
    ):
        self.workspace = workspace
        self.boundary = boundary
        self.timeout = timeout
        self.max_output = max_output
        self.extra_secrets = extra_secrets
        self.passed = passed  # the role's `env:` names
        self.secrets = Secrets.from_environment(extra=extra_secrets)
        self.policy = sandboxing.policy_for(sandbox, agent=False)
        self.role_name = role_name

    async def run(self, args: dict[str, Any]) -> Result:
        if args.get("restart"):
            return "The shell was restarted (every command runs in a fresh shell anyway).", False
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            return "`command` is required (or `restart: true`)", True
        if self.policy is None:
            sandboxing.warn_unsandboxed(self.role_name or "(unnamed)", "shell commands")
        kept = bytearray()
        dropped = 0
        timed_out = False
        hit: str | None = None
        try:
            async with sandboxing.started(
                ["bash", "-c", command],
                workspace=self.workspace.root,
                policy=self.policy,
                boundary=self.boundary,
                env=safe_environment(extra_secrets=self.extra_secrets, passed=self.passed),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            ) as proc:

                async def pump() -> None:
                    nonlocal dropped
                    assert proc.stdout is not None
                    while chunk := await proc.stdout.read(65536):
                        room = self.max_output * 4 - len(kept)  # bytes; cut again as text below
                        kept.extend(chunk[: max(room, 0)])
                        dropped += max(len(chunk) - max(room, 0), 0)
                    await proc.wait()

                try:
                    await asyncio.wait_for(pump(), timeout=self.timeout)
                except TimeoutError:  # (cancelled, `started` kills it)
                    timed_out = True
                    sandboxing.kill_group(proc)
                    await proc.wait()
                hit = sandboxing.limit_hit(proc, kept[-8000:].decode("utf-8", errors="replace"))
        except sandboxing.SandboxUnavailable as exc:
            return f"the command was not run: {exc}", True
        except sandboxing.CannotStart as exc:
            return f"could not start bash: {exc}", True
        text = kept.decode("utf-8", errors="replace")
        # Redact before cutting, so a cut cannot leave a prefix of a credential behind.
        text = self.secrets.redact_cut(text) if dropped else self.secrets.redact(text)
        cut = len(text) - self.max_output if len(text) > self.max_output else 0
        text = text[: self.max_output]
        if cut or dropped:
            more = f"{cut} more characters" if cut else ""
            more += (", " if cut and dropped else "") + (f"{dropped} more bytes" if dropped else "")
            text += f"\n… [output cut: {more}; narrow the command, e.g. with head or grep]"
        limit = f"\n[{hit}]" if hit else ""
        if timed_out:
            note = f"[command timed out after {self.timeout:g} s; its process group was killed]"
            return (text + "\n" + note + limit).strip(), True
        code = proc.returncode
        if not text.strip():
            text = "(no output)"
        if code:
            text += f"\n[exit code {code}]"
        return text + limit, hit is not None
