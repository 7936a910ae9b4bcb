"""The `human` actor: a person plays the role.

In a terminal it shows the prompt, the allowed statuses and their fields, asks for a status and
each field, and returns the answer as a reply text, which is validated like any reply (an invalid
answer is shown its errors and asked again). Without a terminal it raises `HumanNeeded`: the
thread waits until `orchestrator threads answer` supplies the reply. Ctrl-C during the
interview leaves the thread waiting for the same answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

from ..definition.yamlpos import typed_value
from ..extract import format_reply
from .base import ActReply, ActRequest, HumanNeeded

Ask = Callable[[str], str]
T = TypeVar("T")


async def _in_daemon_thread(work: Callable[[], T]) -> T:
    """Run blocking terminal I/O off the event loop, in a thread that never blocks exit.

    Ctrl-C then reaches the event loop at once (the interview is interrupted, the thread
    waits for its answer) instead of waiting for `input()` to return; an executor thread would
    keep the process alive until the person pressed Enter.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(outcome: Callable[[], object]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            loop.call_soon_threadsafe(lambda: done.done() or outcome())

    def run() -> None:
        try:
            result = work()
        except BaseException as exc:  # EOFError, KeyboardInterrupt: handed to the loop
            error = exc
            settle(lambda: done.set_exception(error))
        else:
            settle(lambda: done.set_result(result))

    threading.Thread(target=run, name="human-interview", daemon=True).start()
    return await done


class HumanActor:
    kind = "human"

    def __init__(
        self,
        *,
        interactive: bool = False,
        ask: Ask | None = None,
        show: Callable[[str], object] = print,
    ):
        self.interactive = interactive
        self.ask = ask
        self.show = show

    async def play(self, request: ActRequest) -> ActReply:
        if self.ask is not None:
            return ActReply(text=self.interview(request, self.ask), message=request.prompt)
        if not (self.interactive and sys.stdin.isatty()):
            raise HumanNeeded(request.role_name)
        text = await _in_daemon_thread(lambda: self.interview(request, input))
        return ActReply(text=text, message=request.prompt)

    def interview(self, request: ActRequest, ask: Ask) -> str:
        """Ask for the answer on this terminal (`ask` reads a line); the reply text."""
        contract = request.role.contract
        show = self.show
        show(f"\n== step {request.step}: you play '{request.role_name}' ==")
        show(request.prompt)
        for attempt in request.attempts:
            show("Your previous answer was not accepted:")
            for error in attempt.errors:
                show(f"  - {error}")
        statuses = contract.status_names
        if contract.single_exit:
            status = "_"
        else:
            show("Statuses: " + ", ".join(statuses))
            status = ""
            while status not in statuses:
                status = ask("status> ").strip()
        spec = contract.for_status(status)
        fields: dict[str, object] = {}
        if spec is not None:
            for name in sorted(spec.required) + sorted(spec.optional):
                optional = name in spec.optional
                value = ask(f"{name}{' (optional, Enter to skip)' if optional else ''}> ")
                if value or not optional:
                    fields[name] = typed_value(value, spec.field_schemas.get(name))
        body = ask("notes (optional)> ")
        return format_reply(None if contract.single_exit else status, fields, body)
