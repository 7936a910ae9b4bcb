"""`orchestrator extract`: run a reply through a role's extract pipeline.

The pipeline is docs/format.md section 4; the command, section 9.

Prints `{"status", "frontmatter", "body"}` as JSON (or only the status) and exits 0 for a valid
reply; prints one `error: ...` line per problem on stderr and exits 1 for an invalid one; exits 2
for a graph that does not load, an unknown role or an unreadable reply file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import NoReturn

import click

from ..definition.loader import load_graph
from ..definition.problems import GraphError, did_you_mean
from ..extract import ExtractError, extract_output
from ..run.input_files import FileRefused, read_regular_file
from .common import fail_error


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def _read_reply(source: str) -> str:
    """The reply text from a file or stdin (`-`), decoded as UTF-8 (a BOM is kept for extract)."""
    try:
        data = sys.stdin.buffer.read() if source == "-" else read_regular_file(Path(source))
    except FileRefused as exc:  # a FIFO, a device, /proc: never read (input_files.py)
        _fail(str(exc), 2)
    except OSError as exc:
        _fail(f"cannot read {source}: {exc.strerror or exc}", 2)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = "stdin" if source == "-" else source
        _fail(f"{where} is not UTF-8 text ({exc.reason} at byte {exc.start})", 2)


@click.command()
@click.option("--graph", "graph_arg", required=True, metavar="GRAPH", help="Graph path or name.")
@click.option("--role", "role_name", required=True, metavar="ROLE", help="The role that replied.")
@click.option("--status-only", is_flag=True, help="Print only the status of a valid reply.")
@click.argument("file", default="-", metavar="[FILE|-]")
def extract(graph_arg: str, role_name: str, status_only: bool, file: str) -> None:
    """Extract and validate a reply's frontmatter against ROLE's output contract.

    Reads the reply from FILE, or from stdin when FILE is `-` or omitted. Exits 0 when the
    reply is valid, 1 when it is not (the errors go to stderr), 2 on a usage problem.
    """
    try:
        graph = load_graph(graph_arg)
    except GraphError as exc:
        fail_error(exc)
    role = graph.roles.get(role_name)
    if role is None:
        hint = did_you_mean(role_name, graph.roles)
        known = ", ".join(graph.roles)
        _fail(
            f"graph '{graph.name}' has no role '{role_name}'"
            + (f"; {hint}" if hint else "")
            + f" (roles: {known})",
            2,
        )
    text = _read_reply(file)
    try:
        output = extract_output(text, role)
    except ExtractError as exc:
        for error in exc.errors:
            click.echo(f"error: {error}", err=True)
        sys.exit(1)
    if status_only:
        click.echo(output.status)
        return
    payload = {"status": output.status, "frontmatter": output.frontmatter, "body": output.body}
    click.echo(json.dumps(payload, ensure_ascii=False))
