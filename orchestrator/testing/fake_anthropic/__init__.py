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
- a context window when asked (`FakeAnthropic(max_prompt_tokens=N)`): a longer prompt gets the
  API's 400 "prompt is too long: X tokens > N maximum";
- faults: error statuses with the API's error bodies and `retry-after-ms` (default 1 ms, so
  the SDK's retries are fast), latency, a stream cut in the middle, malformed JSON, empty content.

Requests are served concurrently (one thread per connection).

The modules, one idea each: `fake` (`FakeAnthropic`: the script and the server's life),
`responses` (`FakeResponse`, faults, `RecordedRequest`), `server` (HTTP and SSE on the wire),
`sse` (a reply as stream events), `caching` (simulated usage and prompt caching).
"""

from .fake import FakeAnthropic
from .responses import ERROR_MESSAGES, ERROR_TYPES, FakeResponse, Fault, Handler, RecordedRequest

__all__ = [
    "ERROR_MESSAGES",
    "ERROR_TYPES",
    "FakeAnthropic",
    "FakeResponse",
    "Fault",
    "Handler",
    "RecordedRequest",
]
