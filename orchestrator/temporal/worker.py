"""The worker process: `orchestrator worker --temporal ADDRESS`.

A worker runs threads' workflows (the moderator) and their steps (the actors) from one task
queue. Any number of workers may share a queue; the server hands each workflow task and each
step to one of them. A worker needs no graph files (a thread carries its graph) but it needs
what the actors need: the API key for roles Claude plays, the programs of command roles, the
workspace folders at the same paths (or, for a thread on a git workspace, its repository:
the worker works in a worktree of its own cache), and bubblewrap for sandboxed roles.

SIGINT or SIGTERM stops it: steps in flight get `GRACE` to finish, then go back to the workflow,
which runs them on another worker.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from . import DEFAULT_TASK_QUEUE
from .activities import StepActivities
from .client import connect
from .workflow import ThreadWorkflow

# What the workflow imports (workflow.py), all deterministic (a test checks it): passed through
# the sandbox, so they are imported once per worker and not for every workflow run; a module
# they import on first use (a guard's CEL extension) is one of them, or imported in the sandbox.
DETERMINISTIC = (
    "orchestrator",
    "pydantic",
    "pydantic_core",
    "annotated_types",
    "typing_inspection",
    "jsonschema",
    "jsonschema_specifications",
    "referencing",
    "rpds",
    "attr",
    "attrs",
    "jsonpointer",
    "idna",
    "yaml",
    "chevron_blue",
    "re2",
    "cel",
)
GRACE = timedelta(seconds=10)
STICKY_TIMEOUT = timedelta(seconds=3)  # a dead worker's cached workflows move on after this


async def run_worker(
    address: str,
    *,
    task_queue: str = DEFAULT_TASK_QUEUE,
    max_concurrent: int = 10,
    ready: Callable[[], None] | None = None,
    stop: asyncio.Event | None = None,
    cache: Path | None = None,
) -> None:
    """Serve the task queue until SIGINT or SIGTERM (or until `stop` is set)."""
    # deferred, and done now: the Anthropic SDK takes a while to import, which in a worker's
    # first step would hold up that step's heartbeats (the actors import it on first use)
    import anthropic  # noqa: F401

    client = await connect(address)
    activities = StepActivities(cache=cache)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        async with Worker(
            client,
            task_queue=task_queue,
            workflows=[ThreadWorkflow],
            # The workflow imports deterministic modules only (tests/test_workflow_imports.py):
            # they are the host's, imported once, not again for every workflow run.
            workflow_runner=SandboxedWorkflowRunner(
                restrictions=SandboxRestrictions.default.with_passthrough_modules(*DETERMINISTIC)
            ),
            activities=[activities.run_step],
            max_concurrent_activities=max_concurrent,
            graceful_shutdown_timeout=GRACE,
            sticky_queue_schedule_to_start_timeout=STICKY_TIMEOUT,
        ):
            if ready is not None:
                ready()
            await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
