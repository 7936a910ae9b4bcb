"""Forking a thread (docs/format.md section 20; rules F1-F3 and A13 of engine.py). Pure.

A fork is a new thread whose history is the original's up to step N; the original is never
touched. `fork_events` makes the new thread's first events from the original's log, and
nothing else: the caller (the local session, the Temporal session) stores them under the new
thread and advances it as any thread, through the driver.

    plan = fork_events(original_events, graph, new_id="fork-1", at=3, reply=None, message="shorter")
    plan.events      # ThreadStarted(fork-1, ...), the original's events before step 3, ThreadForked
    plan.at          # 3 (None asked for the default: the last committed step + 1)
    plan.base_step   # 2: a worktree thread's fork starts from the commit of this step (0: base)
    plan.forked_from # {"thread": original id, "step": 3}

What the events are (F1): the original's ThreadStarted with the new id (and `workspace`, if
given: a fork with a worktree of its own; `title`, if given, else the original's, and its
labels), then every event before the first one that starts
step N or a later one (StepStarted, BranchesStarted), less a trailing suspension, ending,
failure, cancel, waiting step or rejected attempt (what stopped the original there is not the
fork's); then `ThreadForked(from_thread, at_step, message, reply, reuse, title)` (`reuse` is
read by run/reuse.py). Folded (A13), the thread
runs, `forked_from` set, and the driver decides step N again from its edge: its prompt rendered
anew, with the message appended as a resume's message is ("Message from the person who forked
this thread").

With `reply` (F3): the text a person would answer step N with (`format_reply(status, fields)`
makes it from a status and fields). Step N is started as `decide` starts it now, and the reply
is judged exactly as a person's answer (`judge(..., Answered)`, J8/J9): refused with the
contract's errors (a missing field, a status the role does not have), refused when it would
suspend the thread or when step N is not one step a reply can stand for (an ending, a fan-out,
a subgraph role). The events then end with StepStarted(N) and StepCommitted(N, actor "fork"),
and the fork continues from the edge the reply picks.

Refusals (F2) raise `Refused` naming the thread, step and role, before anything exists: which
steps may be forked at is `allowed.fork_verdict` (every face asks it, or `allowed().fork_steps`);
this module adds what needs the whole log: a step that is a branch of a fan-out (other than its
first) and a subgraph's child thread (fork its parent instead).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..definition.models import SINGLE_EXIT, Graph
from ..definition.yamlpos import typed_value
from ..errors import InputError
from ..extract import format_reply
from .allowed import fork_verdict
from .commands import Record
from .engine import decide, fold, judge
from .events import (
    AttemptRejected,
    BranchesStarted,
    BranchFailed,
    Event,
    HumanWaiting,
    StepCommitted,
    StepStarted,
    ThreadCancelled,
    ThreadCompleted,
    ThreadFailed,
    ThreadForked,
    ThreadStarted,
    ThreadSuspended,
)
from .outcomes import Answered, Refused
from .titles import one_line

# What stopped the original after its last kept step: not the fork's (F1).
_TAIL = (
    ThreadSuspended,
    ThreadCompleted,
    ThreadFailed,
    ThreadCancelled,
    HumanWaiting,
    AttemptRejected,
    BranchFailed,
)


@dataclass(frozen=True)
class Fork:
    """A fork's first events, and where it was made."""

    events: tuple[Event, ...]  # ThreadStarted (the new id) first, ThreadForked (or step N) last
    at: int  # the step forked at
    base_step: int  # the last step kept whole: a worktree fork starts from its commit (0: none)
    from_thread: str

    @property
    def forked_from(self) -> dict[str, Any]:
        return {"thread": self.from_thread, "step": self.at}


