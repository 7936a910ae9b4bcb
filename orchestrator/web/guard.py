"""Who may use the page: an ASGI middleware in front of every route.

- Bound to a loopback address (the default), any local process may read and act, as with the
  command line; but the `Host` header must name a loopback host, so a web site that resolves
  its own name to 127.0.0.1 (DNS rebinding) cannot read the page from a browser.
- Bound to any other address, every request needs the token `serve` printed: `?token=...` in
  the URL (the first visit; the answer sets an HttpOnly, same-site cookie so links and live
  updates work afterwards), the cookie, or an `Authorization: Bearer ...` header. Tokens are
  compared in constant time. A request without it gets 401 and learns nothing else.
- A POST (answer, resume, cancel) whose `Origin` header names another site is refused (403):
  another page open in the same browser cannot act on threads.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlsplit

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "orchestrator_token"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


class Guard:
    def __init__(self, app: ASGIApp, *, token: str | None, loopback: bool):
        self.app = app
        self.token = token
        self.loopback = loopback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        if self.loopback and _hostname(host) not in LOOPBACK_HOSTS:
            await _refuse(send, 403, "this server answers only requests for a loopback host\n")
            return
        from_query = _query_token(scope)
        if self.token is not None:
            given = from_query or _bearer(headers) or _cookie(headers)
            if not given or not hmac.compare_digest(given.encode(), self.token.encode()):
                await _refuse(
                    send,
                    401,
                    "a token is needed: open the address `orchestrator serve` printed\n",
                )
                return
        if scope.get("method") == "POST" and not _same_origin(headers, host):
            await _refuse(send, 403, "refused: the request came from another site\n")
            return
        if self.token is not None and from_query:
            send = _setting_cookie(send, self.token)
        await self.app(scope, receive, send)


def _hostname(host: str) -> str:
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _query_token(scope: Scope) -> str:
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    return (query.get("token") or [""])[0]


def _bearer(headers: dict[str, str]) -> str:
    value = headers.get("authorization", "")
    return value[7:].strip() if value.lower().startswith("bearer ") else ""


def _cookie(headers: dict[str, str]) -> str:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except Exception:  # a malformed Cookie header is no token
        return ""
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None else ""


def _same_origin(headers: dict[str, str], host: str) -> bool:
    origin = headers.get("origin")
    if origin is None:  # not sent by a browser's cross-site form or script
        return True
    return urlsplit(origin).netloc == host


def _setting_cookie(send: Send, token: str) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            cookie = f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
            message["headers"] = [*message.get("headers", []), (b"set-cookie", cookie.encode())]
        await send(message)

    return wrapped


async def _refuse(send: Send, status: int, text: str) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
