"""`orchestrator threads ...`: list, show, resume, answer, cancel and export threads."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from .common import (
    EXIT_OK,
    EXIT_PROBLEMS,
    EXIT_USAGE,
    fail,
    find_thread,
    load_graph_or_exit,
    open_store,
    store_option,
)


@click.group()
def threads() -> None:
    """Inspect and continue threads."""


STATES = ["running", "waiting", "suspended", "completed", "failed", "cancelled"]


def ago(when: float) -> str:
    seconds = max(0, int(time.time() - when))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


@threads.command("list")
@click.option("--status", "state", type=click.Choice(STATES), default=None)
@store_option
@click.option("--json", "as_json", is_flag=True)
def list_threads(state: str | None, store_dir: Path | None, as_json: bool) -> None:
    """List threads, oldest first."""
    store = open_store(store_dir)
    rows = store.threads(state)
    if as_json:
        for row in rows:
            click.echo(json.dumps(row.to_dict(), ensure_ascii=False))
        return
    if not rows:
        click.echo("no threads" + (f" with status {state}" if state else ""))
        return
    from ..ledger import money

    click.echo(f"{'ID':<26}  {'GRAPH':<18} {'STATE':<10} {'STEPS':>5} {'COST':>9}  UPDATED")
    for row in rows:
        line = (
            f"{row.id:<26}  {row.graph[:18]:<18} {row.state:<10} {row.steps:>5} "
            f"{money(row.cost_usd):>9}  {ago(row.updated)}"
        )
        if row.reason and row.state != "completed":
            line += f"  {row.reason[:60]}"
        click.echo(line)


@threads.command("show")
@click.argument("thread_id")
@store_option
@click.option("--json", "as_json", is_flag=True)
def show(thread_id: str, store_dir: Path | None, as_json: bool) -> None:
    """Tell the story of a thread: each step, its status, fields, attempts, tokens and time."""
    from ..story import story_json, story_text

    store = open_store(store_dir)
    row = find_thread(store, thread_id)
    events = store.events(row.id)
    if as_json:
        click.echo(json.dumps(story_json(row, events), ensure_ascii=False, default=str))
    else:
        click.echo(story_text(row, events))


def _graph_for(row: Any, graph_arg: str | None) -> Any:
    """The thread's graph, loaded and linted: a changed graph with errors does not run."""
    from ..linter import lint
    from ..problems import has_errors

    path = graph_arg or row.graph_path or row.graph
    if not graph_arg and row.graph_path and not Path(row.graph_path).exists():
        fail(f"the graph file {row.graph_path} of thread {row.id} is gone; pass --graph PATH")
    graph = load_graph_or_exit(path)
    problems = lint(graph)
    if has_errors(problems):
        for problem in problems:
            click.echo(problem.format(), err=True)
        fail("the graph has errors; fix them, then resume", EXIT_PROBLEMS)
    return graph


def _warn_changes(store: Any, row: Any, graph: Any) -> None:
    if graph.hash == row.graph_hash:
        return
    from ..graphdiff import graph_changes

    changes = graph_changes(store.snapshot(row.id), graph.model_dump(mode="json"))
    click.echo(
        f"note: the graph changed since thread {row.id} started "
        f"({row.graph_hash[:15]}… → {graph.hash[:15]}…):",
        err=True,
    )
    for change in changes or ["(only formatting or library roles changed)"]:
        click.echo(f"  - {change}", err=True)


@threads.command("resume")
@click.argument("thread_id")
@click.option("--message", default=None, help="Added to the pending prompt.")
@click.option(
    "--graph",
    "graph_arg",
    default=None,
    help="The graph file, if it moved since the thread started.",
)
@click.option("--max-steps", type=click.IntRange(min=1), default=None)
@click.option("--model", default=None, help="Model alias or id for every role.")
@store_option
@click.option("--json", "as_json", is_flag=True)
def resume(
    thread_id: str,
    message: str | None,
    graph_arg: str | None,
    max_steps: int | None,
    model: str | None,
    store_dir: Path | None,
    as_json: bool,
) -> None:
    """Continue a suspended, interrupted or completed thread."""
    from ..runner import RunOptions
    from .run import drive

    store = open_store(store_dir)
    row = find_thread(store, thread_id)
    graph = _graph_for(row, graph_arg)
    _warn_changes(store, row, graph)
    options = RunOptions(
        max_steps=max_steps, model=model, interactive=sys.stdin.isatty() and not as_json
    )
    sys.exit(drive(graph, store, row.id, options, as_json, resume=True, message=message))


