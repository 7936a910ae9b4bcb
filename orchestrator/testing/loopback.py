"""A loopback HTTP server for the fake model APIs (fake_anthropic, fake_openai): a free port on
127.0.0.1, a thread per connection, and a `stop()` that closes every open connection too.

A fake's handler derives from `LoopbackHandler` and reaches the fake that owns the server (its
script, its recorded requests) as `self._backend`.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast


class LoopbackHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # The listen backlog. socketserver's default of 5 resets connections when many clients
    # connect at once (200 concurrent threads in bench/concurrency.py).
    request_queue_size = 1024
    backend: Any  # the fake that owns the server

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]):
        super().__init__(address, handler)
        self.stopping = threading.Event()  # set by stop(): delayed answers are dropped
        self.connections: set[socket.socket] = set()
        self.lock = threading.Lock()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout, cut stream) leaves a broken pipe behind: not news.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class LoopbackHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 60  # an idle keep-alive connection is closed after this; stop() closes the rest

    @property
    def _http(self) -> LoopbackHTTPServer:
        return cast(LoopbackHTTPServer, self.server)

    @property
    def _backend(self) -> Any:
        return self._http.backend

    def setup(self) -> None:
        super().setup()
        # Many small writes (SSE events): without TCP_NODELAY, Nagle's algorithm and delayed ACKs
        # add ~40 ms stalls that would make a benchmark measure the kernel, not the code.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._http.lock:
            self._http.connections.add(self.connection)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        with self._http.lock:
            self._http.connections.discard(self.connection)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # quiet: tests assert on recorded requests, not on stderr


class LoopbackServer:
    """A running fake endpoint; `stop()` closes it and every open connection."""

    def __init__(self, backend: Any, handler: type[LoopbackHandler]):
        self._http = LoopbackHTTPServer(("127.0.0.1", 0), handler)
        self._http.backend = backend
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}"

    def stop(self) -> None:
        self._http.stopping.set()
        self._http.shutdown()
        self._http.server_close()
        with self._http.lock:
            conns = list(self._http.connections)
        for conn in conns:
            shutdown_connection(conn)
        self._thread.join(timeout=5)


def shutdown_connection(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)
