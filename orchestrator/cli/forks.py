"""`orchestrator threads fork` and `threads diff` (docs/format.md section 20).

The commands parse and display; the session makes the fork (run/forking.py, whose rules are
the moderator's: core/fork.py) and advances it as `threads resume` advances a thread; the
comparison of two threads is views/forks.py's. `threads.py` adds them to the `threads` group.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..errors import OrchestratorError
from ..run.options import RunOptions
from ..views.forks import diff_json, diff_text, thread_diff
from .common import (
    EXIT_OK,
    fail,
    parse_assignments,
    read_text_file,
    store_option,
    temporal_option,
)
from .drive import drive
from .session import cli_session, fail_session


@click.command("fork")
@click.argument("thread_id")
@click.option(
    "--at", "at", type=int, default=None, help="The step to fork at (default: after the last)."
)
@click.option(
    "--reply",
    "reply_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A whole reply for step N (frontmatter and body); - reads stdin.",
)
@click.option("--status", "status", default=None, help="The status of step N's reply.")
@click.option(
    "--set",
    "assignments",
    multiple=True,
    metavar="KEY=VALUE",
    help="A field of step N's reply (read as YAML where the contract wants a number, ...).",
)
@click.option("--message", default=None, help="Added to step N's prompt when it is decided again.")
@click.option("--reuse", is_flag=True, help="Take the original's replies until a step differs.")
@click.option("--title", default=None, help="A title for the fork.")
@click.option("--graph", "graph_arg", default=None, help="The graph file, if it moved.")
@click.option("--max-steps", type=click.IntRange(min=1), default=None)
@click.option("--model", default=None, help="Model alias or id for every role.")
@store_option
@temporal_option
@click.option("--json", "as_json", is_flag=True)
def fork(
    thread_id: str,
    at: int | None,
    reply_file: Path | None,
    status: str | None,
    assignments: tuple[str, ...],
    message: str | None,
    reuse: bool,
    title: str | None,
    graph_arg: str | None,
    max_steps: int | None,
    model: str | None,
    store_dir: Path | None,
    temporal: str | None,
    as_json: bool,
) -> None:
    """Fork a thread at step N into a new thread, and run the fork.

    Its history is the original's up to step N; the original is untouched. Without a reply,
    step N is decided again (with --message added to its prompt); with --reply or
    --status/--set, that reply stands as step N's output and the fork goes on from the edge it
    picks. A thread with a git worktree forks into a worktree of its own, at step N-1's commit.
    """
    if reply_file is not None and (status or assignments):
        fail("use either --reply or --status/--set, not both")
    if temporal and (max_steps is not None or model is not None):
        # A fork on Temporal is a workflow started with the original's settings; said rather
        # than silently ignored.
        fail(
            "--max-steps and --model are not taken by a fork on Temporal (it keeps the original's)"
        )
    reply = read_text_file(reply_file, "--reply", dash_is_stdin=True) if reply_file else None
    fields = parse_assignments(assignments, "--set") if assignments else None
    session = cli_session(store_dir, temporal)
    try:
        row = session.thread(thread_id)
        graph = session.graph_for(row, graph_arg)
        new_id = session.fork(
            row.id,
            at=at,
            reply=reply,
            status=status,
            set=fields,
            message=message,
            reuse=reuse,
            title=title,
            graph=graph,
        )
    except OrchestratorError as exc:  # refused: no such step, a reply the contract refuses
        fail_session(exc)
    click.echo(f"thread {new_id} forked from {row.id}", err=True)
    options = RunOptions(
        max_steps=max_steps, model=model, interactive=sys.stdin.isatty() and not as_json
    )
    sys.exit(drive(session, graph, new_id, options, as_json))


@click.command("diff")
@click.argument("thread_id")
@click.argument("other")
@store_option
@temporal_option
@click.option("--json", "as_json", is_flag=True)
def diff(
    thread_id: str, other: str, store_dir: Path | None, temporal: str | None, as_json: bool
) -> None:
    """Show, step by step, where two threads' paths, statuses and fields differ."""
    session = cli_session(store_dir, temporal, readonly=True)
    try:
        a, b = session.thread(thread_id), session.thread(other)
        compared = thread_diff(a.id, session.view(a.id), b.id, session.view(b.id))
    except OrchestratorError as exc:
        fail_session(exc)
    if as_json:
        click.echo(json.dumps(diff_json(compared), ensure_ascii=False))
    else:
        click.echo("\n".join(diff_text(compared)))
    sys.exit(EXIT_OK)
