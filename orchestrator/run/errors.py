"""The session's refusals: a request it cannot carry out, with nothing changed."""

from __future__ import annotations

from ..definition.problems import Problem


class SessionError(Exception):
    """A request the session cannot carry out; nothing was changed.

    `usage` is True when the request itself is wrong (exit 2), False when the graph, the
    workspace or the repository is (exit 1). `problems` are lint problems to show.
    """

    def __init__(self, message: str, *, usage: bool = True, problems: list[Problem] | None = None):
        super().__init__(message)
        self.message = message
        self.usage = usage
        self.problems = problems or []
