"""orchestrator: run multi-agent work as a graph of roles.

The public API (docs/format.md section 10) is imported lazily so that the command line starts
fast: `import orchestrator` loads nothing else until a name is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "ActorCall",
    "ExtractError",
    "Graph",
    "GraphError",
    "Output",
    "Problem",
    "Refused",
    "InputError",
    "OrchestratorError",
    "ProviderError",
    "SessionError",
    "StoreError",
    "ThreadBusy",
    "ThreadNotFound",
    "WorkspaceError",
    "ThreadInfo",
    "ThreadResult",
    "answer_thread",
    "arun_thread",
    "cancel_thread",
    "extract_output",
    "get_thread",
    "lint",
    "load_graph",
    "resume_thread",
    "run_thread",
]

_EXPORTS = {
    "ActorCall": "orchestrator.actors.python",
    "load_graph": "orchestrator.definition.loader",
    "Graph": "orchestrator.definition.models",
    "GraphError": "orchestrator.errors",
    "Problem": "orchestrator.definition.problems",
    "lint": "orchestrator.linter",
    "extract_output": "orchestrator.extract",
    "ExtractError": "orchestrator.extract",
    "Output": "orchestrator.extract",
    "ThreadResult": "orchestrator.run.options",
    # The error family (docs/format.md section 10, "Errors"): light, imports nothing else.
    "OrchestratorError": "orchestrator.errors",
    "Refused": "orchestrator.errors",
    "InputError": "orchestrator.errors",
    "SessionError": "orchestrator.errors",
    "StoreError": "orchestrator.errors",
    "ThreadBusy": "orchestrator.errors",
    "ThreadNotFound": "orchestrator.errors",
    "ProviderError": "orchestrator.errors",
    "WorkspaceError": "orchestrator.errors",
    "ThreadInfo": "orchestrator.run.api",
    "run_thread": "orchestrator.run.api",
    "arun_thread": "orchestrator.run.api",
    "resume_thread": "orchestrator.run.api",
    "answer_thread": "orchestrator.run.api",
    "cancel_thread": "orchestrator.run.api",
    "get_thread": "orchestrator.run.api",
}

if TYPE_CHECKING:
    from orchestrator.actors.python import ActorCall
    from orchestrator.definition.loader import load_graph
    from orchestrator.definition.models import Graph
    from orchestrator.definition.problems import Problem
    from orchestrator.errors import (
        GraphError,
        InputError,
        OrchestratorError,
        ProviderError,
        Refused,
        SessionError,
        StoreError,
        ThreadBusy,
        ThreadNotFound,
        WorkspaceError,
    )
    from orchestrator.extract import ExtractError, Output, extract_output
    from orchestrator.linter import lint
    from orchestrator.run.api import (
        ThreadInfo,
        answer_thread,
        arun_thread,
        cancel_thread,
        get_thread,
        resume_thread,
        run_thread,
    )
    from orchestrator.run.options import ThreadResult


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'orchestrator' has no attribute {name!r}")
