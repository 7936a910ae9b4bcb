"""The Anthropic actor: a role played by Claude through the official `anthropic` SDK.

Theory of operation. One `play()` is one step of a thread:

1. Build the conversation from the request alone (the actor keeps no state that matters, so a
   resumed thread sends the same bytes): for `memory: session` the role's earlier visits as
   user/assistant pairs (already kept within the role's budget: run/memory.py), then this
   visit's message, then, when repairing, each rejected reply as an assistant turn followed by
   the errors as a user turn. Should the API still answer "prompt is too long", the older half
   of the earlier visits is dropped, with a note, and the call made again (until none is left).
2. Call the Messages API (streaming by default, so long replies are not cut by HTTP timeouts).
   When the model stops for `tool_use`, run each tool in the workspace (`orchestrator.tools`),
   send the results back and call again, at most `max_tool_rounds` times.
3. Return the text of the last assistant message with the usage summed over all calls and its
   price from `model_config`.

Prompt caching. The system prompt and the tool definitions depend on the role only, so they are
sent byte-identical on every visit, each with a `cache_control` breakpoint. The conversation
gets breakpoints on its last two user turns: the previous one is where the preceding request (an
earlier visit, the previous tool round, the rejected attempt) wrote its cache entry, the last one
is where this request writes. That is four breakpoints at most, the API's limit.

Failures. The SDK retries 408/409/429/5xx and connection errors itself (`max_retries`, with
backoff that honours `retry-after`). What is left when its retries run out, and everything else
that can go wrong on the wire (a stream cut in the middle, malformed JSON, an empty reply),
becomes `ActorError(kind="provider")` with the HTTP status and the provider's own message, so the
thread suspends with a sentence a person can act on. No SDK exception escapes `play()`.

Secrets. The API key goes to the SDK and nowhere else: it is never part of a prompt, an error
message or a tool's environment, tool output is redacted of it (`tools/scrub.py`), and the shell
tool runs in the role's sandbox (`tools/sandbox.py`), where the orchestrator's process and its
environment are out of sight.

Endpoints. `provider` is `anthropic` (the Messages API), `bedrock` or `vertex` (Claude on Amazon
Bedrock or Google Vertex AI, through the SDK's own clients: anthropic_clients.py); the requests,
caching breakpoints, tools and ledger are the same. The model a step records is the reference
`definition/providers.py` spells (`bedrock:ID`, or Anthropic's bare id), so the ledger names
the provider; its price is the table's (a Bedrock or Vertex id as the Claude model it names).

`anthropic` takes about a second to import, so it is imported on the first `play()`, never at
module import: the command line stays fast for everything that does not call a model.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..definition.model_config import ModelConfigError, cost_usd, model_ref
from ..tools import ToolBox, tool_definitions
from ..tools.role_tools import ToolSetupFailed, extra_tools
from ..tools.scrub import Secrets, redact_url_credentials
from ..tools.toolbox import ExtraTool
from .anthropic_clients import claude_client, http_client
from .anthropic_errors import IncompleteStream, describe_failure, failure_kind
from .base import ActorError, ActReply, ActRequest, Usage
from .progress import StepProgress
from .prompting import HISTORY_BUDGET, repair_message, system_prompt, visit_message
from .shrink import shrink_conversation, too_long

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

DEFAULT_MAX_TOKENS = 8192
DEFAULT_TIMEOUT = 600.0
DEFAULT_MAX_RETRIES = 2
DEFAULT_MAX_TOOL_ROUNDS = 50
EPHEMERAL = {"type": "ephemeral"}
NO_KEY = (
    "No Anthropic API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN), "
    "or run with --replay RECORDING to replay a recorded thread without calling a model."
)


def env_credentials() -> dict[str, str]:
    """The SDK's credentials from the environment: the API key, else an auth token, else none."""
    key = os.environ.get("ANTHROPIC_API_KEY")
    if key:
        return {"api_key": key}
    token = os.environ.get("ANTHROPIC_AUTH_TOKEN")
    return {"auth_token": token} if token else {}


@dataclass
class _Spent:
    """Tokens a step has spent so far, kept when the step fails half-way."""

    model: str | None = None
    usage: Usage = field(default_factory=Usage)

    def cost(self) -> float:
        return cost_usd(self.model, self.usage) if self.model else 0.0