def fork_events(
    events: Sequence[Event],
    graph: Graph,
    *,
    new_id: str,
    at: int | None = None,
    reply: str | None = None,
    message: str | None = None,
    workspace: str | None = None,
    reuse: bool = False,
    title: str | None = None,
) -> Fork:
    """The first events of a fork of the thread whose log is `events` (see the module's
    docstring). `graph`: the graph the fork runs on (a reply is checked against its roles).
    Raises Refused (nothing made) when the fork may not be made."""
    if not events or not isinstance(events[0], ThreadStarted):
        raise Refused("a thread's log starts with ThreadStarted; this one cannot be forked")
    started = events[0]
    original = fold(list(events))
    tid = original.thread_id
    if started.parent is not None:
        raise Refused(
            f"thread {tid} is the child of step {started.parent_step} of thread "
            f"{started.parent}: fork the parent thread instead"
        )
    verdict = fork_verdict(original, at)
    if not verdict.ok:
        raise Refused(verdict.why)
    n = original.committed + 1 if at is None else at
    kept = _before_step(events, n)
    state = fold(kept)
    if state.busy or (state.fanout is not None and not state.fanout.complete):
        first = state.fanout.first_step if state.fanout is not None else n
        raise Refused(
            f"step {n} of thread {tid} is a branch of the fan-out that starts at step {first}: "
            f"fork at step {first} (the fan-out runs again) or at its join"
        )
    text = message.strip() if message and message.strip() else None
    # A fork keeps the original's labels, and its title unless it is given one.
    named = one_line(title) if title and title.strip() else started.title
    head = replace(started, thread_id=new_id, workspace=workspace or started.workspace, title=named)
    forked = ThreadForked(tid, n, text, reply, reuse, title)
    out: list[Event] = [head, *kept[1:], forked]
    if reply is not None:
        out += _replied(graph, out, tid, n, reply)
    return Fork(tuple(out), n, state.committed, tid)


def _before_step(events: Sequence[Event], n: int) -> list[Event]:
    """F1: the events before the first that starts step `n` or a later one, less the tail
    of what stopped the thread there."""
    cut = len(events)
    for i, event in enumerate(events):
        if (isinstance(event, StepStarted) and event.step >= n) or (
            isinstance(event, BranchesStarted) and event.first_step >= n
        ):
            cut = i
            break
    kept = list(events[:cut])
    while len(kept) > 1 and isinstance(kept[-1], _TAIL):
        kept.pop()
    return kept


def _replied(graph: Graph, log: list[Event], tid: str, n: int, reply: str) -> list[Event]:
    """F3: step `n` started as `decide` starts it, and the reply judged as a person's answer."""
    command = decide(graph, fold(log))
    start = command.event if isinstance(command, Record) else None
    if not isinstance(start, StepStarted) or start.step != n:
        what = type(start).__name__ if start is not None else type(command).__name__
        raise Refused(
            f"step {n} of a fork of thread {tid} is not one step a reply can stand for "
            f"(the thread goes on with {what}): fork at step {n} without a reply"
        )
    role = graph.roles.get(start.role)
    if role is None or role.graph is not None:
        raise Refused(
            f"step {n} ({start.role}) plays a subgraph: its output is its child thread's "
            "ending; fork it without a reply"
        )
    asked = fold([*log, start, HumanWaiting(n, start.role)])  # scratch: never recorded
    try:
        judged = judge(graph, asked, Answered(reply, n))
    except Refused as exc:
        raise Refused(
            f"the reply for step {n} ({start.role}) of the fork was not accepted: it does not "
            f"fit the contract of role '{start.role}'",
            exc.errors or (exc.message,),
        ) from None
    if not judged or not isinstance(judged[0], StepCommitted):
        raise Refused(
            f"the reply for step {n} ({start.role}) would suspend the fork: give one of the "
            f"role's statuses ({', '.join(role.contract.statuses)})"
        )
    return [start, replace(judged[0], actor="fork")]


def reply_text(
    graph: Graph,
    events: Sequence[Event],
    at: int | None,
    reply: str | None,
    status: str | None,
    assignments: Mapping[str, Any] | None,
) -> str | None:
    """A fork's replacement reply: `reply` as given, or one made from a status and fields, text
    values typed by the contract of the role step `at` started with (as `threads answer
    --status --set` makes one); None: no reply. The moderator checks the reply itself (F2)."""
    if reply is not None:
        if status is not None or assignments:
            raise InputError("give either a reply or a status with fields, not both")
        return reply
    if status is None and not assignments:
        return None
    n = at if at is not None else fold(list(events)).committed + 1
    roles = [
        e.role for e in events if isinstance(e, StepStarted) and e.step == n and e.branch is None
    ]
    role = graph.roles.get(roles[-1]) if roles else None
    contract = role.contract.for_status(status or SINGLE_EXIT) if role is not None else None
    schemas = contract.field_schemas if contract is not None else {}
    typed = {
        k: typed_value(v, schemas.get(k, {"type": "any"})) if isinstance(v, str) else v
        for k, v in (assignments or {}).items()
    }
    return format_reply(None if status in (None, SINGLE_EXIT) else status, typed)
