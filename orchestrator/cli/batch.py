"""`orchestrator run GRAPH --batch FILE.jsonl`: one thread per line of inputs, N at a time."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import click

from ..core.events import ThreadStatus
from ..core.ledger import money
from ..definition.models import Graph
from ..run.batch import BatchInputError, BatchItem, read_batch, run_batch
from ..run.contract import ThreadSession
from ..run.options import RunOptions
from ..run.session import SessionError
from ..views.plural import plural
from ..views.summary import spent, why
from .common import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_WAITING, fail
from .session import fail_session


def run_batch_command(
    session: ThreadSession,
    graph: Graph,
    batch_path: Path,
    defaults: dict[str, Any],
    *,
    folder: Path,
    in_place: bool,
    concurrency: int,
    options: RunOptions,
    as_json: bool,
    labels: dict[str, str] | None = None,
) -> int:
    """Run the batch and print a summary table; returns the exit code."""
    try:
        batch = read_batch(batch_path, graph, defaults, labels)
    except BatchInputError as exc:
        fail(f"batch not started:\n{exc}", EXIT_USAGE)

    done = 0

    def on_done(item: BatchItem) -> None:
        nonlocal done
        done += 1
        r = item.result
        if r is None:
            if as_json:
                line = {"line": item.line, "thread": item.thread_id, "error": item.error}
                click.echo(json.dumps(line, ensure_ascii=False))
            else:
                click.echo(
                    f"[{done}/{len(batch)}] line {item.line}: thread {item.thread_id} "
                    f"left to another process: {item.error}",
                    err=True,
                )
            return
        if as_json:
            click.echo(json.dumps({"line": item.line, **r.to_dict()}, ensure_ascii=False))
        else:
            waits = (
                f", waited out {plural(item.rate_limited, 'rate limit')}"
                if item.rate_limited
                else ""
            )
            click.echo(
                f"[{done}/{len(batch)}] line {item.line}: thread {r.thread_id} {r.state} "
                f"({plural(r.steps, 'step')}, {money(r.cost_usd)}{waits})",
                err=True,
            )

    def fresh_options() -> RunOptions:
        return RunOptions(max_steps=options.max_steps, model=options.model)

    if not as_json:
        click.echo(
            f"batch of {plural(len(batch), 'thread')} of {graph.name}, {concurrency} at a time",
            err=True,
        )
    try:
        items = asyncio.run(
            run_batch(
                graph,
                batch,
                session,
                concurrency=concurrency,
                options_for=fresh_options,
                workspace=folder,
                in_place=in_place,
                on_done=on_done,
            )
        )
    except KeyboardInterrupt:
        click.echo(
            "\ninterrupted: the threads in progress are suspended (see `orchestrator threads "
            "list --status suspended`; resume each with `orchestrator threads resume ID`); "
            "the lines not started yet have no thread",
            err=True,
        )
        return EXIT_WAITING
    except SessionError as exc:
        fail_session(exc)
    if not as_json:
        summary(items)
    states = {item.result.state for item in items if item.result is not None}
    if any(item.error for item in items):
        return EXIT_PROBLEMS
    if states <= {ThreadStatus.COMPLETED}:
        return EXIT_OK
    if states & {ThreadStatus.FAILED, ThreadStatus.CANCELLED}:
        return EXIT_PROBLEMS
    return EXIT_WAITING


def summary(items: list[BatchItem]) -> None:
    click.echo(f"\n{'LINE':>4}  {'THREAD':<26}  {'STATE':<10} {'STEPS':>5} {'COST':>9}  REASON")
    total = 0.0
    for item in items:
        r = item.result
        if r is None:
            click.echo(f"{item.line:>4}  {item.thread_id:<26}  {'elsewhere':<10}  {item.error}")
            continue
        total += r.cost_usd
        click.echo(
            f"{item.line:>4}  {r.thread_id:<26}  {r.state:<10} {r.steps:>5} "
            f"{spent(r.cost_usd):>9}  {why(r.state, r.reason, 60)}"
        )
    finished = sum(
        1 for i in items if i.result is not None and i.result.state == ThreadStatus.COMPLETED
    )
    click.echo(f"{finished} of {len(items)} completed, {money(total)} in all")
    if finished < len(items):
        click.echo("continue any other with: orchestrator threads resume ID")