class AnthropicActor:
    """Plays a role with Claude. All arguments are optional; the defaults suit real runs."""

    kind = "anthropic"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT,
        stream: bool = True,
        default_model: str | None = None,
        max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS,
        shell_timeout: float = 120.0,
        history_budget: int = HISTORY_BUDGET,
        deadline: float | None = None,
        provider: str = "anthropic",
    ):
        self.provider = provider  # anthropic, bedrock or vertex (anthropic_clients.py)
        self._api_key = api_key
        self._base_url = base_url
        self.max_retries = max_retries
        self.timeout = timeout
        self.stream = stream
        self.default_model = default_model
        self.max_tool_rounds = max_tool_rounds
        self.shell_timeout = shell_timeout
        self.history_budget = history_budget
        # A whole call's limit, the SDK's retries and their back-off (at most 8 s each) included.
        self.deadline = deadline or (timeout + 8.0) * (max_retries + 1)
        self._client: AsyncAnthropic | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._secret: tuple[str, ...] = ()

    # ------------------------------------------------------------------ the protocol

    async def play(self, request: ActRequest) -> ActReply:
        spent = _Spent()
        try:
            # The role's Python and MCP tools; its MCP servers live as long as the thread.
            async with extra_tools(
                request.role, request.role_name, request.workspace, request.boundary
            ) as extra:
                return await self._play(request, spent, extra)
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
        except Exception as exc:  # anything from the SDK or the wire; see the module docstring
            raise ActorError(
                self._scrub(self._describe(exc)),
                kind=self._kind(exc),
                usage=spent.usage,
                cost_usd=spent.cost(),
            ) from exc

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    # ------------------------------------------------------------------ one step

    async def _play(self, request: ActRequest, spent: _Spent, extra: list[ExtraTool]) -> ActReply:
        client = self._get_client()
        role = request.role
        # The request carries the role's settings already resolved (run/actors.py: model_settings).
        ref = model_ref(request.model or self.default_model)
        model = ref.model  # the id the provider knows; `ref.ref` names the provider too
        system = system_prompt(role, request.role_name)
        tools = tool_definitions(role) + [tool.definition() for tool in extra]
        message = visit_message(request, self.history_budget)
        conversation = build_conversation(request, message)
        earlier = len(request.previous_visits)  # the visits at the head of the conversation
        toolbox: ToolBox | None = None  # made at the first tool call: most replies make none
        usage = Usage()
        tool_calls = 0
        rounds = 0
        progress = StepProgress(request.progress, request.step)
        while True:
            params = request_params(
                model=model,
                max_tokens=request.max_tokens or DEFAULT_MAX_TOKENS,
                temperature=request.temperature,
                system=system,
                tools=tools,
                conversation=conversation,
            )
            progress.call_start(
                ref.ref,
                server=self._where(),
                max_tokens=params["max_tokens"],
                temperature=request.temperature,
            )
            try:
                reply = await self._call(client, params, progress)
            except Exception as exc:
                shrunk = shrink_conversation(conversation, earlier) if too_long(exc) else None
                if shrunk is None:
                    raise
                conversation, earlier = shrunk  # and ask again, with half the earlier visits
                continue
            used = _usage(reply)
            usage = usage + used
            progress.call_done(used.to_dict(), reply)
            spent.model, spent.usage = ref.ref, usage
            if reply.stop_reason != "tool_use" or not any(
                b.type == "tool_use" for b in reply.content
            ):
                break
            if rounds >= self.max_tool_rounds:
                raise ActorError(
                    f"role {request.role_name!r} was still calling tools after "
                    f"{self.max_tool_rounds} rounds ({tool_calls} tool calls); the step was "
                    "stopped. Resume the thread to try again, or narrow the role's procedure.",
                    kind="tool-loop",
                )
            rounds += 1
            results = []
            for block in reply.content:
                if block.type != "tool_use":
                    continue
                progress.tool_call(block.name, block.input, block.id)
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
                text, is_error = await toolbox.run(block.name, block.input)
                progress.tool_done(block.name, block.id, is_error)
                tool_calls += 1
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": block.id,
                        "content": text or "(no output)",
                        "is_error": is_error,
                    }
                )
            conversation.append({"role": "assistant", "content": _content_params(reply.content)})
            conversation.append({"role": "user", "content": results})
        text = "".join(b.text for b in reply.content if b.type == "text")
        if not text.strip():
            raise ActorError(_empty_reply(reply, params["max_tokens"]), kind="provider")
        return ActReply(
            text=text,
            message=message,
            usage=usage,
            cost_usd=cost_usd(ref.ref, usage),
            model=ref.ref,
            tool_calls=tool_calls,
        )

    async def _call(
        self, client: AsyncAnthropic, params: dict[str, Any], progress: StepProgress | None = None
    ) -> Any:
        # The SDK's timeout bounds each read, and a stream that keeps sending pings never
        # trips it: the whole call (the SDK's retries included) gets a deadline of its own.
        try:
            async with asyncio.timeout(self.deadline):
                return await self._request(client, params, progress)
        except TimeoutError:
            raise ActorError(
                f"Anthropic API call did not finish within {self.deadline:g} s "
                "(the response kept the connection open without finishing)",
                kind="timeout",
            ) from None

    async def _request(
        self, client: AsyncAnthropic, params: dict[str, Any], progress: StepProgress | None = None
    ) -> Any:
        if not self.stream:
            return await client.messages.create(**params)
        # Tokens are counted per event only for a display that listens: with nobody listening
        # (a batch, a service) each of a reply's events costs one comparison here, no more.
        listening = progress if progress is not None and progress.callback is not None else None
        async with client.messages.stream(**params) as stream:
            finished = False
            async for event in stream:
                if listening is not None:
                    listening.stream_event(event)
                if event.type == "message_stop":
                    finished = True
            if not finished:
                raise IncompleteStream()
            return await stream.get_final_message()

    # ------------------------------------------------------------------ the client

    def _get_client(self) -> AsyncAnthropic:
        loop = asyncio.get_running_loop()
        if self._client is not None and self._client_loop is loop:
            return self._client
        if self.provider != "anthropic":
            self._client, self._secret = claude_client(
                self.provider, base_url=self._base_url, max_retries=self.max_retries,
                timeout=self.timeout,
            )  # fmt: skip
            self._client_loop = loop
            return self._client
        credentials = {"api_key": self._api_key} if self._api_key else env_credentials()
        if not credentials:
            raise ActorError(NO_KEY, kind="provider")
        import anthropic  # deferred: about a second of import time

        self._secret = tuple(credentials.values())
        # A connection pool belongs to the event loop it was made on, so a new loop (a caller
        # using asyncio.run per step) gets a new client. The http client is passed in because
        # the SDK's default one schedules its own close on whatever loop runs when it is
        # garbage-collected, which fails noisily once its own loop is gone.
        self._client = anthropic.AsyncAnthropic(
            api_key=credentials.get("api_key"),
            auth_token=credentials.get("auth_token"),
            base_url=self._base_url,
            max_retries=self.max_retries,
            timeout=self.timeout,
            http_client=http_client(),
        )
        self._client_loop = loop
        return self._client

    # ------------------------------------------------------------------ errors

    def _kind(self, exc: BaseException) -> str:
        return failure_kind(exc)

    def _describe(self, exc: BaseException) -> str:
        return describe_failure(
            exc, self.provider, self.max_retries + 1, self.timeout, self._where()
        )

    def _where(self) -> str:
        """The endpoint, for a message: without the credentials a URL may carry."""
        if self._client is not None:
            where = str(self._client.base_url)
        else:
            where = self._base_url or os.environ.get("ANTHROPIC_BASE_URL") or "api.anthropic.com"
        return redact_url_credentials(where)

    def _scrub(self, text: str) -> str:
        return Secrets.of(self._secret).redact(text)


