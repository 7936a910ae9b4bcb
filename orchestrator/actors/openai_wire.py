"""One OpenAI-style chat completion on the wire: the client, the call, the stream put together.

`make_client` builds the `openai` package's async client for a provider: `openai` reads its key
from OPENAI_API_KEY (and honours OPENAI_BASE_URL); an `openai-compatible` provider is reached at
its `base_url` with the key in its `api_key_env`, or with a placeholder when it declares none.
The placeholder matters: given no key, the SDK would read OPENAI_API_KEY by itself and send the
OpenAI key to whatever server the models file names.

`complete` makes one call, streaming by default (`stream_options.include_usage`, so the last
chunk carries the usage), and puts the chunks together into a `Completion`: the text, the tool
calls (their id, name and JSON arguments arrive in pieces, by index), why the model stopped, the
usage (cached prompt tokens read from `prompt_tokens_details`) and the cost when the provider
reports one (a router's `usage.cost`, in USD). A stream that ends without a finish reason is
`IncompleteStream`. Retries (429, 5xx, connection errors, with backoff that honours
`retry-after`) are the SDK's own; the caller bounds the whole call with a deadline.

`describe` turns what can go wrong into one sentence a person can act on, naming the provider,
the HTTP status and the provider's message; `kind` says which `SuspendKind` it is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..definition.providers import Provider
from ..tools.scrub import redact_url_credentials
from .base import Usage
from .openai_tools import ToolCall

if TYPE_CHECKING:
    from openai import AsyncOpenAI

NO_KEY_PLACEHOLDER = "no-key"  # what a provider without `api_key_env` is sent as its key
STATUS_LABELS = {
    400: "rejected the request",
    401: "authentication failed",
    403: "permission denied",
    404: "not found",
    408: "request timeout",
    413: "request too large",
    422: "rejected the request",
    429: "rate limit",
    500: "internal server error",
    502: "bad gateway",
    503: "unavailable",
    504: "gateway timeout",
}


class IncompleteStream(Exception):
    """The chunk stream ended without a finish reason."""


class MissingKey(Exception):
    """The provider's key variable is not set."""


@dataclass
class Completion:
    id: str = ""
    model: str = ""
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None  # the provider's own figure, when it reports one


def provider_label(provider: Provider) -> str:
    if provider.kind == "openai" and provider.base_url is None:
        return "the OpenAI API"
    return f"the provider '{provider.name}'"


def key_variable(provider: Provider) -> str | None:
    return "OPENAI_API_KEY" if provider.kind == "openai" else provider.api_key_env


def make_client(
    provider: Provider, environ: dict[str, str], *, max_retries: int, timeout: float
) -> tuple[AsyncOpenAI, str | None]:
    """The provider's client and the key it holds (None: a placeholder, no secret)."""
    import openai  # deferred: the package is an optional extra, and slow to import

    variable = key_variable(provider)
    key = environ.get(variable) if variable else None
    if variable and not key:
        raise MissingKey(variable)
    client = openai.AsyncOpenAI(
        api_key=key or NO_KEY_PLACEHOLDER,
        base_url=provider.base_url,  # None: OPENAI_BASE_URL, else api.openai.com
        max_retries=max_retries,
        timeout=timeout,
        # Passed in for the reason the Anthropic actor gives: the SDK's default client schedules
        # its close on whatever loop runs when it is garbage-collected.
        http_client=openai.DefaultAsyncHttpxClient(),
    )
    return client, key


