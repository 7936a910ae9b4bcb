"""`orchestrator run`: start a thread of a graph and advance it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ..actors.recording import Recording, RecordingError, load_recording
from ..core.events import ThreadStatus
from ..definition.models import Graph
from ..errors import OrchestratorError
from ..run.options import RunOptions, ThreadResult
from ..run.session import SessionError, Started
from .batch import run_batch_command
from .common import (
    EXIT_OK,
    fail,
    load_graph_or_exit,
    parse_assignments,
    store_option,
    temporal_option,
    thread_labels,
    typed_inputs,
)
from .display import json_line
from .drive import drive, shown
from .session import cli_session, fail_session, note


@click.command()
@click.argument("graph_arg", metavar="GRAPH")
@click.argument("task", required=False)
@click.option(
    "-i",
    "--input",
    "inputs",
    multiple=True,
    metavar="KEY=VALUE|KEY=@FILE",
    help="A thread input; @FILE reads the value from a file.",
)
@click.option(
    "--workspace",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory the roles work in (default: the current directory).",
)
@click.option(
    "--in-place",
    is_flag=True,
    help="Work directly in the workspace, even when it is a git repository "
    "(by default a thread whose roles edit files or run commands gets its own git worktree "
    "on a new branch, orchestrator/THREAD-ID).",
)
@click.option("--model", default=None, help="Model alias or id for every role.")
@click.option(
    "--replay",
    "replay_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Play a recording instead of calling models.",
)
@click.option(
    "--pace",
    is_flag=True,
    help="With --replay: play each step at its recorded pace, to watch it (Ctrl-C stops).",
)
@click.option(
    "--max-steps", type=click.IntRange(min=1), default=None, help="Override limits.max_steps."
)
@click.option(
    "--batch",
    "batch_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Run one thread per line of this JSONL file (each line a JSON object of inputs; "
    "-i values apply to every line).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="With --batch: how many threads run at once.",
)
@store_option
@temporal_option
@click.option(
    "--task-queue",
    default=None,
    metavar="QUEUE",
    help="With --temporal: the task queue the workers serve (default: orchestrator).",
)
@click.option(
    "--detach",
    is_flag=True,
    help="With --temporal: print the thread id (with --json, the result object) and return; "
    "the workers run the thread.",
)
@click.option(
    "--title",
    default=None,
    help="What the thread is for, in a line (default: the first line of the task or first input).",
)
@click.option(
    "--label",
    "label_items",
    multiple=True,
    metavar="KEY=VALUE",
    help="A label for the thread (repeatable); `threads list --label` finds it by it.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per event, result last.")
def run(
    graph_arg: str,
    task: str | None,
    inputs: tuple[str, ...],
    workspace: Path | None,
    in_place: bool,
    model: str | None,
    replay_path: Path | None,
    pace: bool,
    max_steps: int | None,
    batch_path: Path | None,
    concurrency: int,
    store_dir: Path | None,
    temporal: str | None,
    task_queue: str | None,
    detach: bool,
    title: str | None,
    label_items: tuple[str, ...],
    as_json: bool,
) -> None:
    """Run GRAPH (a path, or a name in ./graphs or the bundled graphs) as a new thread.

    TASK fills the graph's only required input (or `task` for graphs without inputs).
    When some role may edit files or run commands and the workspace is in a git repository, the
    thread works in its own git worktree on branch orchestrator/THREAD-ID, which gets the work
    as a commit when the thread completes; your checkout is never touched (--in-place opts out).
    With --temporal ADDRESS the thread runs as a Temporal workflow on the workers of that server,
    followed here as it runs (--detach: not followed).
    Exit codes: 0 completed, 1 failed or the graph has errors, 2 usage, 3 suspended or waiting.
    """
    graph = load_graph_or_exit(graph_arg)
    if (detach or task_queue) and not temporal:
        fail("--detach and --task-queue are for threads on Temporal: add --temporal ADDRESS")
    if batch_path is not None and temporal:
        fail("--batch runs here: on Temporal, start each thread with `run --temporal --detach`")
    session = cli_session(store_dir, temporal, task_queue)
    if batch_path is not None and (task is not None or replay_path is not None):
        fail("--batch takes its inputs from the file: no TASK and no --replay")
    if pace and replay_path is None:
        fail("--pace plays a recording at its recorded pace: add --replay RECORDING")
    if batch_path is not None and title is not None:
        fail('--title names one thread: with --batch, give each line its "$title"')
    labels = thread_labels(label_items)
    recording = _recording(replay_path, graph) if replay_path is not None else None
    # The command's own words first (an unreadable -i @FILE), then the machine (a key, a sandbox).
    values = thread_inputs(graph, task, inputs, recording) if batch_path is None else {}
    try:
        folder = session.preflight(
            graph, workspace=workspace, replay=recording is not None, model=model
        )
    except SessionError as exc:
        fail_session(exc)
    if batch_path is not None:  # not on Temporal: refused above
        sys.exit(
            run_batch_command(
                session,
                graph,
                batch_path,
                typed_inputs(graph.input_schema, parse_assignments(inputs)),
                folder=folder,
                in_place=in_place,
                concurrency=concurrency,
                options=RunOptions(max_steps=max_steps, model=model),
                as_json=as_json,
                labels=labels,
            )
        )
    options = RunOptions(
        max_steps=max_steps,
        model=model,
        interactive=sys.stdin.isatty() and not as_json,
        replay_pace=1.0 if pace else 0.0,
    )
    try:
        started = session.start(
            graph,
            values,
            folder=folder,
            in_place=in_place,
            replay=recording is not None,
            options=options,
            title=title,
            labels=labels,
        )
    except OrchestratorError as exc:  # inputs that do not fit, a worktree git refused...
        fail_session(exc)
    if detach:
        if as_json:
            running = ThreadResult(started.thread_id, ThreadStatus.RUNNING, None, None, 0, 0.0)
            click.echo(json.dumps(running.to_dict()))
        else:
            click.echo(started.thread_id)
        sys.exit(EXIT_OK)
    if as_json and started.first is not None:  # ThreadStarted
        click.echo(json_line(started.first, started.thread_id))
    else:
        announce(graph, started, recording is not None, folder)
    sys.exit(drive(session, graph, started.thread_id, options, as_json, recording=recording))


def _recording(path: Path, graph: Graph) -> Recording:
    try:
        recording = load_recording(path)
    except RecordingError as exc:
        fail_session(exc)
    if recording.graph and recording.graph != graph.name:
        note(f"the recording is of graph '{recording.graph}', replaying it through '{graph.name}'")
    if recording.graph_hash and recording.graph_hash != graph.hash:
        note("the graph changed since the recording was made")
    return recording


def thread_inputs(
    graph: Any, task: str | None, pairs: tuple[str, ...], recording: Any
) -> dict[str, Any]:
    schema = graph.input_schema
    raw = parse_assignments(pairs)
    if task is not None:
        required = list(schema.get("required") or [])
        props = list((schema.get("properties") or {}).keys())
        target = required[0] if len(required) == 1 else ("task" if "task" in props else None)
        if target is None:
            fail(
                f"TASK given, but graph '{graph.name}' has several inputs "
                f"({', '.join(props)}); pass each with -i KEY=VALUE"
            )
        if target in raw:
            fail(f"input '{target}' given twice (as TASK and with -i)")
        raw[target] = task
    values = typed_inputs(schema, raw)
    if recording is not None and not values:
        values = dict(recording.inputs)
    return values


def announce(graph: Graph, started: Started, replay: bool, folder: Path) -> None:
    editors = [n for n, r in graph.roles.items() if "edit" in r.tools]
    shells = [n for n, r in graph.roles.items() if "shell" in r.tools]
    click.echo(f"thread {started.thread_id} ({graph.name}{', replay' if replay else ''})", err=True)
    if editors:
        click.echo(f"  may edit files: {', '.join(editors)}", err=True)
    if shells:
        click.echo(f"  may run commands: {', '.join(shells)}", err=True)
    tree = started.worktree
    if replay:
        if editors or shells:
            click.echo("  replay: recorded replies only; no tool runs, no file changes", err=True)
    elif tree is not None:
        click.echo(
            f"  works on branch {tree.branch} in its own worktree {shown(tree.workspace)}\n"
            "  (your checkout is not touched; --in-place opts out)",
            err=True,
        )
    elif editors or shells:
        click.echo(f"  works in place in {shown(folder)}", err=True)
