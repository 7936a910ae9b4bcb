"""The HTTP side of the fake: `POST /v1/chat/completions` on 127.0.0.1, as JSON or as SSE.

Each connection is served on a thread of its own. The server checks what a real one checks
first (the path, a bearer token, a JSON object body), records the request, asks the `FakeOpenAI`
that owns it for the scripted answer, and writes it as a `chat.completion`, as SSE chunks, or
as an error body with `retry-after-ms`; or breaks the wire on purpose.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from typing import Any, Protocol, cast

from ..loopback import LoopbackHandler, LoopbackServer
from .responses import ChatResponse, RecordedRequest


class Backend(Protocol):
    """What the server asks of the fake that owns it (`FakeOpenAI`)."""

    api_key: str | None
    chunk_size: int

    def record(self, request: RecordedRequest) -> None: ...

    def next_response(self, body: dict[str, Any]) -> ChatResponse: ...

    def usage_for(self, body: dict[str, Any], output: str) -> dict[str, Any]: ...

    def new_id(self, prefix: str) -> str: ...


ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    404: "not_found_error",
    429: "rate_limit_exceeded",
    500: "server_error",
    503: "server_error",
}
ERROR_MESSAGES = {
    401: "Incorrect API key provided",
    429: "Rate limit reached for requests",
    500: "The server had an error while processing your request",
    503: "The engine is currently overloaded",
}


class ChatServer(LoopbackServer):
    """A running fake chat completions endpoint; `stop()` closes it and every connection."""

    def __init__(self, fake: Backend):
        super().__init__(fake, _Handler)


class _Handler(LoopbackHandler):
    @property
    def _backend(self) -> Backend:
        return cast(Backend, self._http.backend)

    def do_GET(self) -> None:
        self._error(ChatResponse(status=404, error_message=f"Not found: {self.path}"))

    def do_POST(self) -> None:
        fake = self._backend
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake.record(RecordedRequest("POST", self.path, headers, body, raw))
        if not self.path.split("?")[0].rstrip("/").endswith("/chat/completions"):
            self._error(ChatResponse(status=404, error_message=f"Not found: {self.path}"))
            return
        token = headers.get("authorization", "").removeprefix("Bearer ").strip()
        if not token or (fake.api_key is not None and token != fake.api_key):
            self._error(ChatResponse(status=401))
            return
        if not isinstance(body, dict):
            self._error(ChatResponse(status=400, error_message="the body must be a JSON object"))
            return
        response = fake.next_response(body)
        if response.delay and self._http.stopping.wait(response.delay):
            return
        if response.status >= 400:
            self._error(response)
        elif body.get("stream"):
            self._stream(body, response)
        else:
            self._json(body, response)

    # ------------------------------------------------------------------ answers

    def _send(self, status: int, payload: bytes, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _error(self, response: ChatResponse) -> None:
        status = response.status
        message = response.error_message or ERROR_MESSAGES.get(status, "error")
        extra = {}
        if response.retry_after is not None and (status == 429 or status >= 500):
            extra["retry-after-ms"] = str(max(int(response.retry_after * 1000), 1))
        if status == 400:
            extra["x-should-retry"] = "false"
        error = {"message": message, "type": ERROR_TYPES.get(status, "server_error"), "code": None}
        if "context_length_exceeded" in message:
            error["code"] = "context_length_exceeded"
        self._send(status, json.dumps({"error": error}).encode(), extra)

    def _calls(self, response: ChatResponse) -> list[dict[str, Any]]:
        fake = self._backend
        return [
            {
                "id": fake.new_id("call"),
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for name, args in response.tool_calls
        ]

    def _usage(self, body: dict[str, Any], response: ChatResponse, calls: list[Any]) -> Any:
        output = response.text + "".join(c["function"]["arguments"] for c in calls)
        return response.usage or self._backend.usage_for(body, output)

    def _json(self, body: dict[str, Any], response: ChatResponse) -> None:
        if response.fault == "malformed":
            self._send(200, b'{"id": "chatcmpl-broken", "object": "chat.completion", "choices": [')
            return
        calls = self._calls(response)
        message: dict[str, Any] = {"role": "assistant", "content": response.text or None}
        if calls:
            message["tool_calls"] = calls
        completion = {
            "id": self._backend.new_id("chatcmpl"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": response.finish}],
            "usage": self._usage(body, response, calls),
        }
        payload = json.dumps(completion).encode()
        if response.fault == "cut":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload[: len(payload) // 2])
            self._abort()
            return
        self._send(200, payload)

    def _stream(self, body: dict[str, Any], response: ChatResponse) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if response.fault == "malformed":
            self._chunk(b"data: {not json\n\n")
            self._chunk(b"")
            return
        chunks = self._chunks(body, response)
        if response.fault == "cut":
            for chunk in chunks[: max(len(chunks) // 2, 2)]:
                self._chunk(_event(chunk))
            self._abort()
            return
        for chunk in chunks:
            self._chunk(_event(chunk))
        self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")

    def _chunks(self, body: dict[str, Any], response: ChatResponse) -> list[dict[str, Any]]:
        fake = self._backend
        head = {
            "id": fake.new_id("chatcmpl"),
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        out = [chunk({"role": "assistant", "content": ""})]
        size = fake.chunk_size
        for i in range(0, len(response.text), size):
            out.append(chunk({"content": response.text[i : i + size]}))
        calls = self._calls(response)
        for index, call in enumerate(calls):
            name, args = call["function"]["name"], call["function"]["arguments"]
            first = {"index": index, "id": call["id"], "type": "function"}
            out.append(
                chunk({"tool_calls": [{**first, "function": {"name": name, "arguments": ""}}]})
            )
            for i in range(0, len(args), size):
                piece = {"index": index, "function": {"arguments": args[i : i + size]}}
                out.append(chunk({"tool_calls": [piece]}))
        out.append(chunk({}, response.finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            out.append({**head, "choices": [], "usage": self._usage(body, response, calls)})
        return out

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _abort(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.wfile.flush()
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


def _event(chunk: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"