async def complete(
    client: AsyncOpenAI,
    params: dict[str, Any],
    *,
    stream: bool,
    on_text: Callable[[str], None] | None = None,
) -> Completion:
    if not stream:
        response = await client.chat.completions.create(**params)
        return _from_response(response)
    done = Completion()
    pieces: dict[int, dict[str, str]] = {}
    text: list[str] = []
    chunks = await client.chat.completions.create(
        **params, stream=True, stream_options={"include_usage": True}
    )
    async for chunk in chunks:
        done.id = done.id or chunk.id
        done.model = done.model or chunk.model
        if chunk.usage is not None:
            done.usage, done.cost_usd = usage_of(chunk.usage)
        for choice in chunk.choices[:1]:
            delta = choice.delta
            if delta.content:
                text.append(delta.content)
                if on_text is not None:
                    on_text(delta.content)
            for call in delta.tool_calls or ():
                piece = pieces.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                piece["id"] = piece["id"] or (call.id or "")
                if call.function is not None:
                    piece["name"] += call.function.name or ""
                    piece["arguments"] += call.function.arguments or ""
            if choice.finish_reason:
                done.finish_reason = choice.finish_reason
    if done.finish_reason is None:
        raise IncompleteStream()
    done.text = "".join(text)
    done.tool_calls = [
        ToolCall(p["id"] or f"call_{i}", p["name"], p["arguments"])
        for i, p in sorted(pieces.items())
    ]
    return done


def _from_response(response: Any) -> Completion:
    if not response.choices:
        raise IncompleteStream()
    choice = response.choices[0]
    message = choice.message
    calls = [
        ToolCall(c.id, c.function.name, c.function.arguments or "")
        for c in message.tool_calls or ()
        if getattr(c, "function", None) is not None
    ]
    usage, cost = usage_of(response.usage) if response.usage is not None else (Usage(), None)
    return Completion(
        response.id, response.model, message.content or "", calls, choice.finish_reason, usage, cost
    )


def usage_of(usage: Any) -> tuple[Usage, float | None]:
    """The four counts of the ledger from an OpenAI-style usage, and the reported cost."""
    details = getattr(usage, "prompt_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0)
    written = int(getattr(details, "cache_write_tokens", 0) or 0)
    prompt = int(usage.prompt_tokens or 0)
    cost = getattr(usage, "cost", None)
    reported = float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None
    return (
        Usage(
            input_tokens=max(prompt - cached - written, 0),
            output_tokens=int(usage.completion_tokens or 0),
            cache_creation_input_tokens=written,
            cache_read_input_tokens=cached,
        ),
        reported,
    )


def kind(exc: BaseException) -> str:
    """A rate limit is its own kind: a batch slows down for it instead of failing."""
    import openai  # deferred: an optional extra

    if isinstance(exc, openai.RateLimitError):
        return "rate-limit"
    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    return "provider"


def describe(exc: BaseException, provider: Provider, attempts: int, timeout: float) -> str:
    import openai  # deferred: an optional extra

    who = provider_label(provider)
    tries = f" after {attempts} attempt{'s' if attempts != 1 else ''}"
    if isinstance(exc, MissingKey):
        return f"no key for {who}: set {exc.args[0]}"
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        label = STATUS_LABELS.get(status, "error")
        retried = status in (408, 409, 429) or status >= 500
        text = f"{who} {label} ({status}){tries if retried else ''}: {_message(exc)}"
        variable = key_variable(provider)
        if status == 401 and variable:
            text += f" (check {variable})"
        return text
    if isinstance(exc, openai.APITimeoutError):
        return f"{who} timed out (no response within {timeout:g} s){tries}"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        why = f": {type(cause).__name__}: {cause}" if cause else ""
        if type(cause).__name__ in ("RemoteProtocolError", "ReadError"):
            return f"the connection to {who} broke off mid-response{tries}{why}"
        return f"could not reach {who} at {where(provider)}{tries}{why}"
    if isinstance(exc, IncompleteStream):
        return f"the stream from {who} ended before the reply was complete"
    if isinstance(exc, openai.APIResponseValidationError | ValueError):
        return f"malformed response from {who}: {type(exc).__name__}: {exc}"
    name = type(exc).__name__
    if type(exc).__module__.startswith(("httpx", "httpcore", "h11")):
        return f"the connection to {who} broke off mid-response: {name}: {exc}"
    return f"unexpected error while calling {who}: {name}: {exc}"


def where(provider: Provider) -> str:
    """The endpoint, for a message: without the credentials a URL may carry."""
    return redact_url_credentials(provider.base_url or "api.openai.com")


def _message(exc: Any) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        message = error.get("message") if isinstance(error, dict) else None
        if isinstance(message, str):
            return message
    return str(exc.message)
