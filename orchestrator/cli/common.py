"""What the commands share: loading graphs and stores, parsing inputs, exit codes, errors.

An error of the family (`orchestrator.errors`) is shown by `fail_error` as every face shows it
(`word`): `error: ` and its wording on stderr, exit 2 when the request was wrong, else 1.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from ..core.titles import LabelError, parse_labels
from ..errors import OrchestratorError, word
from ..run.input_files import MAX_FILE, FileRefused, read_regular_file

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


def fail_error(exc: OrchestratorError) -> NoReturn:
    """An error of the family, worded as every face words it; exit 2 (usage) or 1."""
    wording = word(exc)
    fail(wording.text(), EXIT_USAGE if wording.usage_error else EXIT_PROBLEMS)


def load_graph_or_exit(arg: str) -> Any:
    """Load a graph; print its problems and exit 2 when it cannot be loaded."""
    # deferred: every command imports this module; only some need graphs (pydantic and all)
    from ..definition.loader import load_graph
    from ..definition.problems import GraphError

    try:
        return load_graph(arg)
    except GraphError as err:
        fail_error(err)


def parse_assignments(pairs: tuple[str, ...], what: str = "-i") -> dict[str, str]:
    """KEY=VALUE or KEY=@FILE pairs; @FILE reads the file's text (a regular file, at most
    10 MB: `read_text_file`)."""
    values: dict[str, str] = {}
    for pair in pairs:
        if "=" not in pair:
            fail(f"{what} {pair!r}: expected KEY=VALUE or KEY=@FILE")
        key, value = pair.split("=", 1)
        if not key:
            fail(f"{what} {pair!r}: the key is empty")
        if value.startswith("@"):
            value = read_text_file(Path(value[1:]), f"{what} {key}=@{value[1:]}")
        values[key] = value
    return values


def read_text_file(path: Path, what: str, *, dash_is_stdin: bool = False) -> str:
    """A file's text, or exit 2 naming the input: not a regular file, over `MAX_FILE` bytes,
    unreadable, or not UTF-8 text."""
    if dash_is_stdin and str(path) == "-":
        data = sys.stdin.buffer.read(MAX_FILE + 1)
        if len(data) > MAX_FILE:
            fail(f"{what}: stdin is over {MAX_FILE // 1_000_000} MB")
        return decode_text(data, f"{what}: stdin")
    try:
        data = read_regular_file(path)
    except FileRefused as exc:
        fail(f"{what}: {exc}")  # the option's name first: the message alone names only the file
    return decode_text(data, f"{what}: {path}")


def decode_text(data: bytes, where: str) -> str:
    """UTF-8 text (a byte-order mark is dropped), or exit 2 saying where the bad byte is."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        fail(
            f"{where} is not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}); "
            "save it as UTF-8 (for example `iconv -f latin1 -t utf-8 FILE`) and try again"
        )


def typed_inputs(schema: dict[str, Any], raw: dict[str, str]) -> dict[str, Any]:
    """Inputs whose declared type is not string are read as YAML (numbers, lists, booleans)."""
    # deferred: every command imports this module; only some need YAML
    from ..definition.yamlpos import typed_value

    return {key: typed_value(value, input_schema_of(schema, key)) for key, value in raw.items()}


def input_schema_of(schema: dict[str, Any], key: str) -> Any:
    """The schema an input is checked against: its property, a matching pattern, or the rest."""
    props = schema.get("properties") or {}
    if key in props:
        return props[key]
    for pattern, sub in (schema.get("patternProperties") or {}).items():
        try:
            if re.search(pattern, key):
                return sub
        except re.error:
            continue
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def thread_labels(items: tuple[str, ...]) -> dict[str, str]:
    """`--label KEY=VALUE`s as labels; a bad one is a usage error naming it."""
    try:
        return parse_labels(items)
    except LabelError as exc:
        fail(f"--label: {exc.message}")
