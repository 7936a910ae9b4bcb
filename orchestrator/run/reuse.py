"""`--reuse` (docs/format.md section 20): a fork's steps take the original's replies while they
are asked the same thing.

After the fork point, a step whose role and rendered prompt equal those of the original's step
at the same position (step n of the fork, step n of the original) takes that step's accepted
reply without calling its actor, until the first difference: from then on every step calls its
actor. The reply is served by the replay actor (actors/recording.py) from the original's
recording, so a reused step is exactly a replayed one; it is recorded with actor `reuse` and no
usage (nothing was spent). Whether the difference was met is read from the fork's own log (a
step after the fork point that was not reused), so a fork resumed in another process goes on as
it left off. Only the fork's own steps are served: a subgraph child's steps call their actors.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..actors.base import ActReply, ActRequest, Usage
from ..actors.recording import Recording, ReplayActor
from ..core.events import Event, StepCommitted, ThreadForked
from ..definition.models import Role
from .options import ActorFor

REUSED = "reuse"  # the actor named in a reused step's StepCommitted


def reuse_from(events: list[Event]) -> ThreadForked | None:
    """The fork's ThreadForked when it reuses the original's replies and no step after the fork
    point has called its actor yet; else None."""
    forked: ThreadForked | None = None  # the last: a fork of a fork holds its origin's too
    for event in events:
        if isinstance(event, ThreadForked):
            forked = event if event.reuse else None
        elif (
            forked is not None
            and isinstance(event, StepCommitted)
            and event.step > forked.at_step
            and event.actor != REUSED
        ):
            forked = None  # the first difference was met
    return forked


class Reuse:
    """Shared by the actors of one advance: the original's recording, and whether a step has
    differed from it yet."""

    def __init__(self, thread_id: str, at_step: int, original: Recording):
        self.thread_id = thread_id
        self.at_step = at_step
        self.replay = ReplayActor(original)
        self.steps = original.steps
        self.differed = False

    def serves(self, request: ActRequest) -> bool:
        n = request.step
        if self.differed or request.thread_id != self.thread_id or n <= self.at_step:
            return False
        recorded = self.steps[n - 1] if n <= len(self.steps) else None
        same = (
            recorded is not None
            and recorded.child is None
            and recorded.role == request.role_name
            and recorded.prompt == request.prompt
            and not request.attempts  # a reused reply the contract now rejects: the actor
        )
        if not same:
            self.differed = True
        return same


class ReusingActor:
    """A role's actor, behind the original's replies while they are asked the same thing."""

    def __init__(self, reuse: Reuse, inner: Any):
        self.reuse = reuse
        self.inner = inner
        self.kind = getattr(inner, "kind", type(inner).__name__)

    async def play(self, request: ActRequest) -> ActReply:
        if not self.reuse.serves(request):
            reply: ActReply = await self.inner.play(request)
            return reply
        self.kind = REUSED
        served = await self.reuse.replay.play(request)
        return replace(served, usage=Usage(), cost_usd=0.0)


def reusing(inner: ActorFor, reuse: Reuse) -> ActorFor:
    """`inner`'s actors, each behind the original's replies (see the module's docstring)."""

    def actor_for(name: str, role: Role) -> Any:
        return ReusingActor(reuse, inner(name, role))

    return actor_for
