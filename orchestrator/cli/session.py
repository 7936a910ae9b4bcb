"""The session as the thread commands use it: notes on stderr, refusals as exit codes."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import click

from ..run.session import Session, SessionError, open_store
from .common import EXIT_PROBLEMS, EXIT_USAGE, fail


def fail_session(exc: SessionError) -> NoReturn:
    """A request the session refused: its problems, its message, exit 2 (usage) or 1."""
    for problem in exc.problems:
        click.echo(problem.format(), err=True)
    fail(exc.message, EXIT_USAGE if exc.usage else EXIT_PROBLEMS)


def note(text: str) -> None:
    click.echo(f"note: {text}", err=True)


def cli_session(store_dir: Path | None, *, readonly: bool = False) -> Session:
    """The session every thread command works through, on `--store DIR` or the default store.

    Commands that only read (`threads list`, `show`, `export`) open the store `readonly`: they
    create nothing, and work on a read-only file system.
    """
    try:
        return Session(open_store(store_dir, readonly=readonly), notify=note)
    except SessionError as exc:
        fail_session(exc)
