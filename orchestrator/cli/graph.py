"""`orchestrator graph GRAPH [--format mermaid|dot] [--thread ID] [--store DIR]`.

Prints the graph as a Mermaid flowchart (default) or a Graphviz DOT digraph. With `--thread`, the
edges that thread took are highlighted with how often each was taken.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from .common import store_option


@click.command("graph")
@click.argument("graph_arg", metavar="GRAPH")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["mermaid", "dot"]),
    default="mermaid",
    show_default=True,
    help="Mermaid flowchart or Graphviz DOT.",
)
@click.option("--thread", "thread_id", default=None, help="Highlight the path this thread took.")
@store_option
def graph(graph_arg: str, fmt: str, thread_id: str | None, store_dir: Path | None) -> None:
    """Draw GRAPH (a path, or a name in ./graphs or the bundled graphs)."""
    # deferred: `orchestrator graph --help` loads no graph machinery
    from ..render.diagram import to_dot, to_mermaid

    loaded = _load(graph_arg)
    taken = _taken_path(store_dir, thread_id, loaded.name) if thread_id else None
    render = to_dot if fmt == "dot" else to_mermaid
    click.echo(render(loaded, taken), nl=False)


def _load(arg: str) -> Any:
    """The graph, or its problems on stderr and exit 2 (unreadable) or 1 (invalid)."""
    # deferred: `orchestrator graph --help` loads no graph machinery
    from ..definition.loader import load_graph
    from ..definition.problems import GraphError

    try:
        return load_graph(arg)
    except GraphError as err:
        for problem in err.problems:
            click.echo(problem.format(), err=True)
        sys.exit(2 if any(p.code == "unreadable" for p in err.problems) else 1)


def _taken_path(store_dir: Path | None, thread_id: str, graph: str) -> Any:
    from ..render import thread_path  # deferred: only --thread opens the thread store

    try:
        return thread_path(store_dir, thread_id, graph)
    except SystemExit:
        raise
    except Exception as exc:  # an unknown thread, an unreadable store
        click.echo(f"error: cannot read thread '{thread_id}': {exc}", err=True)
        sys.exit(2)
