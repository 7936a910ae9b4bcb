"""statskit: small statistics helpers."""

from .stats import mean, median

__all__ = ["mean", "median"]
