"""Averages of measurements."""


def average(values):
    """The arithmetic mean of `values`; None when there are none."""
    values = list(values)
    if not values:
        return None
    return sum(values) / len(values)
