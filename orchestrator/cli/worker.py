"""`orchestrator worker --temporal ADDRESS`: run threads' workflows and steps from a task queue."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import click

from ..run.session import SessionError
from ..views.plural import plural
from .common import EXIT_OK, EXIT_USAGE, fail
from .session import fail_session


@click.command()
@click.option(
    "--temporal",
    "temporal",
    metavar="ADDRESS",
    envvar="ORCHESTRATOR_TEMPORAL",
    required=True,
    help="The Temporal server, host:port (default: $ORCHESTRATOR_TEMPORAL).",
)
@click.option(
    "--task-queue",
    default="orchestrator",
    show_default=True,
    metavar="QUEUE",
    help="The task queue to serve; `run --temporal` starts threads on the same one.",
)
@click.option(
    "--max-concurrent",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="How many steps this worker runs at once.",
)
@click.option(
    "--cache",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="ORCHESTRATOR_WORKER_CACHE",
    default=None,
    help="Where this worker keeps its worktrees of threads' branches "
    "(default: $ORCHESTRATOR_WORKER_CACHE, else ~/.cache/orchestrator/worker).",
)
def worker(temporal: str, task_queue: str, max_concurrent: int, cache: Path | None) -> None:
    """Run threads on Temporal: their workflows (the moderator) and their steps (the actors).

    Start one or more on any machine that has what the roles need (the API key, the agents'
    programs, the workspace folders at the same paths, or the repository of a thread on a git
    workspace). Ctrl-C stops the worker; a step it was
    running goes to another worker. See docs/scale-out.md.
    """
    try:
        # deferred: temporalio is an optional extra; only this command and --temporal need it
        from ..temporal.worker import run_worker
    except ImportError:
        # deferred, as above (the package itself imports nothing)
        from ..temporal import MISSING

        fail(MISSING, EXIT_USAGE)

    def ready() -> None:
        click.echo(
            f"worker on {temporal}, task queue '{task_queue}', "
            f"up to {plural(max_concurrent, 'step')} at once; Ctrl-C stops it",
            err=True,
        )

    try:
        asyncio.run(
            run_worker(
                temporal,
                task_queue=task_queue,
                max_concurrent=max_concurrent,
                ready=ready,
                cache=cache,
            )
        )
    except SessionError as exc:
        fail_session(exc)
    click.echo("worker stopped", err=True)
    sys.exit(EXIT_OK)
