"""Which actor answers a role that a model plays: by the provider of its model, with fallbacks.

A role's `model:` names a provider (docs/format.md section 19): `anthropic`, `bedrock` and
`vertex` are played by the Anthropic actor (one client per provider), `openai` and the
`openai-compatible` providers of the models file by the OpenAI-style actor (one per provider).
`ModelActor` is what the runner holds for every such role; it picks the actor for each step's
model and keeps one per provider, so connection pools are shared across the thread's steps.

Fallback. A role may list `fallback:` models, tried in order when the provider of the one before
keeps failing (the SDK's own retries spent: a 5xx, a 429, a timeout, a broken connection). A
reply the model gave is never retried elsewhere: a malformed reply is repaired in the same
conversation instead. What the failed attempts spent is added to the step's usage and cost, and
the reply's `model` is the one that answered, so the ledger and `threads show` say which. When
every model failed, the step fails with each one's reason.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..core.events import SuspendKind
from ..definition.model_config import ModelConfigError, model_ref, provider
from ..definition.providers import ModelRef
from .base import ActorError, ActReply, ActRequest, Usage

# The failures another provider might not have; a bad setting or a tool loop would recur.
FALLBACK_KINDS = frozenset({SuspendKind.PROVIDER, SuspendKind.RATE_LIMIT, SuspendKind.TIMEOUT})


class ModelActor:
    """Plays every role a model plays, each step with the actor of its model's provider."""

    kind = "anthropic"  # the roles' `actor:` value: played by a model

    def __init__(self, *, max_retries: int = 2, timeout: float = 600.0, **settings: Any):
        self.max_retries = max_retries
        self.timeout = timeout
        self.settings = settings  # passed to every actor made (stream, deadline, ...)
        self._actors: dict[str, Any] = {}

    def actor_for(self, ref: ModelRef) -> Any:
        """The actor of a model's provider, made once per provider."""
        if ref.provider not in self._actors:
            spec = provider(ref.provider)
            options = {"max_retries": self.max_retries, "timeout": self.timeout, **self.settings}
            if spec.claude:
                # deferred: the anthropic SDK takes about a second to import
                from .anthropic import AnthropicActor

                self._actors[ref.provider] = AnthropicActor(provider=spec.name, **options)
            else:
                # deferred: the openai package is an optional extra
                from .openai_chat import OpenAIActor

                self._actors[ref.provider] = OpenAIActor(spec.name, **options)
        return self._actors[ref.provider]

    async def play(self, request: ActRequest) -> ActReply:
        models = [request.model, *request.role.fallback]
        usage, cost = Usage(), 0.0
        failures: list[str] = []
        for i, model in enumerate(models):
            try:
                ref = model_ref(model)
            except ModelConfigError as exc:
                raise ActorError(str(exc), SuspendKind.CONFIG) from exc
            try:
                reply: ActReply = await self.actor_for(ref).play(replace(request, model=ref.ref))
            except ActorError as exc:
                usage, cost = usage + exc.usage, cost + exc.cost_usd
                failures.append(f"{ref.ref}: {exc.message}")
                if exc.kind not in FALLBACK_KINDS or i == len(models) - 1:
                    message = exc.message if len(failures) == 1 else _every(failures)
                    raise ActorError(
                        message, exc.kind, usage=usage, cost_usd=cost, detail=exc.detail
                    ) from exc
                continue
            if not failures:
                return reply
            return replace(
                reply, usage=reply.usage + usage, cost_usd=round(reply.cost_usd + cost, 10)
            )
        raise AssertionError("unreachable: the loop returns or raises")

    async def aclose(self) -> None:
        for actor in self._actors.values():
            closing = getattr(actor, "aclose", None)
            if closing is not None:
                await closing()


def _every(failures: list[str]) -> str:
    return "every model of the role failed: " + "; ".join(failures)
