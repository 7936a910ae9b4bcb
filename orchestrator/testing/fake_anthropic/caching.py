"""Simulated token usage and prompt caching, close enough to the real API's to test against.

Blocks are counted as `len(text) // 4` tokens, in the order the API caches a request: tools,
system, messages. Every block carrying `cache_control` stores the prefix up to it, and a later
request whose prefix matches a stored one (checked at each breakpoint and up to 20 blocks before
it, as the real API does) reports those tokens as `cache_read_input_tokens`, the rest up to its
last breakpoint as `cache_creation_input_tokens`, and what follows as `input_tokens`. A prefix
shorter than `min_tokens` is not cached, as models with a minimum cacheable length do.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from typing import Any


def prompt_tokens(body: dict[str, Any]) -> int:
    """The tokens of a request's prompt (tools, system, messages), as the fake counts them."""
    return sum(b.tokens for b in _prompt_blocks(body))


class PromptCache:
    """The prefixes cached so far, shared by every request to one fake server."""

    def __init__(self, min_tokens: int = 0):
        self.min_tokens = min_tokens
        self._stored: set[str] = set()
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._stored.clear()

    def usage(self, body: dict[str, Any], output_text: str) -> dict[str, int]:
        """The usage of a request, updating the cache as the real API would."""
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
                    if hashes[j] in self._stored:
                        read_upto = max(read_upto, j + 1)
                        break
            for bp in breakpoints:
                if sum(tokens[: bp + 1]) >= self.min_tokens:
                    self._stored.add(hashes[bp])
        cache_read = sum(tokens[:read_upto])
        written = sum(tokens[read_upto : last + 1]) if read_upto <= last else 0
        if sum(tokens[: last + 1]) < self.min_tokens:
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
