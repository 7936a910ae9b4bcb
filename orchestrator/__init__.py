"""orchestrator: run multi-agent work as a graph of roles.

The public API (docs/format.md section 10) is imported lazily so that the command line starts fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "ExtractError",
    "Graph",
    "GraphError",
    "Output",
    "Problem",
    "extract_output",
    "lint",
    "load_graph",
    "run_thread",
]

_EXPORTS = {
    "load_graph": "orchestrator.spec.loader",
    "Graph": "orchestrator.spec.models",
    "GraphError": "orchestrator.problems",
    "Problem": "orchestrator.problems",
    "lint": "orchestrator.linter",
    "extract_output": "orchestrator.extract",
    "ExtractError": "orchestrator.extract",
    "Output": "orchestrator.extract",
    "run_thread": "orchestrator.runner",
}

if TYPE_CHECKING:
    from orchestrator.extract import ExtractError, Output, extract_output
    from orchestrator.linter import lint
    from orchestrator.problems import GraphError, Problem
    from orchestrator.runner import run_thread
    from orchestrator.spec.loader import load_graph
    from orchestrator.spec.models import Graph


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'orchestrator' has no attribute {name!r}")
