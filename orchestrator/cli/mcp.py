"""`orchestrator mcp [--store DIR] [--allow-graphs DIR]... [--allow-workspace DIR]...
[--allow-unsandboxed]`: serve orchestrator's tools over MCP on stdin and stdout.

The agent that calls the tools gets only what the flags grant (mcp_server/confine.py): the
graphs of ./graphs, the bundled ones and each `--allow-graphs DIR`; workspaces and recordings
inside the server's folder and each `--allow-workspace DIR`; a graph with `sandbox: off` only
with `--allow-unsandboxed`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .common import store_option

FOLDER = click.Path(exists=True, file_okay=False, path_type=Path)


@click.command("mcp")
@store_option
@click.option(
    "--allow-graphs",
    "allow_graphs",
    multiple=True,
    type=FOLDER,
    help="A folder of graphs the agent may also validate and start (repeatable); by default "
    "only ./graphs and the bundled graphs.",
)
@click.option(
    "--allow-workspace",
    "allow_workspaces",
    multiple=True,
    type=FOLDER,
    help="A folder the agent may also name as a workspace or a recording's place "
    "(repeatable); by default only this folder and those inside it.",
)
@click.option(
    "--allow-unsandboxed",
    is_flag=True,
    help="Let the agent run graphs with `sandbox: off` roles (commands unconfined, as you).",
)
def mcp(
    store_dir: Path | None,
    allow_graphs: tuple[Path, ...],
    allow_workspaces: tuple[Path, ...],
    allow_unsandboxed: bool,
) -> None:
    """Serve orchestrator as an MCP server over stdio (for Claude Code and other agents).

    Tools: list_graphs, validate_graph, start_thread, thread_state, thread_story,
    list_threads, answer_thread, resume_thread, cancel_thread. Graphs come only from ./graphs,
    the bundled graphs and --allow-graphs folders; a graph with `sandbox: off` only with
    --allow-unsandboxed.
    """
    try:
        # deferred: `mcp` is an optional extra, and --help needs none of it
        import anyio

        from ..mcp_server.confine import Confinement
        from ..mcp_server.server import serve
    except ImportError:
        click.echo(
            "error: `orchestrator mcp` needs the `mcp` package: "
            "pip install '.[mcp]' in orchestrator's folder",
            err=True,
        )
        sys.exit(2)
    confinement = Confinement.of(
        Path.cwd(),
        allow_graphs=allow_graphs,
        allow_workspaces=allow_workspaces,
        allow_unsandboxed=allow_unsandboxed,
    )
    anyio.run(serve, store_dir, confinement)
