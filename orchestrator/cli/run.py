"""`orchestrator run`: start a thread of a graph and advance it."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import click

from .common import (
    EXIT_OK,
    EXIT_PROBLEMS,
    EXIT_USAGE,
    EXIT_WAITING,
    fail,
    load_graph_or_exit,
    open_store,
    parse_assignments,
    store_option,
    typed_inputs,
)


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
@click.option("--model", default=None, help="Model alias or id for every role.")
@click.option(
    "--replay",
    "replay_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Play a recording instead of calling models.",
)
@click.option(
    "--max-steps", type=click.IntRange(min=1), default=None, help="Override limits.max_steps."
)
@store_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per event, result last.")
def run(
    graph_arg: str,
    task: str | None,
    inputs: tuple[str, ...],
    workspace: Path | None,
    model: str | None,
    replay_path: Path | None,
    max_steps: int | None,
    store_dir: Path | None,
    as_json: bool,
) -> None:
    """Run GRAPH (a path, or a name in ./graphs or the bundled graphs) as a new thread.

    TASK fills the graph's only required input (or `task` for graphs without inputs).
    Exit codes: 0 completed, 1 failed or the graph has errors, 2 usage, 3 suspended or waiting.
    """
    from ..lint import lint
    from ..problems import has_errors

    graph = load_graph_or_exit(graph_arg)
    problems = lint(graph)
    if has_errors(problems):
        for problem in problems:
            click.echo(problem.format(), err=True)
        fail(
            "the graph has errors; fix them before running (see `orchestrator validate`)",
            EXIT_PROBLEMS,
        )

    recording = None
    if replay_path is not None:
        from ..recording import RecordingError, load_recording

        try:
            recording = load_recording(replay_path)
        except RecordingError as exc:
            fail(str(exc))
        if recording.graph and recording.graph != graph.name:
            click.echo(
                f"note: the recording is of graph '{recording.graph}', "
                f"replaying it through '{graph.name}'",
                err=True,
            )
        if recording.graph_hash and recording.graph_hash != graph.hash:
            click.echo("note: the graph changed since the recording was made", err=True)

    values = thread_inputs(graph, task, inputs, recording)
    store = open_store(store_dir)
    from ..runner import InputError, RunOptions, start_thread

    try:
        thread_id = start_thread(graph, values, store, workspace=workspace or Path.cwd())
    except InputError as exc:
        fail(f"inputs: {exc}")
    if as_json:
        from .display import json_line

        for stored in store.events(thread_id):  # ThreadStarted, appended before the loop
            click.echo(json_line(stored, thread_id))
    else:
        announce(graph, thread_id, recording is not None)
    code = drive(
        graph,
        store,
        thread_id,
        RunOptions(
            max_steps=max_steps, model=model, interactive=sys.stdin.isatty() and not as_json
        ),
        as_json,
        recording,
    )
    sys.exit(code)


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


def announce(graph: Any, thread_id: str, replay: bool) -> None:
    editors = [n for n, r in graph.roles.items() if "edit" in r.tools]
    shells = [n for n, r in graph.roles.items() if "shell" in r.tools]
    click.echo(f"thread {thread_id} ({graph.name}{', replay' if replay else ''})", err=True)
    if editors:
        click.echo(f"  may edit files: {', '.join(editors)}", err=True)
    if shells:
        click.echo(f"  may run commands: {', '.join(shells)}", err=True)


def drive(
    graph: Any,
    store: Any,
    thread_id: str,
    options: Any,
    as_json: bool,
    recording: Any = None,
    resume: bool = False,
    message: str | None = None,
) -> int:
    """Advance a thread, showing events; returns the exit code."""
    from ..runner import ResumeError, advance
    from ..store.base import ThreadBusy
    from .display import PlainPrinter, json_line

    if as_json:
        options.on_event = lambda stored, state: click.echo(json_line(stored, thread_id))
    else:
        options.on_event = PlainPrinter(thread_id)
    actor_for = None
    if recording is not None:
        from ..recording import ReplayActor

        replay_actor = ReplayActor(recording)
        actor_for = lambda name, role: replay_actor  # noqa: E731
    try:
        result = asyncio.run(
            advance(
                graph,
                store,
                thread_id,
                actor_for=actor_for,
                options=options,
                resume=resume,
                message=message,
            )
        )
    except KeyboardInterrupt:
        click.echo(
            f"\ninterrupted: thread {thread_id} is suspended; continue it with\n"
            f"  orchestrator threads resume {thread_id}",
            err=True,
        )
        return EXIT_WAITING
    except ThreadBusy as exc:
        fail(str(exc), EXIT_PROBLEMS)
    except ResumeError as exc:
        fail(str(exc), EXIT_USAGE)
    return report(result, as_json)


def report(result: Any, as_json: bool) -> int:
    if as_json:
        click.echo(json.dumps(result.to_dict(), ensure_ascii=False))
    else:
        if result.state == "completed":
            click.echo(result.final or "")
        elif result.state in ("suspended", "waiting"):
            click.echo(f"thread {result.thread_id} is {result.state}: {result.reason}", err=True)
            hint = (
                f"orchestrator threads answer {result.thread_id} --status ..."
                if result.state == "waiting"
                else f"orchestrator threads resume {result.thread_id} [--message TEXT]"
            )
            click.echo(f"  continue with: {hint}", err=True)
        else:
            click.echo(f"thread {result.thread_id} {result.state}: {result.reason}", err=True)
    return {"completed": EXIT_OK, "suspended": EXIT_WAITING, "waiting": EXIT_WAITING}.get(
        result.state, EXIT_PROBLEMS
    )
