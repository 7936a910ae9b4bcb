"""A role's session memory: its earlier visits, kept within a token budget, built in O(1).

With `memory: session` a revisited role is sent its earlier visits as a conversation. Two
things must not grow with the thread:

- the work of building a step's request and the memory it holds: a `SessionMemory` (one per
  advancing thread, fed every event folded into the thread's state) keeps each role's visits
  in its window and the running sums of their sizes, and lets go of the visits the window has
  left behind, so a step costs the same at visit 10 and at 10,000, and so does the memory;
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
thread, a Temporal workflow) that folds the same events chooses the same window.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

from ..core.events import Event, StepCommitted
from ..core.records import Visit
from ..definition.models import Graph, Role

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


def budget_for(graph: Graph, role: Role) -> int:
    return role.memory_budget or graph.defaults.memory_budget or DEFAULT_BUDGET


@dataclass
class _RoleVisits:
    visits: list[Visit] = field(default_factory=list)  # those in the window, oldest first
    sums: list[int] = field(default_factory=lambda: [0])  # tokens of the visits before each
    dropped: int = 0  # visits before the window, let go


class SessionMemory:
    """Each `memory: session` role's visits within its budget, for one thread.

    Fed every event folded into the thread's state (`observe`), since the state keeps no more
    than a role's latest step. The window only moves forward, so the visits it leaves behind
    are let go: what it holds is bounded by the budget, whatever the thread's length."""

    def __init__(self, graph: Graph) -> None:
        self._budgets = {
            name: budget_for(graph, role)
            for name, role in graph.roles.items()
            if role.memory == "session"
        }
        self._roles: dict[str, _RoleVisits] = {}

    def observe(self, event: Event) -> None:
        if not isinstance(event, StepCommitted) or event.role not in self._budgets:
            return
        known = self._roles.setdefault(event.role, _RoleVisits())
        visit = Visit(event.message, event.reply)
        known.visits.append(visit)
        known.sums.append(known.sums[-1] + estimate_tokens(visit))
        # The sums are the thread's running totals, so the window starts where it would
        # over every visit the role ever made.
        start = window_start(known.sums, self._budgets[event.role])
        if start:
            del known.visits[:start]
            del known.sums[:start]
            known.dropped += start

    def window(self, role: str) -> tuple[tuple[Visit, ...], int]:
        """(the visits to send, oldest first; how many earlier ones were left out)."""
        known = self._roles.get(role)
        return (tuple(known.visits), known.dropped) if known is not None else ((), 0)
