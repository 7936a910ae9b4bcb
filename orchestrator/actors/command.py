"""The `command` actor: an external agent process plays the role (FORMAT 3).

The process gets the whole prompt on stdin (the role's system prompt, the visit message and,
when repairing, its rejected reply and the errors) and writes its reply on stdout. It runs in the
step's workspace with a timeout and an environment without secrets; a non-zero exit or a timeout
suspends the thread with the process's own words (the tail of its stderr).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import sys

from .base import ActorError, ActReply, ActRequest

SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")


def scrubbed_environment() -> dict[str, str]:
    """The environment minus anything that looks like a secret (API keys, tokens, passwords)."""
    return {
        name: value
        for name, value in os.environ.items()
        if not any(marker in name.upper() for marker in SECRET_MARKERS)
    }


def compose_prompt(request: ActRequest) -> str:
    from ..prompting import repair_message, system_prompt, visit_message

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
        prompt = compose_prompt(request)
        env = scrubbed_environment()
        env.update(
            ORCHESTRATOR_THREAD_ID=request.thread_id,
            ORCHESTRATOR_ROLE=request.role_name,
            ORCHESTRATOR_STEP=str(request.step),
            ORCHESTRATOR_ATTEMPT=str(len(request.attempts) + 1),
        )
        name = self.argv[0]
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=str(request.workspace),
                env=env,
                start_new_session=True,
                preexec_fn=functools.partial(_die_with_parent, os.getpid()),
            )
        except OSError as exc:
            raise ActorError(f"cannot start `{name}`: {exc.strerror or exc}", "process") from None
        try:
            out, err = await asyncio.wait_for(proc.communicate(prompt.encode()), self.timeout)
        except TimeoutError:
            _kill(proc)
            await proc.wait()
            raise ActorError(
                f"`{name}` did not answer within {self.timeout:g} s and was stopped", "timeout"
            ) from None
        except asyncio.CancelledError:
            _kill(proc)
            raise
        if proc.returncode != 0:
            tail = err.decode(errors="replace").strip().splitlines()[-5:]
            detail = (": " + " / ".join(tail)) if tail else ""
            raise ActorError(f"`{name}` exited with status {proc.returncode}{detail}", "process")
        return ActReply(text=out.decode(errors="replace"), message=prompt)


def _die_with_parent(parent: int) -> None:
    """In the child: ask Linux to kill it if the orchestrator dies (no orphaned agents)."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)


def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
