"""Averages of measurements."""


def average(values):
    """The arithmetic mean of `values`; None when there are none."""
    return sum(values) / len(values)
