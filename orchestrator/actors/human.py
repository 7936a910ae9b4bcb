"""The `human` actor: a person plays the role.

In a terminal it shows the prompt, the allowed statuses and their fields, asks for a status and
each field, and returns the answer as a reply text, which is validated like any reply (an invalid
answer is shown its errors and asked again). Without a terminal it raises `HumanNeeded`: the
thread waits until `orchestrator threads answer` supplies the reply.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from ..extract import format_reply
from ..spec.yamlpos import typed_value
from .base import ActReply, ActRequest, HumanNeeded

Ask = Callable[[str], str]


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
        ask = self.ask
        if ask is None:
            if not (self.interactive and sys.stdin.isatty()):
                raise HumanNeeded(request.role_name)
            ask = input
        return ActReply(text=self._interview(request, ask), message=request.prompt)

    def _interview(self, request: ActRequest, ask: Ask) -> str:
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
