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
    TOOL = "tool"  # a tool call is starting


@dataclass(frozen=True)
class Progress:
    step: int
    kind: ProgressKind
    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False  # output_tokens counts a reply still streaming, estimated
    tool: str = ""
    argument: str = ""  # the call's main argument, in short

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

    def call_done(self, input_tokens: int, output_tokens: int) -> None:
        """A model call ended: its exact usage, added to the step's."""
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.streamed = 0
        if self.callback is not None:
            self._tokens(estimated=False)

    def tool_call(self, name: str, arguments: Any) -> None:
        if self.callback is not None:
            self.callback(
                Progress(
                    self.step,
                    ProgressKind.TOOL,
                    self.input_tokens,
                    self.output_tokens,
                    tool=name,
                    argument=short_argument(arguments),
                )
            )

    def _tokens(self, *, estimated: bool) -> None:
        assert self.callback is not None
        out = self.output_tokens + self.streamed // CHARS_PER_TOKEN
        self.callback(
            Progress(self.step, ProgressKind.TOKENS, self.input_tokens, out, estimated=estimated)
        )
