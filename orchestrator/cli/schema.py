"""`orchestrator schema`: print the JSON Schema of the graph file format, for editors."""

from __future__ import annotations

import click


@click.command("schema")
def schema() -> None:
    """Print the JSON Schema of graph files (docs/graph.schema.json holds a copy)."""
    from ..definition.schema import graph_schema_text  # deferred: `schema --help` loads no pydantic

    click.echo(graph_schema_text(), nl=False)
