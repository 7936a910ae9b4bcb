"""A scripted actor: plays given reply texts, for tests and `simulate()`."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping

from .base import ActorError, ActReply, ActRequest


class ScriptedActor:
    """Replies in order; either one list for all roles or a list per role name."""

    kind = "scripted"

    def __init__(self, replies: Iterable[str] | Mapping[str, Iterable[str]]):
        self.by_role: dict[str, deque[str]] | None = None
        self.queue: deque[str] = deque()
        if isinstance(replies, Mapping):
            self.by_role = {role: deque(texts) for role, texts in replies.items()}
        else:
            self.queue = deque(replies)
        self.requests: list[ActRequest] = []

    async def play(self, request: ActRequest) -> ActReply:
        self.requests.append(request)
        queue = self.queue if self.by_role is None else self.by_role.get(request.role_name)
        if not queue:
            whose = "" if self.by_role is None else f" for role '{request.role_name}'"
            raise ActorError(
                f"no scripted reply left{whose} at step {request.step}", "script-exhausted"
            )
        return ActReply(text=queue.popleft(), message=request.prompt)
