"""What the extract pipeline hands back: a validated `Output`, or an `ExtractError` saying why."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import OrchestratorError


@dataclass(frozen=True)
class Output:
    """A validated reply: its frontmatter, its Markdown body and its routing key."""

    frontmatter: dict[str, Any]
    body: str
    status: str


class ExtractError(OrchestratorError):
    """A reply that cannot be accepted; `.errors` says why, one actionable sentence each.

    `.status` is the reply's status when it named a valid one (the errors then concern that
    status's fields), else None. `str()` is the errors, a line each, as it always was.
    """

    code = "reply"
    usage_error = True

    def __init__(self, errors: Sequence[str], status: str | None = None):
        self.errors = list(errors) or ["the reply could not be read"]
        self.status = status
        super().__init__("the reply does not fit the role's contract")
        self.args = ("\n".join(self.errors),)

    @property
    def details(self) -> tuple[str, ...]:
        return tuple(f"- {e}" for e in self.errors)

    def __reduce__(self) -> tuple[Any, ...]:  # keep .errors and .status through pickling
        return (type(self), (self.errors, self.status))
