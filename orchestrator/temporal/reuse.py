"""`threads fork --reuse` on Temporal: the steps of a fork that take the original's kept reply.

Theory of operation
-------------------
A fork made with `--reuse` (docs/format.md section 20) serves a step after the fork point from
the original thread, without calling its actor, while the step's role and rendered prompt equal
the original's at the same step number; from the first difference on, every step is decided and
played as usual. On Temporal that comparison is the workflow's and the serving the activity's:

    kept_steps   the session, making the fork: the original's steps after the fork point, by
                 number (role, rendered prompt, accepted reply), from the original's log (the
                 fork point itself is decided again, by its actor, or replaced); they
                 travel in the fork's `ThreadInput` (and through continue-as-new) as data
    reused       the workflow, before each step (pure): the kept step when this one equals it,
                 and what stays kept afterwards (nothing, from the first difference on)
    KeptReply    the activity (activities.py): the kept reply played as the step's actor,
                 instead of the role's

So the workflow does no I/O to reuse a step (it compares data it holds) and the role's actor is
never called for a reused step. As locally (run/reuse.py), replies are reused, not files: on a
shared branch the reused step commits the worktree as it finds it (one commit a step).
"""

from __future__ import annotations

from typing import Any

from ..core.events import Event, StepCommitted, StepStarted

REUSED = "reuse"  # the actor a reused step's StepCommitted names (as run/reuse.py names it)


def kept_steps(from_thread: str, events: list[Event], at: int) -> dict[str, Any]:
    """The original's committed steps numbered above `at` (the fork point itself is decided
    again or replaced), as JSON values keyed by the step number (a string)."""
    started: dict[int, StepStarted] = {}
    steps: dict[str, Any] = {}
    for event in events:
        if isinstance(event, StepStarted):
            started[event.step] = event  # the last start of a step is the one committed
        elif isinstance(event, StepCommitted) and event.step > at and event.step in started:
            begun = started[event.step]
            steps[str(event.step)] = {
                "role": event.role,
                "prompt": begun.prompt,
                "reply": event.reply,
                "message": event.message,
            }
    return {"thread": from_thread, "at": at, "steps": steps}


def reused(
    kept: dict[str, Any] | None, step: int, role: str, prompt: str, repair: bool = False
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the kept step this one takes, or None; what stays kept afterwards). A step that differs
    from the original's at its number (another role, another prompt, none at all) ends the
    reuse for good; so does a repair (a reused reply the contract now rejects: the actor
    fixes it)."""
    if kept is None:
        return None, None
    if step <= int(kept["at"]):  # the fork point itself is decided again (or was replied)
        return None, kept
    same = kept["steps"].get(str(step))
    if repair or same is None or same["role"] != role or same["prompt"] != prompt:
        return None, None
    return {**same, "thread": kept["thread"], "step": step}, kept
