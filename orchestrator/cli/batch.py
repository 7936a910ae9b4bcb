"""`orchestrator run GRAPH --batch FILE.jsonl`: one thread per line of inputs, N at a time."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import click

from ..batch import BatchInputError, BatchItem, read_batch, run_batch
from ..ledger import money
from ..runner import RunOptions
from .common import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_WAITING, fail


def run_batch_command(
    graph: Any,
    batch_path: Path,
    defaults: dict[str, Any],
    *,
    store: Any,
    folder: Path,
    in_place: bool,
    concurrency: int,
    options: Any,
    as_json: bool,
) -> int:
    """Run the batch and print a summary table; returns the exit code."""
    # late: cli/run.py imports this module, so importing it back at the top would be a cycle
    from .run import isolate

    try:
        batch = [{**defaults, **inputs} for inputs in read_batch(batch_path, graph)]
    except BatchInputError as exc:
        fail(f"batch not started:\n{exc}", EXIT_USAGE)

    def workspace_for(thread_id: str) -> Path:
        tree = None if in_place else isolate(graph, folder, store, thread_id)
        return Path(tree.workspace) if tree is not None else folder

    done = 0

    def on_done(item: BatchItem) -> None:
        nonlocal done
        done += 1
        r = item.result
        if r is None:
            return
        if as_json:
            click.echo(json.dumps({"line": item.line, **r.to_dict()}, ensure_ascii=False))
        else:
            waits = f", waited out {item.rate_limited} rate limit(s)" if item.rate_limited else ""
            click.echo(
                f"[{done}/{len(batch)}] line {item.line}: thread {r.thread_id} {r.state} "
                f"({r.steps} steps, {money(r.cost_usd)}{waits})",
                err=True,
            )

    def fresh_options() -> RunOptions:
        return RunOptions(max_steps=options.max_steps, model=options.model)

    if not as_json:
        click.echo(
            f"batch of {len(batch)} threads of {graph.name}, {concurrency} at a time", err=True
        )
    try:
        items = asyncio.run(
            run_batch(
                graph,
                batch,
                store,
                concurrency=concurrency,
                options_for=fresh_options,
                workspace_for=workspace_for,
                on_done=on_done,
            )
        )
    except KeyboardInterrupt:
        click.echo(
            "\ninterrupted: the unfinished threads are suspended; see `orchestrator threads "
            "list --status suspended` and resume each with `orchestrator threads resume ID`",
            err=True,
        )
        return EXIT_WAITING
    if not as_json:
        summary(items, money)
    states = {item.result.state for item in items if item.result is not None}
    if states <= {"completed"}:
        return EXIT_OK
    if states & {"failed", "cancelled"}:
        return EXIT_PROBLEMS
    return EXIT_WAITING


def summary(items: list[Any], money: Any) -> None:
    click.echo(f"\n{'LINE':>4}  {'THREAD':<26}  {'STATE':<10} {'STEPS':>5} {'COST':>9}  REASON")
    total = 0.0
    for item in items:
        r = item.result
        if r is None:
            continue
        total += r.cost_usd
        reason = (r.reason or "")[:60] if r.state != "completed" else ""
        click.echo(
            f"{item.line:>4}  {r.thread_id:<26}  {r.state:<10} {r.steps:>5} "
            f"{money(r.cost_usd):>9}  {reason}"
        )
    finished = sum(1 for i in items if i.result is not None and i.result.state == "completed")
    click.echo(f"{finished} of {len(items)} completed, {money(total)} in all")
    if finished < len(items):
        click.echo("continue any other with: orchestrator threads resume ID")
