"""`orchestrator serve [--store DIR | --temporal ADDRESS] [--host 127.0.0.1] [--port 8765]`.

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

from .common import EXIT_PROBLEMS, fail, store_option, temporal_option


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
@temporal_option
@click.option("--task-queue", default=None, help="With --temporal: the threads' task queue.")
def serve(
    store_dir: Path | None, host: str, port: int, temporal: str | None, task_queue: str | None
) -> None:
    """Watch threads in a web browser: timelines, graphs, live updates, answers, resume, cancel.

    Everything is served from this machine; nothing is loaded from the internet. On an address
    other than loopback every request needs the token printed at start.
    """
    # deferred: Starlette, uvicorn and the store load only when the page is served
    import uvicorn

    from ..run.session import SessionError, open_store
    from ..store.base import default_store_dir
    from ..web.app import make_app
    from .session import temporal_session

    on_temporal = None
    if temporal:
        if store_dir is not None:
            fail("--store and --temporal name two places for threads: give one")
        on_temporal = temporal_session(temporal, task_queue)
        where = f"the threads on Temporal at {temporal}"
    else:
        directory = default_store_dir(store_dir)
        where = f"the threads of {directory}"
        try:
            open_store(directory).close()  # a store that cannot be opened fails here, clearly
        except SessionError as exc:
            fail(exc.message, EXIT_PROBLEMS)
    loopback = is_loopback(host)
    token = None if loopback else secrets.token_urlsafe(24)
    sock = bind(host, port)
    address = sock.getsockname()
    shown = f"[{address[0]}]" if sock.family == socket.AF_INET6 else address[0]
    url = f"http://{shown}:{address[1]}/" + (f"?token={token}" if token else "")
    click.echo(f"serving {where} at {url}")
    if token:
        click.echo(
            "every request needs this token (it is in the address above); share it with care"
        )
    click.echo("press Ctrl-C to stop")
    sys.stdout.flush()
    if on_temporal is not None:
        app = make_app(temporal=on_temporal, token=token, loopback=loopback)
    else:
        app = make_app(directory, token=token, loopback=loopback)
    config = uvicorn.Config(
        app, log_level="warning", timeout_graceful_shutdown=1, lifespan="on", access_log=False
    )
    server = uvicorn.Server(config)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: uvicorn has stopped the server
        server.run(sockets=[sock])
    click.echo("stopped")
