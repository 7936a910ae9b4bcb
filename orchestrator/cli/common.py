"""What the commands share: loading graphs and stores, parsing inputs, exit codes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NoReturn

import click

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_WAITING = 0, 1, 2, 3

store_option = click.option(
    "--store",
    "store_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Thread store directory (default: $ORCHESTRATOR_HOME or ./.orchestrator).",
)

temporal_option = click.option(
    "--temporal",
    "temporal",
    metavar="ADDRESS",
    envvar="ORCHESTRATOR_TEMPORAL",
    default=None,
    help="Threads on the Temporal server at ADDRESS (host:port) instead of the local store "
    "(default: $ORCHESTRATOR_TEMPORAL); see docs/scale-out.md.",
)


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def load_graph_or_exit(arg: str) -> Any:
    """Load a graph; print its problems and exit 2 when it cannot be loaded."""
    # deferred: every command imports this module; only some need graphs (pydantic and all)
    from ..problems import GraphError
    from ..spec.loader import load_graph

    try:
        return load_graph(arg)
    except GraphError as err:
        for problem in err.problems:
            click.echo(problem.format(), err=True)
        sys.exit(EXIT_USAGE)


def parse_assignments(pairs: tuple[str, ...], what: str = "-i") -> dict[str, str]:
    """KEY=VALUE or KEY=@FILE pairs; @FILE reads the file's text."""
    values: dict[str, str] = {}
    for pair in pairs:
        if "=" not in pair:
            fail(f"{what} {pair!r}: expected KEY=VALUE or KEY=@FILE")
        key, value = pair.split("=", 1)
        if not key:
            fail(f"{what} {pair!r}: the key is empty")
        if value.startswith("@"):
            path = Path(value[1:])
            try:
                value = path.read_text(encoding="utf-8")
            except OSError as exc:
                fail(f"{what} {key}=@{path}: cannot read the file: {exc.strerror or exc}")
        values[key] = value
    return values


def typed_inputs(schema: dict[str, Any], raw: dict[str, str]) -> dict[str, Any]:
    """Inputs whose declared type is not string are read as YAML (numbers, lists, booleans)."""
    # deferred: every command imports this module; only some need YAML
    from ..spec.yamlpos import typed_value

    props = schema.get("properties") or {}
    return {key: typed_value(value, props.get(key)) for key, value in raw.items()}
