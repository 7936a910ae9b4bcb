"""`orchestrator graph GRAPH [--format mermaid|dot|svg] [--thread ID] [--store DIR]`.

Prints the graph as a Mermaid flowchart (default), a Graphviz DOT digraph, or the SVG drawing the
web page shows (laid out by Graphviz's `dot`, `render/drawing.py`). With `--thread`, the edges
that thread took are highlighted with how often each was taken (and, in SVG, the roles with how
often each was visited). Without a working `dot`, `--format svg` says so in one line and exits
2; the other formats need no Graphviz.
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
    type=click.Choice(["mermaid", "dot", "svg"]),
    default="mermaid",
    show_default=True,
    help="Mermaid flowchart, Graphviz DOT, or SVG drawn with Graphviz's `dot`.",
)
@click.option("--thread", "thread_id", default=None, help="Highlight the path this thread took.")
@store_option
def graph(graph_arg: str, fmt: str, thread_id: str | None, store_dir: Path | None) -> None:
    """Draw GRAPH (a path, or a name in ./graphs or the bundled graphs)."""
    # deferred: `orchestrator graph --help` loads no graph machinery
    from ..render.diagram import to_dot, to_mermaid

    loaded = _load(graph_arg)
    taken = _taken_path(store_dir, thread_id, loaded.name) if thread_id else None
    if fmt == "svg":
        click.echo(_svg(loaded, taken), nl=False)
        return
    render = to_dot if fmt == "dot" else to_mermaid
    click.echo(render(loaded, taken), nl=False)


def _svg(loaded: Any, taken: Any) -> str:
    """The drawing, or the reason there is none on stderr and exit 2."""
    # deferred: only --format svg runs Graphviz
    from collections import Counter

    from ..definition.models import END
    from ..render.drawing import to_svg
    from ..render.layout import LayoutUnavailable

    visits = Counter(t for _, _, t in taken.edges if t != END) if taken is not None else None
    try:
        return to_svg(loaded, taken, visits=visits)
    except LayoutUnavailable as why:
        click.echo(
            f"error: no drawing: {why}; `--format mermaid` and `--format dot` need no Graphviz",
            err=True,
        )
        sys.exit(2)


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
