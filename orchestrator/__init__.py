"""orchestrator: run multi-agent work as a graph of roles.

The public API (docs/format.md sections 10 and 10b, docs/api.md: the client, its `Thread` and
the event types) is imported lazily so that the command line starts
fast: `import orchestrator` loads nothing else until a name is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "ActorCall",
    "AsyncOrchestrator",
    "Orchestrator",
    "Thread",
    "MemoryStore",
    "RunOptions",
    "StoredEvent",
    "Event",
    "ThreadStarted",
    "StepStarted",
    "BranchesStarted",
    "BranchFailed",
    "AttemptRejected",
    "StepCommitted",
    "HumanWaiting",
    "ThreadSuspended",
    "ThreadResumed",
    "ThreadCompleted",
    "ThreadFailed",
    "ThreadCancelled",
    "ThreadStatus",
    "SuspendKind",
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
    "AsyncOrchestrator": "orchestrator.client",
    "Orchestrator": "orchestrator.client",
    "Thread": "orchestrator.client",
    "MemoryStore": "orchestrator.store.memory",
    "RunOptions": "orchestrator.run.options",
    "StoredEvent": "orchestrator.store.base",
    "Event": "orchestrator.core.events",
    "ThreadStarted": "orchestrator.core.events",
    "StepStarted": "orchestrator.core.events",
    "BranchesStarted": "orchestrator.core.events",
    "BranchFailed": "orchestrator.core.events",
    "AttemptRejected": "orchestrator.core.events",
    "StepCommitted": "orchestrator.core.events",
    "HumanWaiting": "orchestrator.core.events",
    "ThreadSuspended": "orchestrator.core.events",
    "ThreadResumed": "orchestrator.core.events",
    "ThreadCompleted": "orchestrator.core.events",
    "ThreadFailed": "orchestrator.core.events",
    "ThreadCancelled": "orchestrator.core.events",
    "ThreadStatus": "orchestrator.core.events",
    "SuspendKind": "orchestrator.core.events",
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
    "ThreadInfo": "orchestrator.client.functions",
    "run_thread": "orchestrator.client.functions",
    "arun_thread": "orchestrator.client.functions",
    "resume_thread": "orchestrator.client.functions",
    "answer_thread": "orchestrator.client.functions",
    "cancel_thread": "orchestrator.client.functions",
    "get_thread": "orchestrator.client.functions",
}

if TYPE_CHECKING:
    from orchestrator.actors.python import ActorCall
    from orchestrator.client import AsyncOrchestrator, Orchestrator, Thread
    from orchestrator.client.functions import (
        ThreadInfo,
        answer_thread,
        arun_thread,
        cancel_thread,
        get_thread,
        resume_thread,
        run_thread,
    )
    from orchestrator.core.events import (
        AttemptRejected,
        BranchesStarted,
        BranchFailed,
        Event,
        HumanWaiting,
        StepCommitted,
        StepStarted,
        SuspendKind,
        ThreadCancelled,
        ThreadCompleted,
        ThreadFailed,
        ThreadResumed,
        ThreadStarted,
        ThreadStatus,
        ThreadSuspended,
    )
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
    from orchestrator.run.options import RunOptions, ThreadResult
    from orchestrator.store.base import StoredEvent
    from orchestrator.store.memory import MemoryStore


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'orchestrator' has no attribute {name!r}")
