"""Who may use the page: an ASGI middleware in front of every route.

The threads a page shows can be answered, resumed and cancelled from it: whoever reaches the
server acts for the person. So, as Jupyter does, every request needs the token `serve` made (or
took from `ORCHESTRATOR_SERVE_TOKEN`) and printed, on a loopback address too: any process of
this machine, a command a role runs among them, can open a loopback socket.

- The token comes in one of three ways: `?token=...` in the URL (the address `serve` printed;
  the answer is a redirect to the same URL without it, with an HttpOnly, SameSite=Strict cookie,
  so the token stays out of the history and of Referer headers, and links and live updates work
  afterwards), that cookie, or an `Authorization: token ...` (or `Bearer ...`) header, for
  programs. Tokens are compared in constant time. A request without a good one gets 401 and a
  line saying to open the printed address; nothing else, the page's script and style included.
  The cookie's name holds the port: cookies do not tell ports apart, and two servers on one host
  would otherwise overwrite each other's.
- A request that changes something (any method but GET and HEAD: answer, resume, cancel) also
  needs an `Origin` header naming this server itself; without one, or with another, it is
  refused (403). Browsers send it with every POST, so another site open in the same browser
  cannot act with the person's cookie, and a program must say where it means to act.
- Bound to a loopback address, the `Host` header must name a loopback host, so a web site that
  resolves its own name to 127.0.0.1 (DNS rebinding) is refused before anything else.
- Without a token (`serve --no-token`, loopback only) the Host and Origin rules still hold.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "orchestrator-token"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
SAFE_METHODS = frozenset({"GET", "HEAD"})
NEEDS_TOKEN = "a token is needed: open the address `orchestrator serve` printed (with ?token=)\n"


class Guard:
    def __init__(self, app: ASGIApp, *, token: str | None, loopback: bool):
        if token is None and not loopback:  # serve refuses it first; this is the last word
            raise ValueError("a server on an address other than loopback needs a token")
        self.app = app
        self.token = token
        self.loopback = loopback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # the page has none: nothing to open
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        if self.loopback and _hostname(host) not in LOOPBACK_HOSTS:
            await _refuse(send, 403, "this server answers only requests for a loopback host\n")
            return
        cookie = cookie_name(scope)
        from_query = _query_token(scope)
        if self.token is not None:
            given = _authorization(headers) or from_query or _cookie(headers, cookie)
            if not given or not hmac.compare_digest(given.encode(), self.token.encode()):
                await _refuse(send, 401, NEEDS_TOKEN)
                return
        method = scope.get("method", "GET")
        if method not in SAFE_METHODS and not same_origin(headers.get("origin"), host):
            await _refuse(
                send,
                403,
                "refused: a request that changes something needs an Origin header naming this "
                f"server (http://{host})\n",
            )
            return
        if self.token is not None and from_query and method in SAFE_METHODS:
            await _login(scope, send, cookie, self.token)
            return
        await self.app(scope, receive, send)


def cookie_name(scope: Scope) -> str:
    """The cookie of the server on this port."""
    server = scope.get("server")
    return f"{COOKIE}-{server[1]}" if server and server[1] is not None else COOKIE


def same_origin(origin: str | None, host: str) -> bool:
    """Whether an `Origin` header names the server the request was sent to."""
    if not origin or not host:  # no Origin, or `Origin: null` (a sandboxed frame, a file)
        return False
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc.lower() == host.lower()


def _hostname(host: str) -> str:
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _query_token(scope: Scope) -> str:
    query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    return next((value for key, value in query if key == "token"), "")


def _authorization(headers: dict[str, str]) -> str:
    """The token of `Authorization: token T` (Jupyter's form) or `Authorization: Bearer T`."""
    scheme, _, value = headers.get("authorization", "").strip().partition(" ")
    return value.strip() if scheme.lower() in ("token", "bearer") else ""


def _cookie(headers: dict[str, str], name: str) -> str:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except CookieError:  # a malformed Cookie header is no token
        return ""
    morsel = jar.get(name)
    return morsel.value if morsel is not None else ""


async def _login(scope: Scope, send: Send, cookie: str, token: str) -> None:
    """The first visit, with `?token=`: the cookie, and the same URL without the token."""
    query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    rest = urlencode([(k, v) for k, v in query if k != "token"])
    # Only a path of this server: `//elsewhere` would leave the site.
    location = "/" + quote(scope.get("path", "/")).lstrip("/") + (f"?{rest}" if rest else "")
    value = f"{cookie}={token}; Path=/; HttpOnly; SameSite=Strict"
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", location.encode("latin-1")),
                (b"set-cookie", value.encode("latin-1")),
                (b"cache-control", b"no-store"),
                (b"referrer-policy", b"no-referrer"),
                (b"content-length", b"0"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b""})


async def _refuse(send: Send, status: int, text: str) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
