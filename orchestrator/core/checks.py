"""What the moderator checks: the limits (D7) and a step's location (D5b) before a step starts,
and a reply's size before it is read (J2).

Pure functions of the state; the rules they apply are listed in engine.py's theory of operation.
"""

from __future__ import annotations

from ..definition.models import Role
from ..extract import ExtractError, Output, extract_output
from .commands import Limits, Record
from .events import SuspendKind, ThreadSuspended
from .state import ThreadState


def suspend(reason: str, kind: SuspendKind, step: int | None = None) -> Record:
    return Record(ThreadSuspended(reason, kind, step=step))


def check_limits(state: ThreadState, role: str, limits: Limits) -> Record | None:
    steps = state.committed + state.child_steps - state.budget_step
    if steps >= limits.max_steps:
        return suspend(
            f"limit max_steps ({limits.max_steps}) reached after {steps} steps; raise "
            f"`limits.max_steps` in the graph or pass --max-steps, then resume",
            SuspendKind.LIMIT,
        )
    visits = state.visits.get(role, 0) - state.budget_visits.get(role, 0)
    if visits >= limits.max_visits:
        return suspend(
            f"limit max_visits ({limits.max_visits}) reached: role '{role}' already ran "
            f"{visits} times; raise `limits.max_visits` in the graph, then resume",
            SuspendKind.LIMIT,
        )
    spent = state.cost_usd - state.budget_cost
    if limits.max_cost_usd is not None and spent >= limits.max_cost_usd:
        return suspend(
            f"limit max_cost_usd (${limits.max_cost_usd:.2f}) reached: ${spent:.4f} spent; "
            f"raise `limits.max_cost_usd` in the graph, then resume",
            SuspendKind.LIMIT,
        )
    return None


MAX_LOCATION = 1024  # characters of a rendered `location:`; a folder name at most 255


def location_problem(location: str) -> str | None:
    """Why a rendered location cannot be a folder inside the workspace, or None."""
    if "\0" in location:
        return "holds a NUL character"
    if len(location) > MAX_LOCATION:
        return f"is {len(location):,} characters long (at most {MAX_LOCATION:,})"
    parts = location.replace("\\", "/").split("/")
    if any(len(part) > 255 for part in parts):
        return "has a folder name over 255 characters"
    if location.startswith(("/", "~")) or (len(location) > 1 and location[1] == ":"):
        return "is absolute; a location is a folder inside the workspace"
    depth = 0
    for part in parts:
        depth += -1 if part == ".." else 0 if part in ("", ".") else 1
        if depth < 0:
            return "leads outside the workspace"
    return None


MAX_REPLY_CHARS = 1_000_000  # a reply over this is rejected unread, and kept cut
KEPT_OF_A_HUGE_REPLY = 20_000


def extract_reply(text: str, role: Role) -> Output:
    if len(text) > MAX_REPLY_CHARS:
        raise ExtractError(
            [
                f"the reply has {len(text):,} characters; at most {MAX_REPLY_CHARS:,} are "
                "accepted: write long content to files in the workspace and reply with a summary"
            ]
        )
    return extract_output(text, role)