# ---------------------------------------------------------------------- request building


def build_conversation(request: ActRequest, message: str) -> list[dict[str, Any]]:
    """Earlier visits (memory: session), this visit, then rejected attempts and their errors."""
    turns: list[dict[str, Any]] = []
    for visit in request.previous_visits:
        turns.append({"role": "user", "content": visit.message or "(empty message)"})
        turns.append({"role": "assistant", "content": visit.reply or "(empty reply)"})
    turns.append({"role": "user", "content": message})
    for attempt in request.attempts:
        turns.append({"role": "assistant", "content": attempt.reply or "(empty reply)"})
        turns.append({"role": "user", "content": repair_message(attempt.errors, request.role)})
    return turns


def request_params(
    *,
    model: str,
    max_tokens: int,
    temperature: float | None,
    system: str,
    tools: list[dict[str, Any]],
    conversation: list[dict[str, Any]],
) -> dict[str, Any]:
    """The keyword arguments of `messages.create`, with the cache breakpoints placed."""
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "system": [{"type": "text", "text": system, "cache_control": EPHEMERAL}],
        "messages": with_breakpoints(conversation),
    }
    if tools:
        params["tools"] = [*tools[:-1], {**tools[-1], "cache_control": EPHEMERAL}]
    if temperature is not None:
        # This SDK generation has no `temperature` keyword (current models choose their own
        # sampling and some reject the field), so a role that sets one sends it as a raw field.
        params["extra_body"] = {"temperature": temperature}
    return params


def with_breakpoints(conversation: list[dict[str, Any]], count: int = 2) -> list[dict[str, Any]]:
    """A copy of the conversation with `cache_control` on the last block of its last user turns."""
    marked: list[dict[str, Any]] = []
    left = count
    for turn in reversed(conversation):
        content = turn["content"]
        if turn["role"] == "user" and left > 0:
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            blocks = [*blocks[:-1], {**blocks[-1], "cache_control": EPHEMERAL}]
            marked.append({"role": "user", "content": blocks})
            left -= 1
        else:
            marked.append(turn)
    marked.reverse()
    return marked


def _content_params(blocks: Any) -> list[dict[str, Any]]:
    """An assistant message's content as request blocks (thinking blocks kept verbatim)."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        if block.type == "text":
            if block.text:
                out.append({"type": "text", "text": block.text})
        elif block.type == "tool_use":
            out.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
            )
        else:
            out.append(block.to_dict(mode="json", exclude_none=True))
    return out


def _usage(message: Any) -> Usage:
    u = message.usage
    return Usage(
        input_tokens=u.input_tokens or 0,
        output_tokens=u.output_tokens or 0,
        cache_creation_input_tokens=u.cache_creation_input_tokens or 0,
        cache_read_input_tokens=u.cache_read_input_tokens or 0,
    )


def _empty_reply(message: Any, max_tokens: int) -> str:
    reason = message.stop_reason
    if reason == "max_tokens":
        return (
            f"the model used its whole max_tokens ({max_tokens}) before writing a reply; "
            "raise max_tokens for this role"
        )
    if reason == "refusal":
        return "the model declined to answer (stop_reason: refusal)"
    return f"the Anthropic API returned an empty reply (stop_reason: {reason})"
