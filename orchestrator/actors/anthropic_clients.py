"""Claude on Amazon Bedrock and Google Vertex AI: the `anthropic` SDK's own clients for them.

The Anthropic actor (actors/anthropic.py) plays a role the same way whichever of the three
endpoints serves Claude: the same requests, caching breakpoints, tools and ledger. Only the
client differs, and it is made here from the usual variables of each cloud:

- Bedrock (`anthropic.AsyncAnthropicBedrock`): AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key),
  else the AWS credentials the SDK signs with (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
  AWS_SESSION_TOKEN, a profile); the region from AWS_REGION; ANTHROPIC_BEDROCK_BASE_URL moves
  the endpoint.
- Vertex (`anthropic.AsyncAnthropicVertex`): ANTHROPIC_VERTEX_ACCESS_TOKEN when set, else
  Google's application default credentials; CLOUD_ML_REGION and ANTHROPIC_VERTEX_PROJECT_ID;
  ANTHROPIC_VERTEX_BASE_URL moves the endpoint.

All three use `http_client()`: the SDK's own HTTP client, keeping alive every connection it
opened (a wide batch reuses them from one call to the next).

Every one of these credentials is a provider's key (definition/secret_names.py): never passed
to a child process, and the values returned here as the client's secrets are redacted from
tool output and error messages like the Anthropic key.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from .base import ActorError

BEDROCK_SECRETS = (
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_ACCESS_KEY_ID",
)
VERTEX_SECRETS = ("ANTHROPIC_VERTEX_ACCESS_TOKEN",)


def claude_client(
    provider: str, *, base_url: str | None, max_retries: int, timeout: float
) -> tuple[Any, tuple[str, ...]]:
    """The async client of Claude on `provider` (bedrock or vertex) and the secrets it holds."""
    import anthropic  # deferred: about a second of import time

    options: dict[str, Any] = {
        "base_url": base_url,
        "max_retries": max_retries,
        "timeout": timeout,
        # Passed in for the reason actors/anthropic.py gives (closing on a finished loop).
        "http_client": http_client(),
    }
    if provider == "bedrock":
        if not (os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")):
            raise ActorError(
                "Claude on Amazon Bedrock needs a region: set AWS_REGION", kind="config"
            )
        return anthropic.AsyncAnthropicBedrock(**options), _values(BEDROCK_SECRETS)
    if provider == "vertex":
        region = os.environ.get("CLOUD_ML_REGION")
        project = os.environ.get("ANTHROPIC_VERTEX_PROJECT_ID")
        if not region or not project:
            raise ActorError(
                "Claude on Google Vertex AI needs CLOUD_ML_REGION and ANTHROPIC_VERTEX_PROJECT_ID",
                kind="config",
            )
        token = os.environ.get("ANTHROPIC_VERTEX_ACCESS_TOKEN") or None
        vertex = anthropic.AsyncAnthropicVertex(
            region=region, project_id=project, access_token=token, **options
        )
        return vertex, _values(VERTEX_SECRETS)
    raise ActorError(f"'{provider}' is not a provider of Claude", kind="config")


def http_client() -> Any:
    """The SDK's own async HTTP client, keeping alive every connection it has opened.

    The SDK's default keeps at most 100 idle connections of its 1,000. A batch of more than 100
    threads has more than 100 connections, and between two calls of a thread (the runner, the
    store) its connection is idle: beyond 100 such, each is closed and the thread's next call
    opens a new one (a connect, a server thread, the pool's bookkeeping), so at 200 threads
    nearly every call paid for a new connection. Idle connections still close after the SDK's
    keep-alive expiry (5 s), and the pool never holds more connections than calls were in
    flight at once."""
    import anthropic  # deferred: about a second of import time

    limits = anthropic.DEFAULT_CONNECTION_LIMITS
    kept = dataclasses.replace(limits, max_keepalive_connections=limits.max_connections)
    return anthropic.DefaultAsyncHttpxClient(limits=kept)


def _values(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(v for name in names if (v := os.environ.get(name)))
