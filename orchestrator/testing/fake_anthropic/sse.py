"""A Messages API reply as the server-sent events of a streamed reply, shaped like the real API's.

`message_start`, `ping`, per content block `content_block_start`, its `content_block_delta`s
(`text_delta` for text, `input_json_delta` for a tool's input, cut into pieces of `size`
characters) and `content_block_stop`, then `message_delta` with the stop reason and cumulative
usage, and `message_stop`.
"""

from __future__ import annotations

import json
from typing import Any

Event = tuple[str, dict[str, Any]]


def sse_events(message: dict[str, Any], size: int) -> list[Event]:
    """The events (name, data) that stream `message`, a complete reply."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: list[Event] = [
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


def encode_event(name: str, data: dict[str, Any]) -> bytes:
    """One event on the wire."""
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]
