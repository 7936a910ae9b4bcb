"""Claude on Amazon Bedrock and Google Vertex AI, faked on 127.0.0.1 over the same script.

`FakeClaudeCloud("bedrock")` and `FakeClaudeCloud("vertex")` serve the endpoints the `anthropic`
SDK's own clients call (`AsyncAnthropicBedrock`, `AsyncAnthropicVertex`), with the paths and
authentication headers as the SDK sends them, and answer from the same queue and handler as
`FakeAnthropic`:

- Bedrock: `POST /model/{model}/invoke` (a JSON message) and
  `/model/{model}/invoke-with-response-stream` (the stream's events as AWS event-stream frames,
  `:event-type: chunk` with the event's JSON in base64 under `bytes`, as the SDK decodes them
  with botocore). Authorization is a Bedrock API key (`Bearer ...`) or a SigV4 signature
  (`AWS4-HMAC-SHA256 Credential=.../bedrock/aws4_request`).
- Vertex: `POST /projects/{project}/locations/{region}/publishers/anthropic/models/{model}:
  rawPredict` (JSON) or `:streamRawPredict` (SSE as the Messages API's); a `Bearer` access token.

On both the model is in the path: the body must carry `anthropic_version` and no `model`.

Anything else gets a 404 or a 401/403 with the cloud's error body.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import zlib
from typing import Any, Literal

from .fake import FakeAnthropic
from .responses import FakeResponse, RecordedRequest
from .server import MessagesServer, _RequestHandler
from .sse import sse_events

Cloud = Literal["bedrock", "vertex"]
BEDROCK_PATH = re.compile(r"/model/(?P<model>[^/]+)/(?P<op>invoke|invoke-with-response-stream)")
VERTEX_PATH = re.compile(
    r"(?:/v1)?/projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)/publishers/anthropic/"
    r"models/(?P<model>[^/:]+):(?P<op>rawPredict|streamRawPredict)"
)


class FakeClaudeCloud(FakeAnthropic):
    """`with FakeClaudeCloud("bedrock") as server:`, then point the SDK's client at `server.url`."""

    def __init__(self, cloud: Cloud, **kw: Any):
        super().__init__(**kw)
        self.cloud = cloud

    def start(self) -> FakeClaudeCloud:
        self._server = MessagesServer(self, _CloudHandler)
        return self


class _CloudHandler(_RequestHandler):
    def do_POST(self) -> None:
        fake = self._backend
        assert isinstance(fake, FakeClaudeCloud)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake.record(RecordedRequest("POST", self.path, headers, body, raw))
        pattern = BEDROCK_PATH if fake.cloud == "bedrock" else VERTEX_PATH
        match = pattern.fullmatch(self.path.split("?")[0])
        if match is None:
            self._error(FakeResponse.error(404, f"Not found: {self.path}"))
            return
        if not _authorised(fake.cloud, headers.get("authorization", "")):
            self._error(FakeResponse.error(403, "missing or malformed authorization"))
            return
        if not isinstance(body, dict) or not isinstance(body.get("anthropic_version"), str):
            self._error(FakeResponse.error(400, "anthropic_version: field required"))
            return
        if "model" in body:
            self._error(FakeResponse.error(400, "model: extra inputs are not permitted"))
            return
        body = {**body, "model": match.group("model")}  # for the reply, as the API echoes it
        response = fake.next_response(body)
        if response.status >= 400:
            self._error(response)
        elif match.group("op") == "invoke-with-response-stream":
            self._event_stream(body, response)
        elif match.group("op") == "streamRawPredict":
            self._stream(body, response)
        else:
            self._json(body, response)

    def _event_stream(self, body: dict[str, Any], response: FakeResponse) -> None:
        self._send_head(200, "application/vnd.amazon.eventstream", {})
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for _, data in sse_events(self._message(body, response), self._backend.chunk_size):
            self._chunk(event_frame(json.dumps(data).encode()))
        self._chunk(b"")


def _authorised(cloud: Cloud, value: str) -> bool:
    if value.startswith("Bearer ") and len(value) > len("Bearer "):
        return True
    return cloud == "bedrock" and bool(
        re.match(r"AWS4-HMAC-SHA256 Credential=[^/]+/\d{8}/[^/]+/bedrock/aws4_request", value)
    )


def event_frame(chunk: bytes) -> bytes:
    """One AWS event-stream message: a `chunk` event whose payload holds `chunk` in base64."""
    payload = json.dumps({"bytes": base64.b64encode(chunk).decode()}).encode()
    headers = b"".join(
        _header(name, value)
        for name, value in (
            (":event-type", "chunk"),
            (":content-type", "application/json"),
            (":message-type", "event"),
        )
    )
    total = 12 + len(headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + headers + payload
    return message + struct.pack(">I", zlib.crc32(message))


def _header(name: str, value: str) -> bytes:
    encoded = value.encode()
    return bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(encoded)) + encoded
