"""`orchestrator replay`: replay recordings through the current graph, or measure edge coverage.

    orchestrator replay GRAPH RECORDING... [--json]
    orchestrator replay --coverage GRAPH DIR_OR_FILES... [--json] [--fail-uncovered]

A DIR argument stands for every `*.yaml`/`*.yml` file under it, so a folder of recordings in CI
is one command. Each recording is replayed on its own: an unreadable one is reported and the
others still run. Exit codes: 0 every recording takes the same route, 1 one diverges (or, with
`--fail-uncovered`, an edge is not covered), 2 the graph or a recording cannot be read.
The logic lives in `orchestrator.replay`; this module only finds files and prints.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ..views.plural import noun, plural
from .common import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, load_graph_or_exit


def recording_paths(args: tuple[str, ...]) -> tuple[list[Path], list[str]]:
    """Expand the arguments: a file stays itself, a folder gives its recordings (sorted).

    Returns the paths and the errors (a missing path, a folder without recordings).
    """
    # deferred: `orchestrator replay --help` loads no engine
    from ..actors.recording import recordings_under

    paths: list[Path] = []
    errors: list[str] = []
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            found = recordings_under(path)
            if not found:
                errors.append(f"{arg}: no recordings (*.yaml, *.yml) in this folder")
            paths.extend(found)
        elif path.exists():
            paths.append(path)
        else:
            errors.append(f"{arg}: no such file or folder")
    return paths, errors


@click.command()
@click.argument("graph_arg", metavar="GRAPH")
@click.argument("paths", nargs=-1, required=True, metavar="RECORDING...")
@click.option(
    "--coverage",
    "show_coverage",
    is_flag=True,
    help="List every edge of the graph with how many recordings take it.",
)
@click.option(
    "--fail-uncovered",
    is_flag=True,
    help="With --coverage: exit 1 when an edge is taken by no recording.",
)
@click.option("--json", "as_json", is_flag=True, help="JSON output: one object per line.")
def replay(
    graph_arg: str,
    paths: tuple[str, ...],
    show_coverage: bool,
    fail_uncovered: bool,
    as_json: bool,
) -> None:
    """Replay RECORDING files (or folders of them) through GRAPH and report, per recording,
    "same route" or the first divergence.

    With --coverage, list every edge of GRAPH with the number of recordings taking it.
    Exit codes: 0 all take the same route, 1 one diverges, 2 unreadable graph or recording.
    """
    # deferred: `orchestrator replay --help` loads no engine
    from ..actors.recording import RecordingError, load_recording

    graph = load_graph_or_exit(graph_arg)
    files, errors = recording_paths(paths)
    recordings = []
    for path in files:
        try:
            recordings.append(load_recording(path))
        except RecordingError as exc:
            errors.append(str(exc))
    for error in errors:
        _error(error, as_json)
    if not recordings:
        if not errors:
            _error("no recordings given", as_json)
        sys.exit(EXIT_USAGE)

    if show_coverage:
        code = _coverage(graph, recordings, as_json, fail_uncovered)
    else:
        code = _replay_each(graph, recordings, as_json)
    sys.exit(EXIT_USAGE if errors else code)


def _error(message: str, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"error": message}, ensure_ascii=False))
    else:
        click.echo(f"error: {message}", err=True)


def _replay_each(graph: Any, recordings: list[Any], as_json: bool) -> int:
    from ..replay import replay_recording  # deferred: `replay --help` loads no engine

    diverged = 0
    for recording in recordings:
        report = replay_recording(graph, recording)
        diverged += not report.same_route
        if as_json:
            click.echo(json.dumps(report.to_dict(), ensure_ascii=False))
        else:
            mark = "✓" if report.same_route else "✗"
            click.echo(f"{mark} {report.describe()}")
    if not as_json and len(recordings) > 1:
        same = len(recordings) - diverged
        click.echo(
            f"{plural(len(recordings), 'recording')}: {same} same route"
            + (f", {diverged} {noun(diverged, 'diverges', 'diverge')}" if diverged else "")
        )
    return EXIT_PROBLEMS if diverged else EXIT_OK


def _coverage(graph: Any, recordings: list[Any], as_json: bool, fail_uncovered: bool) -> int:
    from ..replay import coverage  # deferred: `replay --help` loads no engine

    report = coverage(graph, recordings)
    if as_json:
        click.echo(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        click.echo(report.describe())
    if report.diverging or (fail_uncovered and report.uncovered):
        return EXIT_PROBLEMS
    return EXIT_OK
