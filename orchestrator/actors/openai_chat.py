"""The OpenAI-style actor: a role played by a model behind an OpenAI-compatible chat
completions API (OpenAI itself, vLLM, Ollama, llama.cpp's server, a hosted router), through the
official `openai` package (an optional extra: `pip install 'orchestrator[openai]'`).

Theory of operation. One `play()` is one step, as for the Anthropic actor (actors/anthropic.py),
whose conversation it shares: the system prompt, then for `memory: session` the role's earlier
visits (kept within the role's budget by run/memory.py), then this visit's message, then each
rejected reply and its errors when repairing, so the repair loop runs in the same conversation.
Everything is rebuilt from the request, so a resumed thread sends the same bytes.

1. Call chat completions (streaming by default; openai_wire.py puts the chunks together). The
   role's tools go as function tools (openai_tools.py) and run through the same `ToolBox` as
   Claude's: the same path confinement, sandbox and redaction. A tool call's result goes back as
   a `tool` message; arguments that are not valid JSON go back as a tool error, so the model
   can call again. At most `max_tool_rounds` rounds.
2. Return the text of the last assistant message, the usage summed over the calls (cached
   prompt tokens as the provider reports them) and the cost: the provider's own figure when
   every call reported one, else the price table's (definition/model_config.py).

Prompt caching is the provider's (OpenAI and most servers cache a repeated prefix by
themselves): the tools and the system prompt depend on the role alone and come first, byte-
identical on every visit, then the conversation, which only grows within a step and between
visits of a `memory: session` role. Should the server answer that the prompt exceeds the
model's context, the older half of the earlier visits is dropped, with a note, and the call made
again (actors/shrink.py).

Failures: the SDK retries 408/409/429/5xx and connection errors with backoff; what is left, and
anything malformed on the wire, becomes `ActorError` (kind provider, rate-limit or timeout) with
a sentence naming the provider, and the thread suspends. The whole call has a deadline of its
own. No SDK exception escapes `play()`.

Secrets: the key (from OPENAI_API_KEY, or the provider's `api_key_env`) goes to the SDK only; it
is redacted from tool output and from every error message, and the shell's sandbox never sees
the orchestrator's environment.
"""

from __future__ import annotations

import asyncio
import os
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from ..definition.model_config import ModelConfigError, cost_usd, model_ref, provider
from ..definition.providers import Provider
from ..tools import ToolBox, tool_definitions
from ..tools.role_tools import ToolSetupFailed, extra_tools
from ..tools.scrub import Secrets
from ..tools.toolbox import ExtraTool
from . import openai_wire as wire
from .anthropic import build_conversation
from .base import ActorError, ActReply, ActRequest, Usage
from .openai_tools import function_tools
from .progress import StepProgress
from .prompting import HISTORY_BUDGET, system_prompt, visit_message
from .shrink import shrink_conversation

if TYPE_CHECKING:
    from openai import AsyncOpenAI

DEFAULT_MAX_TOKENS = 8192
DEFAULT_TIMEOUT = 600.0
DEFAULT_MAX_RETRIES = 2
DEFAULT_MAX_TOOL_ROUNDS = 50
TOO_LONG = ("context_length_exceeded", "maximum context length", "prompt is too long")


class _Spent:
    """What a step has spent so far, kept when it fails half-way."""

    def __init__(self) -> None:
        self.model: str | None = None
        self.usage = Usage()
        self.reported: float | None = 0.0  # None once a call reported no cost of its own

    def add(self, usage: Usage, reported: float | None) -> None:
        self.usage = self.usage + usage
        self.reported = (
            None if reported is None or self.reported is None else (self.reported + reported)
        )

    def cost(self) -> float:
        if self.reported is not None and self.usage != Usage():
            return round(self.reported, 10)
        return cost_usd(self.model, self.usage) if self.model else 0.0


