"""A local fake of an OpenAI-compatible chat completions API, for tests and benchmarks that use
the real `openai` package (written like `fake_anthropic`, the fake Messages API).

```python
with FakeOpenAI() as server:                    # http://127.0.0.1:PORT/v1
    server.reply_tool_call("bash", {"command": "ls"})
    server.reply_text("---\\n$status: ready\\nplan: x\\n---\\nbody")
    server.fail(status=429, times=2)            # faults queue up like replies
    ...
    server.requests[0].body["messages"]         # every request is recorded
```

What it implements (`POST /v1/chat/completions`):
- plain JSON and, when the body says `"stream": true`, SSE chunks shaped like OpenAI's (`data:
  {chat.completion.chunk}` lines: the role, content deltas, tool calls by index with their
  arguments in pieces, the finish reason, with `stream_options.include_usage` a last chunk
  holding only the usage, then `data: [DONE]`);
- usage with simulated prefix caching: the prompt (tools and messages as JSON) counts
  `len // 4` tokens, and the longest prefix it shares with an earlier request is reported as
  `prompt_tokens_details.cached_tokens`; with `cost_per_token` set, `usage.cost` (USD) as a
  hosted router reports it;
- a script: a queue of `ChatResponse`s, then `handler(body)` when the queue is empty; with
  neither, a 400 that says the script ran out;
- a key when asked (`FakeOpenAI(api_key=...)`): another bearer token gets a 401;
- faults: error statuses with OpenAI's error bodies and `retry-after-ms` (1 ms by default, so
  the SDK's retries are fast), a stream cut in the middle, malformed JSON, tool arguments that
  are not JSON.

The modules: `fake` (`FakeOpenAI`: the script), `responses` (`ChatResponse`, recorded
requests) and `server` (HTTP and SSE).
"""

from .fake import FakeOpenAI
from .responses import ChatResponse, RecordedRequest

__all__ = ["ChatResponse", "FakeOpenAI", "RecordedRequest"]
