"""What a script is made of: the answers and faults the fake serves, and the requests it keeps."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Fault = Literal["cut", "malformed"]


@dataclass
class ChatResponse:
    """One scripted answer: text and tool calls, or an error status, or a fault."""

    text: str = ""
    # (name, arguments): a dict is sent as JSON; a string as it is (malformed arguments).
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    finish_reason: str | None = None  # default: tool_calls when there are some, else stop
    status: int = 200
    error_message: str | None = None
    fault: Fault | None = None
    usage: dict[str, Any] | None = None  # replaces the simulated usage when given
    delay: float = 0.0
    retry_after: float | None = 0.001  # seconds, sent as retry-after-ms on 429/5xx

    @property
    def finish(self) -> str:
        return self.finish_reason or ("tool_calls" if self.tool_calls else "stop")


Handler = Callable[[dict[str, Any]], ChatResponse]


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or None
    raw: bytes