class OpenAIActor:
    """Plays roles with the models of one OpenAI-style provider (`openai`, or one declared)."""

    kind = "openai"

    def __init__(
        self,
        provider_name: str = "openai",
        *,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT,
        stream: bool = True,
        max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS,
        shell_timeout: float = 120.0,
        history_budget: int = HISTORY_BUDGET,
        deadline: float | None = None,
    ):
        self.provider_name = provider_name
        self.max_retries = max_retries
        self.timeout = timeout
        self.stream = stream
        self.max_tool_rounds = max_tool_rounds
        self.shell_timeout = shell_timeout
        self.history_budget = history_budget
        # A whole call's limit, the SDK's retries and their back-off (at most 8 s each) included.
        self.deadline = deadline or (timeout + 8.0) * (max_retries + 1)
        self._client: AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._secret: tuple[str, ...] = ()

    async def play(self, request: ActRequest) -> ActReply:
        spent = _Spent()
        try:
            spec = provider(self.provider_name)
        except (KeyError, ModelConfigError) as exc:
            raise ActorError(f"the model provider '{self.provider_name}': {exc}", "config") from exc
        try:
            if all(isinstance(entry, str) for entry in request.role.tools):
                # No Python or MCP tools: nothing to load or start for this step.
                return await self._play(request, spec, spent, [])
            async with extra_tools(
                request.role, request.role_name, request.workspace, request.boundary
            ) as extra:
                return await self._play(request, spec, spent, extra)
        except ToolSetupFailed as exc:
            raise ActorError(exc.message, exc.kind) from None
        except ActorError as exc:
            raise ActorError(
                exc.message, exc.kind, usage=spent.usage, cost_usd=spent.cost()
            ) from exc
        except asyncio.CancelledError:
            raise
        except ModelConfigError as exc:
            raise ActorError(str(exc), kind="config") from exc
        except wire.MissingKey as exc:
            raise ActorError(self._describe(exc, spec), kind="provider") from exc
        except Exception as exc:  # anything from the SDK or the wire; see the module docstring
            raise ActorError(
                self._describe(exc, spec),
                kind=wire.kind(exc),
                usage=spent.usage,
                cost_usd=spent.cost(),
            ) from exc

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    async def _play(
        self, request: ActRequest, spec: Provider, spent: _Spent, extra: list[ExtraTool]
    ) -> ActReply:
        role = request.role
        ref = model_ref(request.model)
        definitions = tool_definitions(role) + [tool.definition() for tool in extra]
        if definitions and not spec.tools:
            raise ActorError(
                f"role {request.role_name!r} has tools, but the model '{ref.ref}' takes no tool "
                f"calls (the models file says `tools: false` for provider '{spec.name}'); "
                "choose another model for this role",
                kind="config",
            )
        client = self._get_client(spec)
        tools = function_tools(definitions)
        message = visit_message(request, self.history_budget)
        conversation = build_conversation(request, message)
        earlier = len(request.previous_visits)
        system = {"role": "system", "content": system_prompt(role, request.role_name)}
        toolbox: ToolBox | None = None
        tool_calls = rounds = 0
        progress = StepProgress(request.progress, request.step)
        max_tokens = request.max_tokens or DEFAULT_MAX_TOKENS
        while True:
            params: dict[str, Any] = {"model": ref.model, "messages": [system, *conversation]}
            # OpenAI's own API takes max_completion_tokens; servers that copy it, max_tokens.
            params["max_completion_tokens" if spec.kind == "openai" else "max_tokens"] = max_tokens
            if tools:
                params["tools"] = tools
            if request.temperature is not None:
                params["temperature"] = request.temperature
            progress.call_start(
                ref.ref,
                server=wire.where(spec),
                max_tokens=max_tokens,
                temperature=request.temperature,
            )
            try:
                reply = await self._call(client, params, progress)
            except Exception as exc:
                shrunk = shrink_conversation(conversation, earlier) if _too_long(exc) else None
                if shrunk is None:
                    raise
                conversation, earlier = shrunk
                continue
            spent.model = ref.ref
            spent.add(reply.usage, reply.cost_usd)
            progress.call_done(
                reply.usage.to_dict(),
                SimpleNamespace(model=reply.model, id=reply.id, stop_reason=reply.finish_reason),
            )
            if not reply.tool_calls:
                break
            if rounds >= self.max_tool_rounds:
                raise ActorError(
                    f"role {request.role_name!r} was still calling tools after "
                    f"{self.max_tool_rounds} rounds ({tool_calls} tool calls); the step was "
                    "stopped. Resume the thread to try again, or narrow the role's procedure.",
                    kind="tool-loop",
                )
            rounds += 1
            conversation.append(
                {
                    "role": "assistant",
                    "content": reply.text or None,
                    "tool_calls": [call.message_part() for call in reply.tool_calls],
                }
            )
            for call in reply.tool_calls:
                args, problem = call.parsed()
                progress.tool_call(call.name, args or {}, call.id)
                if toolbox is None:
                    toolbox = ToolBox(
                        request.workspace,
                        role.tool_sets,
                        shell_timeout=self.shell_timeout,
                        secrets=self._secret,
                        passed=tuple(role.env),
                        sandbox=role.sandbox,
                        role_name=request.role_name,
                        extra=extra,
                        boundary=request.boundary,
                    )
                if problem is not None:
                    text, is_error = problem, True
                else:
                    text, is_error = await toolbox.run(call.name, args)
                progress.tool_done(call.name, call.id, is_error)
                tool_calls += 1
                content = text or "(no output)"
                conversation.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.id,
                        "content": f"[tool error] {content}" if is_error else content,
                    }
                )
        if not reply.text.strip():
            raise ActorError(_empty_reply(reply.finish_reason, max_tokens, spec), "provider")
        return ActReply(
            text=reply.text,
            message=message,
            usage=spent.usage,
            cost_usd=spent.cost(),
            model=ref.ref,
            tool_calls=tool_calls,
        )

    async def _call(
        self, client: AsyncOpenAI, params: dict[str, Any], progress: StepProgress
    ) -> wire.Completion:
        def on_text(piece: str) -> None:
            # The display's estimate of the tokens streaming in, as for Claude's deltas.
            progress.stream_event(
                SimpleNamespace(type="content_block_delta", delta=SimpleNamespace(text=piece))
            )

        try:
            async with asyncio.timeout(self.deadline):
                return await wire.complete(
                    client,
                    params,
                    stream=self.stream,
                    on_text=on_text if progress.callback is not None else None,
                )
        except TimeoutError:
            raise ActorError(
                f"the call to the model did not finish within {self.deadline:g} s "
                "(the response kept the connection open without finishing)",
                kind="timeout",
            ) from None

    def _get_client(self, spec: Provider) -> AsyncOpenAI:
        loop = asyncio.get_running_loop()
        if self._client is not None and self._client_loop is loop:
            return self._client
        # A connection pool belongs to the event loop it was made on (see the Anthropic actor).
        self._client, key = wire.make_client(
            spec, dict(os.environ), max_retries=self.max_retries, timeout=self.timeout
        )
        self._secret = (key,) if key else ()
        self._client_loop = loop
        return self._client

    def _describe(self, exc: BaseException, spec: Provider) -> str:
        text = wire.describe(exc, spec, self.max_retries + 1, self.timeout)
        return Secrets.of(self._secret).redact(text)


def _too_long(exc: BaseException) -> bool:
    """The server's answer to a prompt longer than the model's context window."""
    return getattr(exc, "status_code", None) == 400 and any(t in str(exc) for t in TOO_LONG)


def _empty_reply(reason: str | None, max_tokens: int, spec: Provider) -> str:
    if reason == "length":
        return (
            f"the model used its whole max_tokens ({max_tokens}) before writing a reply; "
            "raise max_tokens for this role"
        )
    if reason == "content_filter":
        return "the model's reply was withheld by the provider's content filter"
    return f"{wire.provider_label(spec)} returned an empty reply (finish_reason: {reason})"
