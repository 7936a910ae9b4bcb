"""`FakeOpenAI`: the script of a fake chat completions endpoint, and the endpoint's life."""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from typing import Any

from .responses import ChatResponse, Handler, RecordedRequest
from .server import ChatServer


class FakeOpenAI:
    """A fake chat completions API on 127.0.0.1: `with FakeOpenAI() as server:`, `server.url`."""

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        api_key: str | None = None,
        cost_per_token: float | None = None,
        chunk_size: int = 24,
        context_tokens: int | None = None,
    ):
        self.handler = handler
        self.api_key = api_key
        self.cost_per_token = cost_per_token
        self.chunk_size = chunk_size
        self.context_tokens = context_tokens  # longer prompts get "context_length_exceeded"
        self.requests: list[RecordedRequest] = []
        self._queue: deque[ChatResponse] = deque()
        self._prompts: list[str] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: ChatServer | None = None

    def start(self) -> FakeOpenAI:
        self._server = ChatServer(self)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
        self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The base URL a client is given (with `/v1`, as OpenAI's own)."""
        if self._server is None:
            raise RuntimeError("FakeOpenAI is not started")
        return f"{self._server.url}/v1"

    # ------------------------------------------------------------------ scripting

    def reply(self, *responses: ChatResponse) -> FakeOpenAI:
        with self._lock:
            self._queue.extend(responses)
        return self

    def reply_text(self, text: str, **kw: Any) -> FakeOpenAI:
        return self.reply(ChatResponse(text=text, **kw))

    def reply_tool_call(
        self, name: str, arguments: dict[str, Any] | str, *, text: str = ""
    ) -> FakeOpenAI:
        return self.reply(ChatResponse(text=text, tool_calls=[(name, arguments)]))

    def fail(self, status: int = 500, times: int = 1, message: str | None = None) -> FakeOpenAI:
        return self.reply(
            *(ChatResponse(status=status, error_message=message) for _ in range(times))
        )

    def cut_stream(self, text: str = "---\n$status: ready\nplan: half of") -> FakeOpenAI:
        return self.reply(ChatResponse(text=text, fault="cut"))

    def malformed(self) -> FakeOpenAI:
        return self.reply(ChatResponse(fault="malformed"))

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat completions requests, in arrival order."""
        with self._lock:
            return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    # ------------------------------------------------------------------ the server's backend

    def next_response(self, body: dict[str, Any]) -> ChatResponse:
        if self.context_tokens is not None and len(_prompt(body)) // 4 > self.context_tokens:
            return ChatResponse(
                status=400,
                error_message="This model's maximum context length is "
                f"{self.context_tokens} tokens (context_length_exceeded)",
            )
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.handler is not None:
            return self.handler(body)
        return ChatResponse(
            status=400,
            error_message="FakeOpenAI: no scripted response left for this request "
            "(queue one with reply_text/reply_tool_call, or set a handler)",
        )

    def usage_for(self, body: dict[str, Any], output: str) -> dict[str, Any]:
        """Simulated usage: the prompt's tokens, the prefix shared with an earlier one cached."""
        prompt = _prompt(body)
        with self._lock:
            shared = max((_common(prompt, p) for p in self._prompts), default=0)
            self._prompts = [*self._prompts[-49:], prompt]
        usage: dict[str, Any] = {
            "prompt_tokens": len(prompt) // 4,
            "completion_tokens": max(len(output) // 4, 1),
            "prompt_tokens_details": {"cached_tokens": shared // 4},
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if self.cost_per_token is not None:
            usage["cost"] = round(usage["total_tokens"] * self.cost_per_token, 10)
        return usage

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def new_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}-fake-{next(self._ids):04d}"


def _prompt(body: dict[str, Any]) -> str:
    return json.dumps([body.get("tools"), body.get("messages")], sort_keys=True)


def _common(a: str, b: str) -> int:
    """The length of the prefix two prompts share (a binary search over slices: fast in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low
