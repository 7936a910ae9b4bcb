"""`orchestrator roles [GRAPH] [--format text|json]`: the roles, who plays them, from which file.

With GRAPH, its roles as the loader resolved them; without, the library roles and the Claude
Code and OpenCode agent files that a graph in the working folder could `extends:`.
"""

from __future__ import annotations

import json
import sys

import click

from .common import load_graph_or_exit
from .terminal import neutralise, raw


@click.command("roles")
@click.argument("graph_arg", metavar="[GRAPH]", required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help='text: one block per role; json: {"roles": [...]}.',
)
def roles(graph_arg: str | None, fmt: str) -> None:
    """List the roles of GRAPH (a path or a name), or those a graph here could extend."""
    # deferred: `orchestrator roles --help` loads no graph machinery
    from ..definition.catalog import available_roles, graph_roles

    entries = graph_roles(load_graph_or_exit(graph_arg)) if graph_arg else available_roles()
    if fmt == "json":
        click.echo(json.dumps({"roles": [e.to_dict() for e in entries]}, indent=2))
        return
    if not entries:
        click.echo("no roles found")
        return
    for i, entry in enumerate(entries):
        if i:
            click.echo()
        # The bold name's escapes go to the raw stream; the names themselves are neutralised.
        name = click.style(neutralise(entry.name), bold=True)
        click.echo(name + neutralise(f"  {entry.description}".rstrip()), file=raw(sys.stdout))
        model = f"  model {entry.model}" if entry.model else ""
        click.echo(f"  played by  {entry.actor}{model}")
        click.echo(f"  tools      {', '.join(entry.tools) or '(none)'}")
        if entry.restrictions:
            click.echo(f"  limited by {'; '.join(entry.restrictions)}")
        click.echo(f"  from       {' <- '.join(entry.files)}")
