"""The command line (docs/format.md section 9).

Exit codes: 0 success, 1 problems found or the thread failed, 2 usage error or unreadable input,
3 the thread is suspended or waiting. What the commands print to a terminal has its control
characters neutralised (`terminal.py`). Subcommands live in their own modules and are imported only
when invoked, so `orchestrator --help` stays fast.

An error of the family (`orchestrator.errors`) that a command does not handle itself is worded
here, as the web page and the MCP server word it; anything else is a bug: worded as one, its
traceback written to a file the hint names, never printed at the user.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from .terminal import guard_streams

# name -> (module, attribute, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "init": (
        "orchestrator.cli.init",
        "init",
        "Start a project: a graph, roles, a tested recording.",
    ),
    "run": ("orchestrator.cli.run", "run", "Run a graph as a new thread."),
    "validate": ("orchestrator.cli.validate", "validate", "Check graph and role files."),
    "graph": ("orchestrator.cli.graph", "graph", "Draw a graph as Mermaid or DOT."),
    "threads": (
        "orchestrator.cli.threads",
        "threads",
        "List, show, resume, answer, cancel, export, prune threads.",
    ),
    "roles": (
        "orchestrator.cli.roles",
        "roles",
        "List the roles of a graph: who plays each, its tools, its files.",
    ),
    "models": (
        "orchestrator.cli.models",
        "models",
        "Show the model providers, aliases and prices in effect, and where each comes from.",
    ),
    "replay": ("orchestrator.cli.replay", "replay", "Replay recordings through the current graph."),
    "extract": (
        "orchestrator.cli.extract",
        "extract",
        "Extract and validate a reply's frontmatter.",
    ),
    "schema": (
        "orchestrator.cli.schema",
        "schema",
        "Print the JSON Schema of the graph file format.",
    ),
    "serve": (
        "orchestrator.cli.serve",
        "serve",
        "Watch threads in a web browser, live; answer, resume, cancel.",
    ),
    "mcp": (
        "orchestrator.cli.mcp",
        "mcp",
        "Serve orchestrator's tools over MCP (stdio), for coding agents.",
    ),
    "eval": ("orchestrator.cli.eval", "eval_command", "Evaluate a graph on a suite of cases."),
    "worker": (
        "orchestrator.cli.worker",
        "worker",
        "Run threads on Temporal: a worker for their workflows and steps.",
    ),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attr, _ = COMMANDS[cmd_name]
        try:
            command = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            return None
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_) for name, (_, _, help_) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="orchestrator")
def cli() -> None:
    """Run multi-agent work as a graph of roles.

    Each role replies with YAML frontmatter validated against its contract; its $status picks
    the next edge of the graph.
    """


def main(argv: list[str] | None = None) -> Any:
    # What a thread holds (replies, tool output, files) never reaches a terminal raw.
    guard_streams()
    try:
        return cli.main(args=argv, prog_name="orchestrator", standalone_mode=True)
    except KeyboardInterrupt:  # pragma: no cover - a command handles its own Ctrl-C first
        click.echo("interrupted", err=True)
        sys.exit(130)
    except SystemExit as exc:
        if "temporalio.client" in sys.modules:
            # A Temporal client's threads can crash the interpreter's teardown (temporalio
            # sdk-python issue 300), so a command that used one leaves without it.
            from ..temporal.client import exit_now  # deferred: only loaded with temporalio

            exit_now(exc.code)
        raise
    except Exception as exc:
        # deferred: only a failing command pays for the wording (it imports nothing heavy)
        from ..errors import OrchestratorError
        from .common import fail, fail_error

        if isinstance(exc, OrchestratorError):
            fail_error(exc)  # a full disk, a damaged store, an unknown thread...
        fail(crash_report(exc), 1)


def crash_report(exc: BaseException) -> str:
    """A bug's wording, with its traceback saved to a file (mode 0600) that the hint names."""
    # deferred: only a crashing command needs them
    import dataclasses
    import os
    import tempfile
    import traceback

    from ..errors import word

    wording = word(exc)
    try:
        handle, name = tempfile.mkstemp(prefix="orchestrator-crash-", suffix=".txt")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write("".join(traceback.format_exception(exc)))
    except OSError:
        return wording.text()
    hint = f"this is a bug: please report it with what you ran and the traceback in {name}"
    return dataclasses.replace(wording, hint=hint).text()
