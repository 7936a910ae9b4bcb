"""What a person may do to a thread now, asked of the moderator rather than re-derived. Pure.

Theory of operation. The moderator's `judge` is the one place that decides whether an outcome
may be taken: it raises `Refused` (recording nothing, being pure) when it may not. A face that
offers buttons (the web page, a future `allowed` query) asks the judge the very question the
button would send, and so can never drift from the rules (J13-J17 of engine.py):

- `can_resume(graph, state)`: the judge on `ResumeRequested` with a message; when that is
  allowed, once more without one, to learn whether the message is required (a completed
  thread whose `$START.resume` edge reads `{{{$inputs.message}}}`: `edges.needs_message`).
- `can_cancel(state)`: the judge on `CancelRequested`, which looks at the state only.

Whether this process may act (a thread another process runs, say) is the face's own business.
"""

from __future__ import annotations

from typing import NamedTuple

from ..definition.models import Graph
from .engine import judge
from .outcomes import CancelRequested, Refused, ResumeRequested
from .state import ThreadState

# What a message-less resume is asked with: any non-blank text, never recorded (judge is pure).
_A_MESSAGE = "a message"


class Allowed(NamedTuple):
    """The judge's answer: `ok`, whether a message must come with it, and why not (or why the
    message is needed), in the words the judge would refuse with."""

    ok: bool
    needs_message: bool = False
    why: str = ""


def can_resume(graph: Graph | None, state: ThreadState) -> Allowed:
    if graph is None:
        return Allowed(False, why="the thread's graph cannot be read, so it cannot be resumed")
    try:
        judge(graph, state, ResumeRequested(_A_MESSAGE))
    except Refused as exc:
        return Allowed(False, why=exc.message)
    try:
        judge(graph, state, ResumeRequested(None))
    except Refused as exc:  # J15: only a message is missing
        return Allowed(True, needs_message=True, why=exc.message)
    return Allowed(True)


def can_cancel(state: ThreadState) -> Allowed:
    try:
        judge(None, state, CancelRequested())
    except Refused as exc:
        return Allowed(False, why=exc.message)
    return Allowed(True)
