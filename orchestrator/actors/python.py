"""The `python` actor: a Python function plays the role (docs/actors.md).

    actor: {python: "picker:next_task"}

The function (sync or async) receives one `ActorCall` and returns the reply: its text, or a
mapping of frontmatter fields (`$status` among them when the role has statuses) with the body
under `$body`. The reply is validated like any other; an invalid one is sent back once per
repair with the errors in `call.attempts`, so a function that cannot do better should raise.
An exception suspends the step with its type and message (the reason stays one line: the person
resumes once the cause is fixed); its traceback, redacted like a reply, is kept beside the reason
for `threads show --full` and `--json`. A sync function runs in a worker thread, so the thread's lease keeps
being renewed while it works. A replay never calls the function: recorded replies stand in.

The module is imported from the graph's folder (or from the installed packages) by
`orchestrator.definition.pyref`, which keeps one graph's modules out of the next graph's way.
"""

from __future__ import annotations

import asyncio
import inspect
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.events import SuspendKind
from ..definition.pyref import PyRefError, load
from ..definition.reserved import SINGLE_EXIT
from ..extract import format_reply
from ..tools.scrub import Secrets
from .base import ActorError, ActReply, ActRequest, Attempt, HistoryItem

BODY_KEY = "$body"


@dataclass(frozen=True)
class ActorCall:
    """What a Python actor is told about its step. Everything is plain data: keep it or not.

    `history` holds the steps committed since this role last spoke (all steps on its first
    visit), oldest first; `attempts` the rejected replies of this step and their errors (empty
    unless the previous reply was invalid).
    """

    role: str  # the role's name in the graph
    prompt: str  # the rendered edge prompt: the instruction for this step
    inputs: dict[str, Any]  # the thread's inputs
    workspace: Path  # the step's folder (the thread's workspace, or the edge's location in it)
    step: int  # the step's number in the thread, from 1
    thread_id: str
    graph: str  # the graph's name
    history: tuple[HistoryItem, ...] = ()
    attempts: tuple[Attempt, ...] = ()
    statuses: tuple[str, ...] = ()  # the statuses the role's frontmatter allows

    def latest(self, role: str) -> HistoryItem | None:
        """The most recent step of `role` in `history`, if any."""
        return next((item for item in reversed(self.history) if item.role == role), None)

    @classmethod
    def of(cls, request: ActRequest) -> ActorCall:
        return cls(
            role=request.role_name,
            prompt=request.prompt,
            inputs=dict(request.inputs),
            workspace=request.workspace,
            step=request.step,
            thread_id=request.thread_id,
            graph=request.graph_name,
            history=request.history,
            attempts=request.attempts,
            statuses=tuple(s for s in request.role.contract.statuses if s != SINGLE_EXIT),
        )


class PythonActor:
    kind = "python"

    def __init__(self, ref: str, folder: str | None):
        self.ref = ref
        self.folder = folder

    async def play(self, request: ActRequest) -> ActReply:
        try:
            function = load(self.ref, self.folder)
        except PyRefError as exc:
            raise ActorError(
                f"role {request.role_name!r}: python actor {self.ref}: {exc.message}",
                SuspendKind.CONFIG,
            ) from None
        call = ActorCall.of(request)
        secrets = Secrets.from_environment()
        try:
            if inspect.iscoroutinefunction(function):
                result = await function(call)
            else:
                result = await asyncio.to_thread(function, call)
                if inspect.isawaitable(result):  # a sync wrapper around a coroutine
                    result = await result
        except ActorError:
            raise
        except Exception as exc:  # the function's own failure: the step suspends with it
            raise ActorError(
                secrets.redact(f"{self.ref} raised {type(exc).__name__}: {exc}"),
                SuspendKind.ACTOR,
                detail=secrets.redact(traceback_text(exc)),
            ) from None
        # Redacted like a command actor's output: a credential never reaches the store.
        return ActReply(text=secrets.redact(reply_text(self.ref, result)), message=request.prompt)


TRACEBACK_CHARS = 20_000  # a deep recursion's traceback: its end, where the error is


def traceback_text(exc: BaseException) -> str:
    """The function's traceback, from its own frames down (this module's frame left out), its
    causes included; a very long one keeps its end."""
    text = "".join(
        traceback.format_exception(
            type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None
        )
    )
    if len(text) > TRACEBACK_CHARS:
        text = "[… cut]\n" + text[-TRACEBACK_CHARS:]
    return text


def reply_text(ref: str, result: object) -> str:
    """A function's result as a reply text: a string as it is, a mapping as frontmatter."""
    if isinstance(result, str):
        return result
    if isinstance(result, Mapping):
        fields = {str(k): v for k, v in result.items() if k != BODY_KEY}
        body = result.get(BODY_KEY, "")
        try:
            return format_reply(None, fields, body if isinstance(body, str) else str(body))
        except Exception as exc:  # a value YAML cannot write (an object, a set)
            raise ActorError(
                f"{ref} returned fields that cannot be written as YAML: {exc}", SuspendKind.ACTOR
            ) from None
    raise ActorError(
        f"{ref} returned {type(result).__name__}; return the reply text or a mapping of "
        "frontmatter fields (with the body under $body)",
        SuspendKind.ACTOR,
    )
