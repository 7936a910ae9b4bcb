"""The session as the thread commands use it: notes on stderr, refusals as exit codes."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import click

from ..errors import OrchestratorError
from ..run.contract import ThreadSession
from ..run.session import Session, SessionError, open_store
from .common import fail, fail_error

# The commands hold the session contract (run/contract.py), never a concrete class; the name
# is kept for the modules that import it.
AnySession = ThreadSession


def fail_session(exc: OrchestratorError) -> NoReturn:
    """A request the session refused, worded as every face words it (`fail_error`)."""
    fail_error(exc)


def note(text: str) -> None:
    click.echo(f"note: {text}", err=True)


def cli_session(
    store_dir: Path | None,
    temporal: str | None = None,
    task_queue: str | None = None,
    *,
    readonly: bool = False,
) -> ThreadSession:
    """The session every thread command works through: on `--temporal ADDRESS` when given,
    else on `--store DIR` or the default store. Commands that only read (`threads list`, `show`,
    `export`) open the store `readonly`: they create nothing, and work on a read-only file
    system."""
    if temporal:
        if store_dir is not None:
            fail("--store and --temporal name two places for threads: give one")
        return temporal_session(temporal, task_queue)
    try:
        return Session(open_store(store_dir, readonly=readonly), notify=note)
    except SessionError as exc:
        fail_session(exc)


def temporal_session(address: str, task_queue: str | None) -> ThreadSession:
    """The Temporal session, or exit 2 saying which extra to install."""
    # deferred: temporalio is an optional extra, and heavy; only --temporal needs it
    from ..temporal import DEFAULT_TASK_QUEUE, MISSING

    try:
        # deferred, as above
        from ..temporal.session import TemporalSession
    except ImportError:
        fail(MISSING)
    return TemporalSession(address, task_queue=task_queue or DEFAULT_TASK_QUEUE, notify=note)
