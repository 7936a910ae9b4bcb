"""A local fake of the Anthropic Messages API, for tests and benchmarks that use the real SDK.

The `anthropic` SDK speaks `httpx2`, which `respx`/`pytest-httpx` cannot intercept, so tests talk
to a real HTTP server on 127.0.0.1 instead. That also exercises what a mock would skip: the SDK's
retries and backoff, SSE parsing, connection handling and its error classes.

```python
with FakeAnthropic() as server:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-real-key")
    server.reply_tool_use("str_replace_based_edit_tool", {"command": "view", "path": "."})
    server.reply_text("---\\n$status: ready\\nplan: x\\n---\\nbody")
    server.fail(status=529, times=3)            # faults queue up like replies
    ...
    server.requests[0].body["system"]           # every request is recorded
```

What it implements (`POST /v1/messages`):
- plain JSON and, when the body says `"stream": true`, SSE shaped like the real API
  (`message_start`, `ping`, `content_block_start`/`_delta`/`_stop` with `text_delta` and
  `input_json_delta`, `message_delta` with `stop_reason` and cumulative usage, `message_stop`),
  over chunked transfer encoding;
- usage with simulated prompt caching: blocks are counted as `len(text) // 4` tokens; every block
  carrying `cache_control` stores the prefix up to it, and a later request whose prefix matches
  a stored one (checked at each breakpoint and up to 20 blocks before it, as the real API does)
  reports those tokens as `cache_read_input_tokens`, the rest up to its last breakpoint as
  `cache_creation_input_tokens`, and what follows as `input_tokens`;
- a script: a queue of `FakeResponse`s, then `handler(body) -> FakeResponse` when the queue is
  empty; with neither, a 400 that says the script ran out (not retried by the SDK);
- faults: error statuses with the API's error bodies and `retry-after-ms` (default 1 ms, so
  the SDK's retries are fast), latency, a stream cut in the middle, malformed JSON, empty content.

Requests are served concurrently (one thread per connection).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import socket
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Fault = Literal["cut", "malformed", "empty"]

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


Handler = Callable[[dict[str, Any]], FakeResponse]


class FakeAnthropic:
    def __init__(
        self,
        handler: Handler | None = None,
        *,
        min_cache_tokens: int = 0,
        chunk_size: int = 24,
    ):
        self.handler = handler
        self.min_cache_tokens = min_cache_tokens
        self.chunk_size = chunk_size
        self.requests: list[RecordedRequest] = []
        self._queue: deque[FakeResponse] = deque()
        self._cache: set[str] = set()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> FakeAnthropic:
        fake = self

        class _Bound(_RequestHandler):
            owner = fake

        server = _Server(("127.0.0.1", 0), _Bound)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        with self._lock:
            conns = list(self._connections)
        for conn in conns:
            _shutdown(conn)
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeAnthropic is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

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

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()

    # ------------------------------------------------------------------ serving

    def _next(self, body: dict[str, Any]) -> FakeResponse:
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

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _new_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}_fake_{next(self._ids):04d}"

    def usage_for(self, body: dict[str, Any], output_text: str) -> dict[str, int]:
        """Simulated usage of a request, updating the prompt cache as the real API would."""
        blocks = _prompt_blocks(body)
        hashes: list[str] = []
        digest = hashlib.sha256(str(body.get("model", "")).encode())
        for block in blocks:
            digest.update(block.key.encode())
            hashes.append(digest.copy().hexdigest())
        tokens = [b.tokens for b in blocks]
        breakpoints = [i for i, b in enumerate(blocks) if b.breakpoint]
        out = max(1, len(output_text) // 4)
        if not breakpoints:
            return _usage(sum(tokens), 0, 0, out)
        last = breakpoints[-1]
        with self._lock:
            read_upto = 0
            for bp in breakpoints:
                for j in range(bp, max(bp - 20, -1), -1):
                    if hashes[j] in self._cache:
                        read_upto = max(read_upto, j + 1)
                        break
            for bp in breakpoints:
                if sum(tokens[: bp + 1]) >= self.min_cache_tokens:
                    self._cache.add(hashes[bp])
        cache_read = sum(tokens[:read_upto])
        written = sum(tokens[read_upto : last + 1]) if read_upto <= last else 0
        if sum(tokens[: last + 1]) < self.min_cache_tokens:
            written = 0
        uncached = sum(tokens) - cache_read - written
        return _usage(uncached, written, cache_read, out)


def _usage(inp: int, created: int, read: int, out: int) -> dict[str, int]:
    return {
        "input_tokens": inp,
        "cache_creation_input_tokens": created,
        "cache_read_input_tokens": read,
        "output_tokens": out,
    }


@dataclass(frozen=True)
class _Block:
    key: str  # canonical JSON without cache_control: what a cached prefix is compared by
    tokens: int
    breakpoint: bool


def _block(item: Any, role: str) -> _Block:
    if isinstance(item, str):
        item = {"type": "text", "text": item}
    if not isinstance(item, dict):
        item = {"value": item}
    marked = item.get("cache_control") is not None
    clean = {k: v for k, v in item.items() if k != "cache_control"}
    key = role + ":" + json.dumps(clean, sort_keys=True, ensure_ascii=False)
    text = clean.get("text") if isinstance(clean.get("text"), str) else json.dumps(clean)
    return _Block(key, max(1, len(str(text)) // 4), marked)


def _prompt_blocks(body: dict[str, Any]) -> list[_Block]:
    """The request in the order the API caches it: tools, system, messages."""
    blocks = [_block(t, "tool") for t in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, str):
        blocks.append(_block(system, "system"))
    elif isinstance(system, list):
        blocks += [_block(b, "system") for b in system]
    for message in body.get("messages") or []:
        role = str(message.get("role", "user")) if isinstance(message, dict) else "user"
        content = message.get("content") if isinstance(message, dict) else message
        items = content if isinstance(content, list) else [content]
        blocks += [_block(b, role) for b in items]
    return blocks


def _shutdown(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The listen backlog. socketserver's default of 5 resets connections when many clients
    # connect at once (200 concurrent threads in bench/concurrency.py).
    request_queue_size = 1024

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout, cut stream) leaves a broken pipe behind: not news.
        import sys

        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    owner: FakeAnthropic
    timeout = 60  # an idle keep-alive connection is closed after this; stop() closes the rest

    def setup(self) -> None:
        super().setup()
        # Many small writes (SSE events): without TCP_NODELAY, Nagle's algorithm and delayed ACKs
        # add ~40 ms stalls that would make a benchmark measure the kernel, not the code.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.owner._lock:
            self.owner._connections.add(self.connection)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        with self.owner._lock:
            self.owner._connections.discard(self.connection)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # quiet: tests assert on recorded requests, not on stderr

    # ------------------------------------------------------------------ routes

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.owner._record(RecordedRequest("POST", self.path, headers, body, raw))
        if not self.path.split("?")[0].rstrip("/").endswith("/v1/messages"):
            self._error(FakeResponse.error(404, f"Not found: {self.path}"))
            return
        if not (headers.get("x-api-key") or headers.get("authorization")):
            self._error(FakeResponse.error(401, "x-api-key header is required"))
            return
        if not isinstance(body, dict):
            self._error(FakeResponse.error(400, "request body must be a JSON object"))
            return
        response = self.owner._next(body)
        if response.delay and self.owner._stopping.wait(response.delay):
            return
        if response.status >= 400:
            self._error(response)
        elif body.get("stream"):
            self._stream(body, response)
        else:
            self._json(body, response)

    def do_GET(self) -> None:
        self._error(FakeResponse.error(404, f"Not found: {self.path}"))

    # ------------------------------------------------------------------ responses

    def _send_head(self, status: int, content_type: str, extra: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("request-id", self.owner._new_id("req"))
        for name, value in extra.items():
            self.send_header(name, value)

    def _body(self, status: int, payload: bytes, extra: dict[str, str] | None = None) -> None:
        self._send_head(status, "application/json", extra or {})
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _error(self, response: FakeResponse) -> None:
        status = response.status
        kind = ERROR_TYPES.get(status, "api_error")
        message = response.error_message or ERROR_MESSAGES.get(status, kind)
        extra = dict(response.headers)
        if response.retry_after is not None and (status == 429 or status >= 500):
            extra.setdefault("retry-after-ms", str(max(int(response.retry_after * 1000), 1)))
            extra.setdefault("retry-after", str(int(response.retry_after)))
        if status == 400:
            extra.setdefault("x-should-retry", "false")
        payload = {"type": "error", "error": {"type": kind, "message": message}}
        self._body(status, json.dumps(payload).encode(), extra)

    def _message(self, body: dict[str, Any], response: FakeResponse) -> dict[str, Any]:
        content = []
        for block in response.content:
            block = dict(block)
            if block.get("type") == "tool_use" and not block.get("id"):
                block["id"] = self.owner._new_id("toolu")
            content.append(block)
        text = "".join(
            b.get("text", "") if b.get("type") == "text" else json.dumps(b.get("input"))
            for b in content
        )
        usage = response.usage or self.owner.usage_for(body, text)
        return {
            "id": self.owner._new_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-fake"),
            "content": content,
            "stop_reason": response.stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }

    def _json(self, body: dict[str, Any], response: FakeResponse) -> None:
        if response.fault == "malformed":
            self._body(
                200, b'{"id": "msg_broken", "type": "message", "content": [', response.headers
            )
            return
        message = self._message(body, response)
        payload = json.dumps(message).encode()
        if response.fault == "cut":
            self._send_head(200, "application/json", response.headers)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload[: len(payload) // 2])
            self._abort()
            return
        self._body(200, payload, response.headers)

    def _stream(self, body: dict[str, Any], response: FakeResponse) -> None:
        self._send_head(200, "text/event-stream", {"Cache-Control": "no-cache", **response.headers})
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if response.fault == "malformed":
            self._chunk(b"event: message_start\ndata: {not json\n\n")
            self._chunk(b"")
            return
        message = self._message(body, response)
        events = _sse_events(message, self.owner.chunk_size)
        if response.fault == "cut":
            # Stop in the middle of the first content block's deltas and drop the connection
            # without the final chunk: the client sees an incomplete chunked body.
            deltas = [i for i, (name, _) in enumerate(events) if name == "content_block_delta"]
            stop_at = deltas[len(deltas) // 2] if deltas else 2
            for name, data in events[:stop_at]:
                self._event(name, data)
            self._abort()
            return
        for name, data in events:
            self._event(name, data)
        self._chunk(b"")

    def _event(self, name: str, data: dict[str, Any]) -> None:
        self._chunk(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _abort(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.wfile.flush()
        _shutdown(self.connection)


def _sse_events(message: dict[str, Any], size: int) -> list[tuple[str, dict[str, Any]]]:
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start}),
        ("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(message["content"]):
        kind = block.get("type")
        if kind == "tool_use":
            head = {**block, "input": {}}
            raw = json.dumps(block.get("input", {}))
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(raw, size)]
        elif kind == "text":
            head = {"type": "text", "text": ""}
            text = block.get("text", "")
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(text, size)]
        else:
            head, deltas = block, []
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": head},
            )
        )
        events += [
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": usage,
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]
