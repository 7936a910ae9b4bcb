"""The live terminal view of a running thread (rich), used by `run` and `threads resume`.

What a person watching a terminal sees:

    ✓ step 1  planner    → ready                    8.2s · 6,120 tok · $0.0231 · 4 tool calls
    ↺ step 3  reviewer   → rejected, back to developer   5.1s · 3,410 tok · $0.0102
    ⠹ step 4  developer  0:12   │  thread 0:41 · 18,230 tok · $0.0712

Above, one line per finished step (its status, and "back to ROLE" when the edge it takes sends
the work back: a loop of the graph, `views/loops.py`), plus a line for each repair, suspension,
resume and completion; these stay in the scrollback. Below, one status line redrawn a few times a second while a step runs:
the current step and role, how long it has run, and the thread's elapsed time, tokens and cost
so far. Inside a step, the actor tells the view what happens (`RunOptions.on_progress`): the
tool call running now with its main argument in short (`⚙ bash pytest -q`), and the step's
tokens as they stream (`~` while a reply is still streaming: estimated, made exact when each
model call ends); a rejected reply prints its line at once, and the status line counts the
repair. Cost grows when a step finishes.

The view only reads events; it never changes the thread. It writes to the terminal's raw stream
(its own escapes redraw the status line), so every piece of the thread it shows (a reason, a
reply's errors, a tool call's argument) is neutralised first (`terminal.py`); rich's `Text`
reads no markup. While a person answers for a human
role on this terminal, the status line is taken down so the questions are not drawn over.
rich is imported when a view is made, not when this module is imported.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..actors.progress import Progress, ProgressKind
from ..core.events import (
    AttemptRejected,
    HumanWaiting,
    StepCommitted,
    StepStarted,
    ThreadCompleted,
    ThreadResumed,
    ThreadSuspended,
)
from ..core.ledger import money, tokens
from ..core.state import ThreadState
from ..store.base import StoredEvent
from ..views.facts import StepFigures, step_facts
from ..views.loops import sends_back
from .display import child_line, describe
from .terminal import neutralise, raw

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text


def live_possible(stream: Any = None) -> bool:
    """True when stderr is an interactive terminal that can redraw a line."""
    stream = sys.stderr if stream is None else stream
    try:
        tty = bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
    return tty and os.environ.get("TERM", "") != "dumb"


def clock_text(seconds: float) -> str:
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class LiveView:
    """An `on_event` callback and a context manager that keeps a rich Live display up."""

    def __init__(
        self,
        graph: Any,
        thread_id: str,
        *,
        console: Console | None = None,
        interactive: bool = False,
        tokens_before: int = 0,
        clock: Callable[[], float] = time.monotonic,
        refresh_per_second: float = 4,
    ):
        from rich.console import Console  # deferred: rich loads with a view, not this module

        self.graph = graph
        self.thread_id = thread_id
        # The raw stream: the view's own escapes must work; the data in it is neutralised.
        self.console = console if console is not None else Console(file=raw(sys.stderr))
        self.interactive = interactive
        self.clock = clock
        self.refresh_per_second = refresh_per_second
        self.started = clock()
        self.tokens = tokens_before
        self.cost = 0.0
        self.step: int | None = None
        self.role: str | None = None
        self.step_started = self.started
        self.repairs = 0
        self.inside: Progress | None = None  # the latest word from inside the step in flight
        self.tool: Progress | None = None  # the step's latest tool call
        self.paused = False
        self._live: Live | None = None
        self._spinner: Any = None
        self.loops = sends_back(graph) if graph is not None else set()

    @classmethod
    def for_thread(
        cls, graph: Any, store: Any, thread_id: str, *, interactive: bool = False
    ) -> LiveView:
        """A view that counts the tokens a resumed thread had already used."""
        try:
            row = store.thread(thread_id)
            before = int(row.input_tokens) + int(row.output_tokens)
        except Exception:  # a store without summary rows: count from zero
            before = 0
        return cls(graph, thread_id, interactive=interactive, tokens_before=before)

    # ------------------------------------------------------------------ context manager

    def __enter__(self) -> LiveView:
        from rich.live import Live  # deferred: rich loads with a view, not this module

        self._live = Live(
            self,
            console=self.console,
            refresh_per_second=self.refresh_per_second,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._live.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    # ------------------------------------------------------------------ events

    def __call__(self, stored: StoredEvent, state: ThreadState) -> None:
        event = stored.event
        # A person being asked stays asked: a rejected answer is asked again below the display.
        if self.paused and not isinstance(event, (StepStarted, AttemptRejected)):
            self._resume_display()
        self.cost = state.cost_usd
        match event:
            case StepStarted():
                self.step, self.role = event.step, event.role
                self.step_started = self.clock()
                self.repairs = 0
                self.inside = self.tool = None
                role = self.graph.roles.get(event.role)
                if self.interactive and role is not None and role.is_human:
                    self._pause_display()
            case StepCommitted():
                self.inside = self.tool = None
                self.tokens += tokens(event.usage)
                self.step = self.role = None  # before printing: printing redraws the status
                self.print(self.step_line(event, state))
            case AttemptRejected():
                self.inside = self.tool = None  # the repair is a new call: counted afresh
                self.tokens += tokens(event.usage)
                self.repairs += 1
                self.print(self.note_line(event, state, "yellow"))
            case ThreadSuspended() | HumanWaiting():
                # A step that failed may still have spent tokens (ThreadSuspended.usage).
                self.inside = self.tool = None
                self.tokens += tokens(getattr(event, "usage", None))
                self.step = self.role = None
                self.print(self.note_line(event, state, "yellow"))
            case ThreadCompleted():
                self.step = self.role = None
                self.print(self.note_line(event, state, "green"))
            case ThreadResumed():
                self.print(self.note_line(event, state, "cyan"))

    def child(self, thread_id: str, stored: StoredEvent, state: ThreadState) -> None:
        """An event of a subgraph's child thread: a dim line above the display."""
        line = child_line(thread_id, stored, state)
        if line:
            self.print(Text(neutralise(line), style="dim"))

    def progress(self, news: Progress) -> None:
        """An `on_progress` callback: what happens inside the step in flight (not recorded)."""
        if news.step != self.step:
            return
        self.inside = news
        if news.kind == ProgressKind.TOOL:
            self.tool = news

    def print(self, line: Text) -> None:
        # With a Live display up, console.print goes above it and stays in the scrollback.
        self.console.print(line)

    def _pause_display(self) -> None:
        if self._live is not None and not self.paused:
            self._live.stop()
            self.paused = True

    def _resume_display(self) -> None:
        self.paused = False
        if self._live is not None:
            self._live.start()

    # ------------------------------------------------------------------ rendering

    def step_line(self, event: StepCommitted, state: ThreadState) -> Text:
        from rich.text import Text  # deferred: rich loads with a view, not this module

        edge = self.graph.edge(event.role, event.status) if self.graph is not None else None
        earlier = edge is not None and (event.role, event.status) in self.loops
        line = Text()
        line.append("↺ " if earlier else "✓ ", style="yellow" if earlier else "green")
        line.append(f"step {event.step:<3}", style="bold")
        line.append(neutralise(f"{event.role:<11} "))
        line.append(neutralise(f"→ {event.status}"), style="yellow" if earlier else "green")
        if earlier and edge is not None:
            line.append(neutralise(f", back to {edge.role}"), style="yellow")
        line.append("   " + " · ".join(step_facts(StepFigures.of_event(event))), style="dim")
        return line

    def note_line(self, event: Any, state: ThreadState, style: str) -> Text:
        from rich.text import Text  # deferred: rich loads with a view, not this module

        return Text(neutralise("• " + describe(event, state)), style=style)

    def status_line(self) -> Text:
        from rich.text import Text  # deferred: rich loads with a view, not this module

        now = self.clock()
        line = Text()
        if self.step is not None and self.role is not None:
            line.append(f"step {self.step} ", style="bold")
            line.append(neutralise(f"{self.role} "), style="bold cyan")
            line.append(clock_text(now - self.step_started))
            if self.repairs:
                line.append(f" (repair {self.repairs})", style="yellow")
            if self.tool is not None:
                call = f"{self.tool.tool} {self.tool.argument}".strip()
                line.append(neutralise(f"  ⚙ {call}"), style="magenta")
        else:
            line.append("between steps", style="dim")
        line.append("   │  ", style="dim")
        inside = self.inside.tokens if self.inside is not None else 0
        about = "~" if self.inside is not None and self.inside.estimated else ""
        totals = f"thread {clock_text(now - self.started)} · {about}{self.tokens + inside:,} tok"
        if self.cost:  # replays and unpriced models have none to show
            totals += f" · {money(self.cost)}"
        line.append(totals, style="dim")
        return line

    def __rich__(self) -> Any:
        from rich.spinner import Spinner  # deferred: rich loads with a view, not this module

        # One spinner for the view's life: its frame is computed from its own start time.
        if self._spinner is None:
            self._spinner = Spinner("dots", style="cyan")
        self._spinner.update(text=self.status_line())
        return self._spinner
