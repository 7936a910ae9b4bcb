"""`orchestrator mcp [--store DIR]`: serve orchestrator's tools over MCP on stdin and stdout."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .common import store_option


@click.command("mcp")
@store_option
def mcp(store_dir: Path | None) -> None:
    """Serve orchestrator as an MCP server over stdio (for Claude Code and other agents).

    Tools: list_graphs, validate_graph, start_thread, thread_state, thread_story,
    list_threads, answer_thread, resume_thread, cancel_thread.
    """
    try:
        # deferred: `mcp` is an optional extra, and --help needs none of it
        import anyio

        from ..mcp_server.server import serve
    except ImportError:
        click.echo(
            "error: `orchestrator mcp` needs the `mcp` package: "
            "pip install '.[mcp]' in orchestrator's folder",
            err=True,
        )
        sys.exit(2)
    anyio.run(serve, store_dir)
