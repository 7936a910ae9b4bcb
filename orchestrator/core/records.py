"""What an actor is shown of its thread besides the prompt: plain records, made from the state.

They belong to the moderator's side of the line (a step's plan is made of them, purely, also
in a Temporal workflow), and the actors read them (`actors/base.ActRequest`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class HistoryItem:
    """One committed step shown to a role: what happened since it last spoke."""

    step: int
    role: str
    status: str
    frontmatter: dict[str, Any]
    body: str = ""


@dataclass(frozen=True)
class Visit:
    """An earlier visit of the same role: the message it was sent and the reply it gave."""

    message: str
    reply: str


@dataclass(frozen=True)
class Attempt:
    """A rejected reply of the current step and the errors it got."""

    reply: str
    errors: tuple[str, ...]
