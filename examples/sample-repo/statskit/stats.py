"""Small statistics helpers.

Every function accepts any sequence of numbers: int, float, fractions.Fraction or
decimal.Decimal, and returns a value of a compatible type (a Decimal stays a Decimal).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def mean(values: Sequence[Any]) -> Any:
    """The arithmetic mean of a non-empty sequence."""
    if not values:
        raise ValueError("mean() of an empty sequence")
    return sum(values) / len(values)


def median(values: Sequence[Any]) -> Any:
    """The middle value of a non-empty sequence; the input is left unchanged.

    With an even number of values, the median is the mean of the two middle values.
    """
    if not values:
        raise ValueError("median() of an empty sequence")
    ordered = sorted(values)
    return ordered[len(ordered) // 2]
