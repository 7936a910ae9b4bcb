"""`orchestrator init [DIR] [--template ...]`: start a project from a bundled starter."""

from __future__ import annotations

from pathlib import Path

import click

from ..views.plural import plural
from .common import fail

TEMPLATES = ("review-loop", "solve-issue", "blank")


@click.command("init")
@click.argument("directory", required=False, default=".", type=click.Path(path_type=Path))
@click.option(
    "--template",
    type=click.Choice(TEMPLATES),
    default="review-loop",
    show_default=True,
    help="review-loop: a writer and a reviewer; solve-issue: the bundled graph and roles, "
    "to change; blank: one role.",
)
def init(directory: Path, template: str) -> None:
    """Make a project in DIRECTORY (default: here): a graph, its roles, a recording, a pytest
    file that replays it, a models file and a README of next steps. Never overwrites a file."""
    # deferred: `init --help` loads no graph loader
    from ..bundled.starters import InitRefused, Starter, plan, write

    folder = directory.resolve()
    if folder.exists() and not folder.is_dir():
        fail(f"{directory} is a file, not a folder")
    try:
        written = write(folder, plan(Starter(template), folder.name))
    except InitRefused as exc:
        fail(
            f"{directory} already has {', '.join(exc.existing)}: nothing was written "
            "(init never overwrites; choose an empty folder)"
        )
    except OSError as exc:
        fail(f"cannot write in {directory}: {exc.strerror or exc}", 1)
    click.echo(f"made a {template} project in {directory}: {plural(len(written), 'file')}")
    for rel in written:
        click.echo(f"  {rel}")
    click.echo("next steps are in README.md: validate, test, replay, run")
