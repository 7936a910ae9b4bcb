"""Replaying recordings through the current graph: "same route", or the first divergence.

See orchestrator/replay/report.py for what "same route" means.
"""

from .coverage import CoverageReport, EdgeCount, coverage, edges_taken
from .replayer import areplay_recording, replay_recording
from .report import Divergence, DivergenceKind, ReplayReport

__all__ = [
    "CoverageReport",
    "Divergence",
    "DivergenceKind",
    "EdgeCount",
    "ReplayReport",
    "areplay_recording",
    "coverage",
    "edges_taken",
    "replay_recording",
]