@threads.command("answer")
@click.argument("thread_id")
@click.option("--status", "status", default=None, help="The status of the answer.")
@click.option(
    "--set",
    "assignments",
    multiple=True,
    metavar="KEY=VALUE",
    help="A frontmatter field (values are read as YAML: 3, true, [a, b]).",
)
@click.option(
    "--file",
    "reply_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A whole reply (frontmatter and body); - reads stdin.",
)
@click.option("--graph", "graph_arg", default=None)
@store_option
@click.option("--json", "as_json", is_flag=True)
def answer(
    thread_id: str,
    status: str | None,
    assignments: tuple[str, ...],
    reply_file: Path | None,
    graph_arg: str | None,
    store_dir: Path | None,
    as_json: bool,
) -> None:
    """Answer for a human role of a waiting thread, then continue it."""
    from ..engine import StepCommitted
    from ..extract import ExtractError, extract_output, format_reply
    from ..runner import RunOptions, Thread
    from ..spec.yamlpos import typed_value
    from ..store.base import ThreadBusy
    from .common import parse_assignments
    from .run import drive

    store = open_store(store_dir)
    row = find_thread(store, thread_id)
    graph = _graph_for(row, graph_arg)
    thread = Thread(graph, store, row.id, RunOptions())
    state = thread.state
    if state.status != "waiting" or state.in_flight is None:
        fail(f"thread {row.id} is {state.status}, not waiting for an answer")
    step = state.in_flight
    role = graph.roles.get(step.role)
    if role is None:
        fail(f"the graph no longer has role '{step.role}'")
    if reply_file is not None:
        if status or assignments:
            fail("use either --file or --status/--set, not both")
        text = sys.stdin.read() if str(reply_file) == "-" else _read(reply_file)
    else:
        # Values are typed by the field's schema: `--set budget=300` is a number where the
        # contract says integer, and stays the text "300" where it says string.
        contract = role.contract.for_status(status or "_")
        schemas = contract.field_schemas if contract is not None else {}
        fields = {
            k: typed_value(v, schemas.get(k, {"type": "any"}))
            for k, v in parse_assignments(assignments, "--set").items()
        }
        text = format_reply(status, fields)
    try:
        output = extract_output(text, role)
    except ExtractError as exc:
        click.echo(f"the answer was not accepted for role '{step.role}':", err=True)
        for error in exc.errors:
            click.echo(f"  - {error}", err=True)
        sys.exit(EXIT_PROBLEMS)
    try:
        thread.append(
            StepCommitted(
                step=step.step,
                role=step.role,
                status=output.status,
                frontmatter=output.frontmatter,
                body=output.body,
                reply=text,
                actor="human",
            )
        )
    except ThreadBusy as exc:
        fail(str(exc), EXIT_PROBLEMS)
    options = RunOptions(interactive=sys.stdin.isatty() and not as_json)
    sys.exit(drive(graph, store, row.id, options, as_json))


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}")


@threads.command("cancel")
@click.argument("thread_id")
@store_option
def cancel(thread_id: str, store_dir: Path | None) -> None:
    """Cancel a thread; it cannot be resumed afterwards."""
    from ..engine import ThreadCancelled
    from ..store.base import ThreadBusy

    store = open_store(store_dir)
    row = find_thread(store, thread_id)
    if row.state in ("completed", "failed", "cancelled"):
        fail(f"thread {row.id} is already {row.state}", EXIT_PROBLEMS)
    try:
        store.append(row.id, row.seq + 1, ThreadCancelled())
    except ThreadBusy as exc:
        fail(str(exc), EXIT_PROBLEMS)
    click.echo(f"thread {row.id} cancelled")
    sys.exit(EXIT_OK)


@threads.command("export")
@click.argument("thread_id")
@click.option(
    "-o",
    "--output",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the recording here (default: stdout).",
)
@store_option
def export(thread_id: str, out: Path | None, store_dir: Path | None) -> None:
    """Write a thread's recording (FORMAT 8), for replays and tests."""
    from ..recording import recording_from_events

    store = open_store(store_dir)
    row = find_thread(store, thread_id)
    recording = recording_from_events([s.event for s in store.events(row.id)])
    text = recording.dump()
    if out is None:
        click.echo(text, nl=False)
    else:
        try:
            out.write_text(text, encoding="utf-8")
        except OSError as exc:
            fail(f"cannot write {out}: {exc.strerror or exc}", EXIT_USAGE)
        click.echo(f"wrote {out} ({len(recording.steps)} steps)", err=True)
