"""`orchestrator serve [--store DIR | --temporal ADDRESS] [--host 127.0.0.1] [--port 8765]`.

The socket is bound here before the server starts, so a port in use is a clear error, `--port
0` takes a free port, and the address printed is the one really listened on.

Every request needs a token, on loopback too (docs/web.md, web/guard.py): a random one made at
each start, or `ORCHESTRATOR_SERVE_TOKEN` for scripts (an environment variable, not an option:
a command line can be read by every process of the machine, an environment only by its user).
It is printed in the address (`/?token=...`), and `--open` opens that address in the browser
through a file only this user can read, as Jupyter does, so the token is never on a browser's
command line either. `--no-token` serves without one, on loopback only, with a warning.
"""

from __future__ import annotations

import contextlib
import html
import ipaddress
import os
import re
import secrets
import socket
import sys
import tempfile
import webbrowser
from collections.abc import Iterator
from pathlib import Path

import click

from .common import EXIT_PROBLEMS, fail, fail_error, store_option, temporal_option

TOKEN_ENV = "ORCHESTRATOR_SERVE_TOKEN"
TOKEN_SHAPE = re.compile(r"[A-Za-z0-9._~-]{16,256}")  # fits a URL and a cookie unquoted


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
@click.option(
    "--no-token",
    is_flag=True,
    help="Serve without a token (loopback only): any process of this machine can then answer "
    "and cancel threads.",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the web browser.")
def serve(
    store_dir: Path | None,
    host: str,
    port: int,
    temporal: str | None,
    task_queue: str | None,
    no_token: bool,
    open_browser: bool,
) -> None:
    """Watch threads in a web browser: timelines, graphs, live updates, answers, resume, cancel.

    Everything is served from this machine; nothing is loaded from the internet. Every request
    needs the token in the address printed at start (ORCHESTRATOR_SERVE_TOKEN sets it).
    """
    # deferred: Starlette, uvicorn and the store load only when the page is served
    import uvicorn

    from ..run.session import SessionError, open_store
    from ..store.base import default_store_dir
    from ..web.app import make_app
    from .session import temporal_session

    loopback = is_loopback(host)
    token = choose_token(no_token, loopback)
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
            fail_error(exc)
    sock = bind(host, port)
    address = sock.getsockname()
    shown = f"[{address[0]}]" if sock.family == socket.AF_INET6 else address[0]
    url = f"http://{shown}:{address[1]}/" + (f"?token={token}" if token else "")
    click.echo(f"serving {where} at {url}")
    if token:
        click.echo(
            "every request needs this token (it is in the address above); share it with care"
        )
    else:
        click.echo(
            "warning: --no-token: any process of this machine, a command a role runs among "
            "them, can answer, resume and cancel these threads",
            err=True,
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
    with (
        opened(url) if open_browser else contextlib.nullcontext(),
        contextlib.suppress(KeyboardInterrupt),  # Ctrl-C: uvicorn has stopped the server
    ):
        server.run(sockets=[sock])
    click.echo("stopped")


def choose_token(no_token: bool, loopback: bool) -> str | None:
    """The token every request needs: the environment's, or a new random one; None with
    `--no-token` (refused off loopback)."""
    if no_token:
        if not loopback:
            fail(
                "--no-token is for a loopback address only (127.0.0.1, ::1, localhost): on "
                "any other, everyone who reaches it could answer for you"
            )
        return None
    given = os.environ.get(TOKEN_ENV)
    if given is None:
        return secrets.token_urlsafe(32)
    if not TOKEN_SHAPE.fullmatch(given):
        fail(
            f"{TOKEN_ENV} must be 16 to 256 letters, digits or ._~- "
            "(make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return given


@contextlib.contextmanager
def opened(url: str) -> Iterator[None]:
    """The page opened in the browser through a redirecting file only this user can read; the
    file is removed when the server stops."""
    folder = tempfile.mkdtemp(prefix="orchestrator-serve-")  # mode 0700
    page = Path(folder) / "open.html"
    target = html.escape(url, quote=True)
    descriptor = os.open(page, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(
            f'<!doctype html><meta http-equiv="refresh" content="0;url={target}">'
            f'<p><a href="{target}">open the threads</a></p>\n'
        )
    try:
        if not webbrowser.open(page.as_uri()):
            click.echo("no web browser to open: open the address above", err=True)
        yield
    finally:
        page.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            os.rmdir(folder)
