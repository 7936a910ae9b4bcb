"""`FakeAnthropic`: the script of a fake Messages API endpoint, and the endpoint's life.

A test queues `FakeResponse`s (or sets `handler(body) -> FakeResponse` for the requests after
the queue) and reads back the requests the client sent. With neither a queued response nor a
handler, a request gets a 400 that says the script ran out (the SDK does not retry a 400).
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from typing import Any

from .caching import PromptCache, prompt_tokens
from .responses import FakeResponse, Handler, RecordedRequest
from .server import MessagesServer


class FakeAnthropic:
    """A fake Messages API on 127.0.0.1: `with FakeAnthropic() as server:`, then `server.url`."""

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        min_cache_tokens: int = 0,
        chunk_size: int = 24,
        max_prompt_tokens: int | None = None,
    ):
        self.handler = handler
        # A request whose prompt counts more tokens than this is refused with the API's 400
        # "prompt is too long" (the model's context window), before any scripted response.
        self.max_prompt_tokens = max_prompt_tokens
        self.chunk_size = chunk_size
        self.requests: list[RecordedRequest] = []
        self._cache = PromptCache(min_cache_tokens)
        self._queue: deque[FakeResponse] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: MessagesServer | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> FakeAnthropic:
        self._server = MessagesServer(self)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
        self._server = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeAnthropic is not started")
        return self._server.url

    # ------------------------------------------------------------------ scripting

    def reply(self, *responses: FakeResponse) -> FakeAnthropic:
        with self._lock:
            self._queue.extend(responses)
        return self

    def reply_text(self, text: str, **kw: Any) -> FakeAnthropic:
        return self.reply(FakeResponse.text(text, **kw))

    def reply_tool_use(
        self, name: str, input: dict[str, Any], *, id: str | None = None, text: str | None = None
    ) -> FakeAnthropic:
        return self.reply(FakeResponse.tool_use(name, input, id=id, text=text))

    def reply_tool_uses(self, calls: list[tuple[str, dict[str, Any]]]) -> FakeAnthropic:
        """One assistant turn with several tool_use blocks (parallel tool calls)."""
        blocks = [{"type": "tool_use", "id": None, "name": n, "input": i} for n, i in calls]
        return self.reply(FakeResponse(content=blocks, stop_reason="tool_use"))

    def fail(
        self,
        status: int = 529,
        times: int = 1,
        message: str | None = None,
        retry_after: float | None = 0.001,
    ) -> FakeAnthropic:
        return self.reply(
            *(FakeResponse.error(status, message, retry_after=retry_after) for _ in range(times))
        )

    def cut_stream(self, text: str = "---\n$status: ready\nplan: half of") -> FakeAnthropic:
        """A streamed reply whose connection drops in the middle of the text."""
        return self.reply(FakeResponse.text(text, fault="cut"))

    def malformed(self) -> FakeAnthropic:
        return self.reply(FakeResponse(fault="malformed"))

    def empty(self) -> FakeAnthropic:
        return self.reply(FakeResponse(content=[], fault="empty"))

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def message_requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the POST /v1/messages requests, in arrival order."""
        with self._lock:
            return [r.body for r in self.requests if r.path.startswith("/v1/messages")]

    # ------------------------------------------------------------------ prompt caching

    @property
    def min_cache_tokens(self) -> int:
        """A prefix shorter than this is not cached."""
        return self._cache.min_tokens

    @min_cache_tokens.setter
    def min_cache_tokens(self, value: int) -> None:
        self._cache.min_tokens = value

    def clear_cache(self) -> None:
        self._cache.clear()

    def usage_for(self, body: dict[str, Any], output_text: str) -> dict[str, int]:
        """Simulated usage of a request, updating the prompt cache as the real API would."""
        return self._cache.usage(body, output_text)

    # ------------------------------------------------------------------ the server's backend

    def next_response(self, body: dict[str, Any]) -> FakeResponse:
        limit = self.max_prompt_tokens
        if limit is not None and (tokens := prompt_tokens(body)) > limit:
            return FakeResponse.error(400, f"prompt is too long: {tokens} tokens > {limit} maximum")
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.handler is not None:
            return self.handler(body)
        return FakeResponse.error(
            400,
            "FakeAnthropic: no scripted response left for this request "
            "(queue one with reply_text/reply_tool_use, or set a handler)",
        )

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def new_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}_fake_{next(self._ids):04d}"
