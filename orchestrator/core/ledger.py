"""How tokens and dollars are counted and shown, for the story of a thread and the views."""

from __future__ import annotations

from collections.abc import Mapping

TOKEN_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


def money(value: float) -> str:
    """Dollars: four decimals under a dollar (steps cost fractions of a cent), else two."""
    return f"${value:.4f}" if value < 1 else f"${value:.2f}"


def tokens(usage: Mapping[str, int] | None) -> int:
    """All tokens of a usage record: input, output, cache writes and cache reads."""
    usage = usage or {}
    return sum(int(usage.get(key, 0)) for key in TOKEN_KEYS)
