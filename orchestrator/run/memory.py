"""A role's session memory: its earlier visits, kept within a token budget, built in O(1).

With `memory: session` a revisited role is sent its earlier visits as a conversation. Two
things must not grow with the thread:

- the work of building a step's request: a `SessionMemory` (one per advancing thread) keeps
  each role's visits and the running sum of their sizes, and extends them by the visits
  committed since the role's last step, so a step costs the same at visit 10 and at 10,000;
- what the model is sent: the conversation is kept within the role's `memory_budget` (tokens,
  estimated from the text's length; default `DEFAULT_BUDGET`, a safe share of a 200k-token
  context window). The oldest visits are dropped first, and the first message kept says how
  many were left out.

Dropping and prompt caching: the provider's cache holds the conversation's prefix, so the start
of the kept window must not move at every step. It moves in jumps of half the budget: the
window starts at the first visit whose running sum reaches the next multiple of half the budget
that leaves the rest within it. Between two jumps the prefix (and the note, which counts the
visits left out) is byte-identical and cached; after a jump the window holds between half the
budget and the budget, and the cache is written anew once.

Pure where it matters: `window_start` is a function of the sizes, so any process (a resumed
thread, a Temporal worker without a cache) chooses the same window.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

from ..actors.base import Visit
from ..core.state import ThreadState

# A safe share of a 200,000-token context window: the rest holds the system prompt, the tools,
# the history block, this visit's message, repairs, tool rounds and the reply.
DEFAULT_BUDGET = 100_000
# Tokens are estimated as characters / 3: more tokens than English text has (about 4 characters
# a token), so the estimate errs on the safe side.
CHARS_PER_TOKEN = 3


def estimate_tokens(visit: Visit) -> int:
    return (len(visit.message) + len(visit.reply)) // CHARS_PER_TOKEN + 8  # + turn overhead


def window_start(sums: list[int], budget: int) -> int:
    """The first visit kept, given `sums[i]` = the estimated tokens of visits before i."""
    total = sums[-1]
    if total <= budget:
        return 0
    half = max(1, budget // 2)
    threshold = -(-(total - budget) // half) * half  # rounded up to a multiple of half
    return bisect_left(sums, threshold)


def dropped_note(count: int) -> str:
    visits = "visit" if count == 1 else "visits"
    return (
        f"[{count} earlier {visits} of yours in this thread are left out here to keep the "
        "conversation within its budget; the history below and this message say what you need.]"
    )


@dataclass
class _RoleVisits:
    visits: list[Visit] = field(default_factory=list)
    sums: list[int] = field(default_factory=lambda: [0])


class SessionMemory:
    """Each role's visits and running sizes for one thread, extended as the thread grows."""

    def __init__(self) -> None:
        self._roles: dict[str, _RoleVisits] = {}
        self._state_id = 0

    def window(self, state: ThreadState, role: str, budget: int) -> tuple[tuple[Visit, ...], int]:
        """(the visits to send, oldest first; how many earlier ones were left out)."""
        if id(state) != self._state_id:  # another state (re-read after a conflict): start over
            self._roles, self._state_id = {}, id(state)
        known = self._roles.setdefault(role, _RoleVisits())
        indexes = state.visits.get(role, [])
        if len(indexes) < len(known.visits):  # cannot happen with one state; be safe
            known = self._roles[role] = _RoleVisits()
        for i in indexes[len(known.visits) :]:
            step = state.steps[i]
            visit = Visit(step.message, step.reply)
            known.visits.append(visit)
            known.sums.append(known.sums[-1] + estimate_tokens(visit))
        start = window_start(known.sums, budget)
        return tuple(known.visits[start:]), start


def session_window(
    state: ThreadState, role: str, budget: int, memory: SessionMemory | None = None
) -> tuple[tuple[Visit, ...], int]:
    """The role's visits within `budget`; without a `memory`, computed from the state alone."""
    return (memory or SessionMemory()).window(state, role, budget)
