"""What went wrong calling Claude, in one sentence a person can act on (actors/anthropic.py).

`describe_failure` names the endpoint (Anthropic's API, Amazon Bedrock or Google Vertex AI),
the HTTP status and the provider's own message, and how many attempts the SDK made;
`failure_kind` says which `SuspendKind` it is (a rate limit is its own kind: a batch slows down
for it instead of failing). The messages are redacted of the key by the caller.
"""

from __future__ import annotations

RETRIED_STATUSES = frozenset({408, 409, 429})
STATUS_LABELS = {
    400: "rejected the request",
    401: "authentication failed",
    403: "permission denied",
    404: "not found",
    408: "request timeout",
    413: "request too large",
    429: "rate limit",
    500: "internal server error",
    502: "bad gateway",
    503: "unavailable",
    504: "gateway timeout",
    529: "overloaded",
}
# Each Claude provider's name in messages, and the variable to check when it refuses the key.
NAMES = {"anthropic": "Anthropic API", "bedrock": "Amazon Bedrock", "vertex": "Google Vertex AI"}
KEY_HINTS = {
    "anthropic": "check ANTHROPIC_API_KEY",
    "bedrock": "check AWS_BEARER_TOKEN_BEDROCK or the AWS credentials",
    "vertex": "check ANTHROPIC_VERTEX_ACCESS_TOKEN or the Google credentials",
}


class IncompleteStream(Exception):
    """The event stream ended without `message_stop`."""


def failure_kind(exc: BaseException) -> str:
    import anthropic  # deferred: about a second of import time

    if isinstance(exc, anthropic.RateLimitError):
        return "rate-limit"
    if isinstance(exc, anthropic.APITimeoutError):
        return "timeout"
    return "provider"


def describe_failure(
    exc: BaseException, provider: str, attempts: int, timeout: float, where: str
) -> str:
    import anthropic  # deferred: about a second of import time

    api = NAMES.get(provider, "Anthropic API")
    tries = f" after {attempts} attempt{'s' if attempts != 1 else ''}"
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        label = STATUS_LABELS.get(status, "error")
        detail = exc.api_message or _body_message(exc.body) or exc.message
        retried = status in RETRIED_STATUSES or status >= 500
        text = f"{api} {label} ({status}){tries if retried else ''}: {detail}"
        if status == 401:
            text += f" ({KEY_HINTS.get(provider, KEY_HINTS['anthropic'])})"
        return text
    if isinstance(exc, anthropic.APITimeoutError):
        return f"{api} timed out (no response within {timeout:g} s){tries}"
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        why = f": {type(cause).__name__}: {cause}" if cause else ""
        if type(cause).__name__ in ("RemoteProtocolError", "ReadError"):
            # The server answered, then the body was cut short: it was reached.
            return f"the connection to the {api} broke off mid-response{tries}{why}"
        return f"could not reach the {api} at {where}{tries}{why}"
    if isinstance(exc, anthropic.APIResponseValidationError):
        return f"malformed response from the {api}: {exc.message}"
    if isinstance(exc, IncompleteStream):
        return f"the {api} stream ended before the message was complete"
    if isinstance(exc, ValueError):  # json.JSONDecodeError and friends
        return f"malformed response from the {api}: {type(exc).__name__}: {exc}"
    name = type(exc).__name__
    if type(exc).__module__.startswith(("httpx", "httpcore", "h11")):
        return f"the connection to the {api} broke off mid-response: {name}: {exc}"
    return f"unexpected error while calling the {api}: {name}: {exc}"


def _body_message(body: object) -> str | None:
    if isinstance(body, dict):
        error = body.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        return message if isinstance(message, str) else None
    return None
