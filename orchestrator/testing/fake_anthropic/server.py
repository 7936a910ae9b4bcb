"""The HTTP side of the fake: `POST /v1/messages` on 127.0.0.1, as plain JSON or as SSE.

`MessagesServer` listens on a free port and serves each connection on a thread of its own. It
checks what the real API checks first (the path, an API key, a JSON object body), records every
request, then asks its `Backend` (the `FakeAnthropic` that owns it) for the scripted response and
writes it the way the real API would: a JSON message, an SSE stream over chunked transfer
encoding, or an error body with `retry-after` headers; or it breaks the wire on purpose (a cut,
malformed JSON).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any, Protocol, cast

from ..loopback import LoopbackHandler, LoopbackServer, shutdown_connection
from .responses import ERROR_MESSAGES, ERROR_TYPES, FakeResponse, RecordedRequest
from .sse import encode_event, sse_events


class Backend(Protocol):
    """What the server asks of the fake that owns it."""

    chunk_size: int  # characters per SSE delta

    def record(self, request: RecordedRequest) -> None: ...

    def next_response(self, body: dict[str, Any]) -> FakeResponse: ...

    def new_id(self, prefix: str) -> str: ...

    def usage_for(self, body: dict[str, Any], output_text: str) -> dict[str, int]: ...


class MessagesServer(LoopbackServer):
    """A running fake Messages API endpoint; `stop()` closes it and every open connection."""

    def __init__(self, backend: Backend, handler: type[LoopbackHandler] | None = None):
        # `handler`: another endpoint's routes over the same script (cloud.py: Bedrock, Vertex).
        super().__init__(backend, handler or _RequestHandler)


class _RequestHandler(LoopbackHandler):
    @property
    def _backend(self) -> Backend:
        return cast(Backend, self._http.backend)

    # ------------------------------------------------------------------ routes

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        self._backend.record(RecordedRequest("POST", self.path, headers, body, raw))
        if not self.path.split("?")[0].rstrip("/").endswith("/v1/messages"):
            self._error(FakeResponse.error(404, f"Not found: {self.path}"))
            return
        if not (headers.get("x-api-key") or headers.get("authorization")):
            self._error(FakeResponse.error(401, "x-api-key header is required"))
            return
        if not isinstance(body, dict):
            self._error(FakeResponse.error(400, "request body must be a JSON object"))
            return
        response = self._backend.next_response(body)
        if response.delay and self._http.stopping.wait(response.delay):
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
        self.send_header("request-id", self._backend.new_id("req"))
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
                block["id"] = self._backend.new_id("toolu")
            content.append(block)
        text = "".join(
            b.get("text", "") if b.get("type") == "text" else json.dumps(b.get("input"))
            for b in content
        )
        usage = response.usage or self._backend.usage_for(body, text)
        return {
            "id": self._backend.new_id("msg"),
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
        events = sse_events(message, self._backend.chunk_size)
        if response.fault == "pings":
            # Keep the connection busy with pings and never finish: each read succeeds, so
            # only an overall deadline on the call stops it.
            self._chunk(encode_event(*events[0]))
            while not self._http.stopping.wait(0.1):
                try:
                    self._chunk(encode_event("ping", {"type": "ping"}))
                except OSError:  # the client gave up and closed the connection
                    return
            return
        if response.fault == "cut":
            # Stop in the middle of the first content block's deltas and drop the connection
            # without the final chunk: the client sees an incomplete chunked body.
            deltas = [i for i, (name, _) in enumerate(events) if name == "content_block_delta"]
            stop_at = deltas[len(deltas) // 2] if deltas else 2
            for name, data in events[:stop_at]:
                self._chunk(encode_event(name, data))
            self._abort()
            return
        for name, data in events:
            self._chunk(encode_event(name, data))
        self._chunk(b"")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _abort(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.wfile.flush()
        shutdown_connection(self.connection)
