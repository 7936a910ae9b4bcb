"""What happens inside a step while it runs, for a display: tokens as they stream, tool calls.

An actor that can tell (the Anthropic actor) calls the request's `progress` callback with a
`Progress` record; the runner passes `RunOptions.on_progress` through, and the terminal's live
view shows it. Nothing here is recorded: the log keeps what a step produced, not how it got
there, so a display may drop these freely.

Token counts are the step's totals so far. While a reply streams, its output tokens are an
estimate (about four characters a token); each model call's exact usage replaces it when the
call ends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class ProgressKind(StrEnum):
    TOKENS = "tokens"  # the step's tokens so far
    MODEL_CALL = "model-call"  # a model call is starting: `model`
    MODEL_DONE = "model-done"  # it ended: `call` holds its usage, `finish` its stop reason
    TOOL = "tool"  # a tool call is starting: `tool`, `argument`, `call_id`
    TOOL_DONE = "tool-done"  # it ended: `error` when the tool reported one


@dataclass(frozen=True)
class Progress:
    step: int
    kind: ProgressKind
    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False  # output_tokens counts a reply still streaming, estimated
    tool: str = ""
    argument: str = ""  # the call's main argument, in short
    call_id: str = ""  # the model's id of the tool call, or the response's id
    model: str = ""
    finish: str = ""  # why the model stopped (end_turn, tool_use, max_tokens)
    error: bool = False
    call: Mapping[str, int] | None = None  # one model call's usage, the API's four counts
    server: str = ""  # MODEL_CALL: the API's base URL (what a trace names as server.address)
    max_tokens: int | None = None  # MODEL_CALL: the request's limit and temperature, as sent
    temperature: float | None = None

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


OnProgress = Callable[[Progress], None]

CHARS_PER_TOKEN = 4
MAIN_ARGUMENTS = ("command", "path", "file_path", "pattern", "query", "url", "name")


def short_argument(arguments: Any, width: int = 60) -> str:
    """A tool call's arguments as a person glances at them: `view src/app.py`, `pytest -q`."""
    if not isinstance(arguments, Mapping):
        return ""
    parts = [str(arguments[k]) for k in MAIN_ARGUMENTS if isinstance(arguments.get(k), str)]
    if not parts:
        parts = [str(v) for v in arguments.values() if isinstance(v, (str, int, float))][:1]
    text = " ".join(" ".join(parts).split())
    return text if len(text) <= width else text[: width - 1] + "…"


class StepProgress:
    """The Anthropic actor's side: counts one `play()` and reports to the callback, if any."""

    def __init__(self, callback: OnProgress | None, step: int):
        self.callback = callback
        self.step = step
        self.input_tokens = 0
        self.output_tokens = 0
        self.streamed = 0  # characters of the reply streaming now

    def stream_event(self, event: Any) -> None:
        """One event of a streaming response: text and tool input count as they arrive."""
        if self.callback is None or getattr(event, "type", "") != "content_block_delta":
            return
        delta = event.delta
        self.streamed += len(getattr(delta, "text", "") or getattr(delta, "partial_json", ""))
        self._tokens(estimated=True)

    def call_start(
        self,
        model: str,
        *,
        server: str = "",
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> None:
        self._tell(
            ProgressKind.MODEL_CALL,
            model=model,
            server=server,
            max_tokens=max_tokens,
            temperature=temperature,
        )

    def call_done(self, usage: Mapping[str, int], message: Any = None) -> None:
        """A model call ended: its exact usage (the API's four counts), added to the step's."""
        self.input_tokens += sum(v for k, v in usage.items() if k != "output_tokens")
        self.output_tokens += usage.get("output_tokens", 0)
        self.streamed = 0
        if self.callback is None:
            return
        self._tell(
            ProgressKind.MODEL_DONE,
            model=str(getattr(message, "model", "") or ""),
            call_id=str(getattr(message, "id", "") or ""),
            finish=str(getattr(message, "stop_reason", "") or ""),
            call=dict(usage),
        )
        self._tokens(estimated=False)

    def tool_call(self, name: str, arguments: Any, call_id: str = "") -> None:
        self._tell(
            ProgressKind.TOOL, tool=name, argument=short_argument(arguments), call_id=call_id
        )

    def tool_done(self, name: str, call_id: str, error: bool) -> None:
        self._tell(ProgressKind.TOOL_DONE, tool=name, call_id=call_id, error=error)

    def _tell(self, kind: ProgressKind, **facts: Any) -> None:
        if self.callback is not None:
            self.callback(Progress(self.step, kind, self.input_tokens, self.output_tokens, **facts))

    def _tokens(self, *, estimated: bool) -> None:
        assert self.callback is not None
        out = self.output_tokens + self.streamed // CHARS_PER_TOKEN
        self.callback(
            Progress(self.step, ProgressKind.TOKENS, self.input_tokens, out, estimated=estimated)
        )
