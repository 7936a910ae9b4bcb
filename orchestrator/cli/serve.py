"""`orchestrator serve [--store DIR] [--host 127.0.0.1] [--port 8765]`: the local web page.

The socket is bound here before the server starts, so a port in use is a clear error, `--port
0` takes a free port, and the address printed is the one really listened on. On an address
other than loopback, a token is made and printed; every request then needs it (docs/web.md).
"""

from __future__ import annotations

import contextlib
import ipaddress
import secrets
import socket
import sys
from pathlib import Path

import click

from .common import EXIT_PROBLEMS, fail, store_option


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket, or exit 1 saying why (a port in use, an address not of this host)."""
    bare = host.strip("[]")
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    try:
        return socket.create_server((bare, port), family=family, reuse_port=False)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}", EXIT_PROBLEMS)


@click.command("serve")
@store_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="Port to listen on (0: any free port).",
)
@click.option(
    "--temporal",
    metavar="ADDRESS",
    default=None,
    hidden=True,  # not served yet: says so, rather than "no such option"
)
def serve(store_dir: Path | None, host: str, port: int, temporal: str | None) -> None:
    """Watch threads in a web browser: timelines, graphs, live updates, answers, resume, cancel.

    Everything is served from this machine; nothing is loaded from the internet. On an address
    other than loopback every request needs the token printed at start.
    """
    if temporal:
        fail(
            "serve shows the threads of a local store; threads on Temporal are not served yet: "
            "see them with `orchestrator threads list|show --temporal ADDRESS`"
        )
    # deferred: Starlette, uvicorn and the store load only when the page is served
    import uvicorn

    from ..run.session import SessionError, open_store
    from ..store.base import default_store_dir
    from ..web.app import make_app

    directory = default_store_dir(store_dir)
    try:
        open_store(directory).close()  # a store that cannot be opened fails here, clearly
    except SessionError as exc:
        fail(exc.message, EXIT_PROBLEMS)
    loopback = is_loopback(host)
    token = None if loopback else secrets.token_urlsafe(24)
    sock = bind(host, port)
    where = sock.getsockname()
    shown = f"[{where[0]}]" if sock.family == socket.AF_INET6 else where[0]
    url = f"http://{shown}:{where[1]}/" + (f"?token={token}" if token else "")
    click.echo(f"serving the threads of {directory} at {url}")
    if token:
        click.echo(
            "every request needs this token (it is in the address above); share it with care"
        )
    click.echo("press Ctrl-C to stop")
    sys.stdout.flush()
    app = make_app(directory, token=token, loopback=loopback)
    config = uvicorn.Config(
        app, log_level="warning", timeout_graceful_shutdown=1, lifespan="on", access_log=False
    )
    server = uvicorn.Server(config)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: uvicorn has stopped the server
        server.run(sockets=[sock])
    click.echo("stopped")
