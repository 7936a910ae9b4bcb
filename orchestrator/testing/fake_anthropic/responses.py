"""What a script is made of: the answers and faults the fake serves, and the requests it records.

A `FakeResponse` is one scripted answer to one request: content blocks (text, tool_use) with a
stop reason, or an error status with the API's error body, or a fault on the wire (a stream cut
in the middle, malformed JSON, an empty reply), optionally after a delay.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Fault = Literal["cut", "malformed", "empty", "pings"]  # pings: a stream that never finishes

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "api_error",
    529: "overloaded_error",
}
ERROR_MESSAGES = {
    429: "Number of request tokens has exceeded your per-minute rate limit",
    500: "Internal server error",
    529: "Overloaded",
}


@dataclass
class FakeResponse:
    """One scripted answer: content blocks, or an error status, or a fault."""

    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = "end_turn"
    status: int = 200
    error_message: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering (latency, or to trip a client timeout)
    fault: Fault | None = None
    usage: dict[str, int] | None = None  # replaces the simulated usage when given
    retry_after: float | None = 0.001  # seconds, sent as retry-after-ms on 429/5xx

    @classmethod
    def text(cls, text: str, **kw: Any) -> FakeResponse:
        return cls(content=[{"type": "text", "text": text}], **kw)

    @classmethod
    def tool_use(
        cls, name: str, input: dict[str, Any], *, id: str | None = None, text: str | None = None
    ) -> FakeResponse:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        blocks.append({"type": "tool_use", "id": id, "name": name, "input": input})
        return cls(content=blocks, stop_reason="tool_use")

    @classmethod
    def error(cls, status: int, message: str | None = None, **kw: Any) -> FakeResponse:
        return cls(status=status, error_message=message, stop_reason=None, **kw)


Handler = Callable[[dict[str, Any]], FakeResponse]


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or None when the body was not JSON
    raw: bytes

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and bool(self.body.get("stream"))
