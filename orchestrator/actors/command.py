"""The `command` actor: an external agent process plays the role (docs/format.md section 3).

The process gets the whole prompt on stdin (the role's system prompt, the visit message and,
when repairing, its rejected reply and the errors) and writes its reply on stdout. It runs in the
step's workspace with a timeout; a non-zero exit or a timeout suspends the thread with the
process's own words (the tail of its stderr).

Secrets and confinement (`orchestrator.tools.scrub`, `orchestrator.tools.sandbox`): the process
gets an allow-list environment (PATH, HOME, LANG, LC_*, TERM, TZ, USER, TMPDIR and the names the
role lists under `env:`, never a provider's key); its reply and its
stderr are redacted of the orchestrator's credentials before they are stored or shown; and it
runs in the role's sandbox: its own PID namespace and `/proc`, the filesystem read-only outside
the workspace and the role's `sandbox: writable:` paths (an agent's config folder), network on
unless the role says `network: false`; inside the workspace, the thread's boundary
(`tools/boundary.py`) keeps git metadata and the orchestrator's own files read-only or hidden.
A failure says "inside the sandbox", since there a file the process needs may be out of sight.
When no sandbox can be made the step suspends saying so, unless the role says `sandbox: off`. The process dies with the orchestrator (PR_SET_PDEATHSIG,
kept through the sandbox), and a timeout kills its whole process group and sandbox. The
sandbox's limits (`tools/limits.py`) bound its processes, memory and disk; a process stopped by
one suspends the step with a sentence naming the limit and the `sandbox:` key that raises it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from ..tools import sandbox as sandboxing
from ..tools.scrub import Secrets, safe_environment
from .base import ActorError, ActReply, ActRequest
from .prompting import repair_message, system_prompt, visit_message


def scrubbed_environment(passed: Iterable[str] = ()) -> dict[str, str]:
    """The allow-list environment, plus the `passed` names (the role's `env:`)."""
    return safe_environment(passed=passed)


def compose_prompt(request: ActRequest) -> str:
    parts = [system_prompt(request.role, request.role_name), visit_message(request)]
    for attempt in request.attempts:
        parts.append("Your previous reply was:\n\n" + attempt.reply)
        parts.append(repair_message(attempt.errors, request.role))
    return "\n\n---\n\n".join(parts)


class CommandProcessActor:
    kind = "command"

    def __init__(self, argv: list[str], *, timeout: float = 600.0):
        self.argv = list(argv)
        self.timeout = timeout

    async def play(self, request: ActRequest) -> ActReply:
        secrets = Secrets.from_environment()
        prompt = compose_prompt(request)
        env = scrubbed_environment(request.role.env)
        env.update(
            ORCHESTRATOR_THREAD_ID=request.thread_id,
            ORCHESTRATOR_ROLE=request.role_name,
            ORCHESTRATOR_STEP=str(request.step),
            ORCHESTRATOR_ATTEMPT=str(len(request.attempts) + 1),
        )
        name = self.argv[0]
        if not _runnable(name, env.get("PATH"), request.workspace):
            raise ActorError(f"cannot start `{name}`: no such executable", "process")
        policy = sandboxing.policy_for(request.role.sandbox, agent=True)
        if policy is None:
            sandboxing.warn_unsandboxed(request.role_name, "agent process")
        try:
            async with sandboxing.started(
                self.argv,
                workspace=request.workspace,
                policy=policy,
                boundary=request.boundary,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
            ) as proc:
                out, err = await self._communicate(proc, prompt, name)
                hit = sandboxing.limit_hit(proc, err[-8000:].decode(errors="replace"))
        except sandboxing.SandboxUnavailable as exc:
            raise ActorError(
                f"role {request.role_name!r} was not started: {exc}", "sandbox"
            ) from None
        except sandboxing.CannotStart as exc:
            where = " inside the sandbox" if policy is not None else ""
            raise ActorError(f"cannot start `{name}`{where}: {exc}", "process") from None
        if proc.returncode != 0:
            # Redact the whole of stderr before keeping its tail: a cut cannot show a prefix.
            tail = secrets.redact(err.decode(errors="replace")).strip().splitlines()[-5:]
            detail = (": " + " / ".join(tail)) if tail else ""
            where = " inside the sandbox" if policy is not None else ""
            said = f"`{name}` exited with status {proc.returncode}{where}{detail}"
            raise ActorError(said + (f" ({hit})" if hit else ""), "process")
        return ActReply(
            text=secrets.redact(out.decode(errors="replace")), message=secrets.redact(prompt)
        )

    async def _communicate(
        self, proc: asyncio.subprocess.Process, prompt: str, name: str
    ) -> tuple[bytes, bytes]:
        """The process's output once it has ended; killed on timeout (and, by `started`, when
        cancelled)."""
        try:
            return await asyncio.wait_for(proc.communicate(prompt.encode()), self.timeout)
        except TimeoutError:
            sandboxing.kill_group(proc)
            await proc.wait()
            raise ActorError(
                f"`{name}` did not answer within {self.timeout:g} s and was stopped", "timeout"
            ) from None


def _runnable(name: str, path: str | None, cwd: Path) -> bool:
    """Whether `name` can be executed: checked before the sandbox, which would hide the cause."""
    if os.sep not in name:
        return shutil.which(name, path=path) is not None
    full = cwd / name
    return full.is_file() and os.access(full, os.X_OK)
