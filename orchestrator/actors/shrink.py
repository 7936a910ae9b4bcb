"""Keeping a role's conversation within what the model takes: when the API answers that the
prompt is too long, the older half of the role's earlier visits is left out, with a note."""

from __future__ import annotations

from typing import Any


def too_long(exc: BaseException) -> bool:
    """The API's answer to a prompt longer than the model's context window."""
    return getattr(exc, "status_code", None) == 400 and "prompt is too long" in str(exc)


def shrink_conversation(
    conversation: list[dict[str, Any]], earlier: int
) -> tuple[list[dict[str, Any]], int] | None:
    """The conversation without the older half of its `earlier` visits, and a note saying so;
    None when there is no earlier visit left to drop (the prompt is too long by itself)."""
    if earlier <= 0:
        return None
    drop = (earlier + 1) // 2
    kept = conversation[2 * drop :]
    note = (
        f"[{drop} more of your earlier visits in this thread are left out here: the "
        "conversation was too long for the model.]"
    )
    first = kept[0]
    content = first["content"]
    if isinstance(content, str):
        kept[0] = {**first, "content": f"{note}\n\n{content}"}
    else:  # the turn is blocks (a tool round): the note goes before them
        kept[0] = {**first, "content": [{"type": "text", "text": note}, *content]}
    return kept, earlier - drop
