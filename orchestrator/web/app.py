"""`orchestrator serve`: the Starlette application, its routes, and its live feeds.

Routes (all HTML unless said; every one behind `guard.Guard`):

    GET  /                          the threads, filtered by `?state=` and `?graph=`
    GET  /events                    server-sent events: the list changed
    GET  /threads/ID                a thread's page
    GET  /threads/ID/events         server-sent events: the thread's log grew (its new events)
    POST /threads/ID/answer         answer for a waiting person (form fields from the contract)
    POST /threads/ID/resume         resume, with an optional message
    POST /threads/ID/cancel         cancel
    GET  /threads/ID/fork?step=N    "fork from here": the fork's form (web/fork_page.py)
    POST /threads/ID/fork           fork at the step (a reply, or decided again); its page next
    GET  /static/style.css, app.js  the page's only assets, shipped in the package

A request that fails is answered with its error worded by `orchestrator.errors.word`, as the
command line and the MCP server word it: in the page, or, for a client that accepts
`application/json` (and not HTML first), as `{"error": code, "message", "hint", "details"}`.

Threads are read through the session layer alone (`.threads`, `.thread`, `.events`, `.view`,
`.question`, `.allowed`, `.graph_of`), as the command line reads them; the page holds no SQL. The session is
held as the contract (run/contract.py): the local store's or, with `--temporal`, Temporal's,
whose reads block on the network (`blocking`): they run on a worker thread, off the server's loop. The live feeds look at
the threads' rows every `poll` seconds: a thread advanced by any process (the command line, a
batch, this server, a Temporal worker) shows up.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
from collections.abc import AsyncIterator, Callable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from ..core.allowed import fork_verdict
from ..core.titles import LabelError, ThreadQuery, parse_labels
from ..errors import OrchestratorError, Refused, ThreadNotFound, Wording, word
from ..run.contract import ThreadSession
from ..run.session import Session, open_store
from ..store.base import ThreadRow
from .answer_form import reply_from_form
from .evals_page import eval_routes
from .fork_page import ForkTyped, fork_page, question_at, reply_of, step_number
from .guard import ASGIApp, Guard
from .html import error_page
from .list_page import STATES, select, signature, threads_page
from .runs import Runs
from .thread_page import AnswerState, Notice, thread_page

if TYPE_CHECKING:
    from .runs import OpenSession

log = logging.getLogger("orchestrator")
T = TypeVar("T")

HEADERS = {
    # Nothing but this server's own files: no inline script, no font or style from elsewhere.
    "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    # No page's URL holds the token (the guard redirects it away), and none leaves this site in
    # a Referer anyway. (Not "no-referrer": a browser then sends `Origin: null` with a form,
    # which the guard refuses.)
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}
ASSETS = {"style.css": "text/css; charset=utf-8", "app.js": "text/javascript; charset=utf-8"}
KEEPALIVE_S = 15.0


def make_app(
    store_dir: Path | None = None,
    *,
    temporal: ThreadSession | None = None,
    token: str | None = None,
    loopback: bool = True,
    poll: float = 0.5,
) -> ASGIApp:
    """The web application over the store in `store_dir`, or over the threads of a
    Temporal session (shared by every request, closed by its owner); `token` is required on every request (None: `--no-token`, loopback
    only); `loopback` checks the Host header (see guard.py)."""
    if temporal is not None:
        shared = temporal
        where = f"Temporal at {getattr(temporal, 'address', '?')}"
        web = Web(
            temporal, lambda: contextlib.nullcontext(shared), where=where, poll=poll, owned=False
        )
    else:
        assert store_dir is not None
        web = Web(
            Session(open_store(store_dir), notify=log.info),
            lambda: Session(open_store(store_dir), notify=log.info),  # closed after its run
            where=str(store_dir),
            poll=poll,
            owned=True,
        )
    routes = [
        Route("/", web.index),
        Route("/events", web.list_events),
        Route("/threads/{thread_id}", web.thread),
        Route("/threads/{thread_id}/events", web.thread_events),
        Route("/threads/{thread_id}/answer", web.answer, methods=["POST"]),
        Route("/threads/{thread_id}/resume", web.resume, methods=["POST"]),
        Route("/threads/{thread_id}/cancel", web.cancel, methods=["POST"]),
        Route("/threads/{thread_id}/fork", web.fork_form),
        Route("/threads/{thread_id}/fork", web.fork, methods=["POST"]),
        Route("/static/{name}", web.asset),
        *eval_routes(store_dir if temporal is None else None),  # the evals view (evals_page.py)
    ]
    app = Starlette(routes=routes, lifespan=web.lifespan)
    return Guard(app, token=token, loopback=loopback)


class Web:
    def __init__(
        self,
        reader: ThreadSession,
        open_session: OpenSession,
        *,
        where: str,
        poll: float,
        owned: bool,
    ):
        self.reader = reader
        self.owned = owned  # the reader is this app's own, closed with it
        self.poll = poll
        self.where = where
        self.blocking = reader.blocking  # Temporal: reads wait on the network
        self.runs = Runs(open_session, blocking=self.blocking)
        folder = resources.files("orchestrator.web") / "static"
        self.assets = {name: (folder / name).read_bytes() for name in ASSETS}

    async def read(self, function: Callable[..., T], *args: Any) -> T:
        """A session call: in place for the local store, on a worker thread for Temporal."""
        if self.blocking:
            return await asyncio.to_thread(function, *args)
        return function(*args)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        yield
        await self.runs.close()
        if self.owned:  # a shared session (Temporal's) is closed by its owner
            self.reader.close()

    # ------------------------------------------------------------------ pages

    async def index(self, request: Request) -> Response:
        state = request.query_params.get("state") or None
        graph = request.query_params.get("graph") or None
        if state is not None and state not in STATES:
            known = ", ".join(STATES)
            wrong = OrchestratorError(f"'{state}' is not one of {known}", usage_error=True)
            return self._error(request, "no such state", word(wrong), 400)
        try:
            query = _query(request)
        except LabelError as exc:
            return self._error(request, "no such label", word(exc), 400)
        try:
            every = await self.read(self.reader.threads)
            rows = await self.read(lambda: self.reader.threads(state, query))
        except OrchestratorError as exc:
            return self._error(request, "the store cannot be read", word(exc), 500)
        graphs = sorted({r.graph for r in every})
        html = threads_page(
            rows,
            state=state,
            graph=graph,
            graphs=graphs,
            where=self.where,
            label=request.query_params.get("label") or "",
            search=query.search or "",
        )
        return _html(html)

    async def thread(self, request: Request) -> Response:
        row = await self._row(request)
        if isinstance(row, Response):
            return row
        return await self._thread_page(row, request=request)

    async def _thread_page(
        self,
        row: ThreadRow,
        *,
        notices: tuple[Notice, ...] = (),
        answer: AnswerState | None = None,
        status: int = 200,
        request: Request | None = None,
    ) -> Response:
        try:
            view = await self.read(self.reader.view, row.id)
            graph = await self.read(self.reader.graph_of, row)
            allowed = await self.read(self.reader.allowed, row.id, graph)
            forks = await self.read(self._forks, row.id)
        except OrchestratorError as exc:
            return self._error(request, "the thread cannot be read", word(exc), 500)
        failed = self.runs.errors.get(row.id)
        if failed and not notices:
            notices = (Notice(f"the last run from this page stopped: {failed.text()}"),)
        # On a thread: a graph's first drawing runs Graphviz's `dot` (about 90 ms), which must
        # not hold up the other pages and the live feeds this loop serves.
        html = await asyncio.to_thread(
            thread_page,
            row,
            view,
            graph=graph,
            allowed=allowed,
            where=self.where,
            running_here=self.runs.running(row.id),
            notices=notices,
            answer=answer,
            forks=forks,
        )
        return _html(html, status)

    def _forks(self, thread_id: str) -> list[tuple[ThreadRow, int]]:
        """The forks of the thread, each with the step it was forked at (the session's
        lineage: the store's ThreadForked events, or Temporal's memos)."""
        mine = {t: o for t, o in self.reader.forks().items() if o.get("thread") == thread_id}
        if not mine:  # most threads: no second read
            return []
        rows = [r for r in self.reader.threads() if r.id in mine]
        return [(r, int(mine[r.id].get("step") or 0)) for r in rows]

    async def _row(self, request: Request) -> ThreadRow | Response:
        thread_id = request.path_params["thread_id"]
        try:
            return await self.read(self.reader.thread, thread_id)
        except ThreadNotFound as exc:
            return self._error(request, "no such thread", word(exc), 404)
        except OrchestratorError as exc:
            return self._error(request, "the thread cannot be read", word(exc), 500)

    def _error(
        self, request: Request | None, title: str, wording: Wording, status: int
    ) -> Response:
        """A failed request: as JSON to a client that asks for it, else as a page."""
        if request is not None and wants_json(request):
            return JSONResponse(wording.to_dict(), status, headers=HEADERS)
        return _html(error_page(title, wording.text(), where=self.where), status)

    async def asset(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in self.assets:
            return Response("not found\n", 404, media_type="text/plain")
        return Response(self.assets[name], headers=HEADERS, media_type=ASSETS[name])

    # ------------------------------------------------------------------ actions

    async def answer(self, request: Request) -> Response:
        row = await self._row(request)
        if isinstance(row, Response):
            return row
        data = await _form(request)
        # The form's hidden step, as sent: ASCII digits of a sane length, else no step (a
        # hostile "²" or 5,000 digits must not reach int()).
        said = data.get("step", "")
        step = int(said) if said.isascii() and said.isdigit() and len(said) <= 12 else None
        question = await self.read(self.reader.question, row.id, None, step)
        if question is None:
            gone = Refused("the thread no longer waits for this answer; nothing was sent")
            return await self._after(request, row.id, word(gone))
        status, text, typed = reply_from_form(question, data)
        try:
            graph = await self.read(self.reader.graph_for, row)
            errors = await self.read(self.reader.check_answer, graph, row.id, text, question.step)
        except OrchestratorError as exc:
            return await self._after(request, row.id, word(exc))
        if errors:
            why = "the answer does not fit the role's contract; nothing was recorded"
            if wants_json(request):
                return self._error(request, "", word(Refused(why, tuple(errors))), 422)
            refused = AnswerState(status, errors, typed, question.step)
            note = Notice(why)
            return await self._thread_page(row, notices=(note,), answer=refused, status=422)
        failed = await self.runs.start(
            row.id, lambda s, g, o: s.answer(g, row.id, text, step=question.step, options=o)
        )
        return await self._after(request, row.id, failed)

    async def resume(self, request: Request) -> Response:
        row = await self._row(request)
        if isinstance(row, Response):
            return row
        message = (await _form(request)).get("message", "").strip() or None
        failed = await self.runs.start(
            row.id, lambda s, g, o: s.resume(g, row.id, message=message, options=o)
        )
        return await self._after(request, row.id, failed)

    async def cancel(self, request: Request) -> Response:
        row = await self._row(request)
        if isinstance(row, Response):
            return row
        try:
            await self.read(self.reader.cancel, row.id, "cancelled from the web page")
        except OrchestratorError as exc:
            return await self._after(request, row.id, word(exc))
        return await self._after(request, row.id, None)

    async def fork_form(self, request: Request) -> Response:
        row = await self._row(request)
        if isinstance(row, Response):
            return row
        return await self._fork_page(request, row, request.query_params.get("step", ""))

    async def fork(self, request: Request) -> Response:
        """A fork of the thread at the posted step; the new thread runs from this server, and
        its page is shown. A refused fork (no such step, a reply the contract refuses) is 422,
        its form shown again."""
        row = await self._row(request)
        if isinstance(row, Response):
            return row
        data = await _form(request)
        said = data.get("step", "")
        at = step_number(said)
        if at is None:
            return await self._fork_page(request, row, said)
        try:
            view = await self.read(self.reader.view, row.id)
            graph = await self.read(self.reader.graph_of, row)
        except OrchestratorError as exc:
            return self._error(request, "the thread cannot be read", word(exc), 500)
        reply, typed = reply_of(question_at(row, view, graph, at), data)
        fork = functools.partial(
            self.reader.fork,
            row.id,
            at=at,
            reply=reply,
            message=typed.message.strip() or None,
            reuse=typed.reuse,
            title=typed.title or None,
        )
        try:
            new_id = await self.read(fork)
        except OrchestratorError as exc:
            wording = word(exc)
            errors = tuple(getattr(exc, "errors", ()) or ())
            refill = dataclasses.replace(typed, errors=errors)
            return await self._fork_page(request, row, said, wording, refill)
        # The fork runs from here, as a resume from this page does (on Temporal its workers run
        # it; this follows it). Its page shows a failure to start.
        await self.runs.start(new_id, lambda s, g, o: s.advance(g, new_id, options=o))
        return RedirectResponse(f"/threads/{new_id}", status_code=303)

    async def _fork_page(
        self,
        request: Request,
        row: ThreadRow,
        said: str,
        refused: Wording | None = None,
        typed: ForkTyped | None = None,
    ) -> Response:
        """The fork's form for step `said`; 422 with the error in words for a step number
        that is not one, or one the moderator does not let the thread be forked at."""
        try:
            view = await self.read(self.reader.view, row.id)
            graph = await self.read(self.reader.graph_of, row)
            allowed = await self.read(self.reader.allowed, row.id, graph)
        except OrchestratorError as exc:
            return self._error(request, "the thread cannot be read", word(exc), 500)
        at = step_number(said)
        if at is None or at not in allowed.fork_steps:
            why = fork_verdict(view.state, at).why if at is not None else ""
            shown = said if len(said) <= 40 else said[:40] + "…"
            nowhere = Refused(why or f"'{shown}' is not a step number to fork thread {row.id} at")
            return self._error(request, "cannot fork there", word(nowhere), 422)
        if refused is not None and wants_json(request):
            return self._error(request, "", refused, 422)
        html = fork_page(
            row,
            view,
            question_at(row, view, graph, at),
            where=self.where,
            notice=refused.text() if refused is not None else "",
            typed=typed,
        )
        return _html(html, 422 if refused is not None else 200)

    async def _after(self, request: Request, thread_id: str, failed: Wording | None) -> Response:
        if failed is None:  # the thread moved: show it (a GET, so a reload sends nothing again)
            return RedirectResponse(f"/threads/{thread_id}", status_code=303)
        if wants_json(request):
            return self._error(request, "", failed, 409)
        row = await self.read(self.reader.thread, thread_id)
        return await self._thread_page(row, notices=(Notice(failed.text()),), status=409)

    # ------------------------------------------------------------------ live feeds

    async def thread_events(self, request: Request) -> Response:
        row = await self._row(request)
        if isinstance(row, Response):
            return row
        seen = {"seq": 0}

        def probe() -> dict[str, object]:
            now = self.reader.thread(row.id)
            new = []
            if now.seq > seen["seq"]:  # only then: on Temporal, reading the log is a query
                new = [s for s in self.reader.events(row.id) if s.seq > seen["seq"]]
            seen["seq"] = now.seq
            kinds = [type(s.event).__name__ for s in new][-50:]
            return {"seq": str(now.seq), "state": str(now.state), "events": kinds}

        return self._feed(request, probe, key="seq")

    async def list_events(self, request: Request) -> Response:
        try:
            query = _query(request)
        except LabelError:
            query = ThreadQuery(state="none")  # the page said so; its feed shows nothing

        def probe() -> dict[str, object]:
            rows = self.reader.threads(query.state, query)
            return {"seq": signature(select(rows, query.graph)), "threads": len(rows)}

        return self._feed(request, probe, key="seq")

    def _feed(self, request: Request, probe: Callable[[], dict[str, object]], key: str) -> Response:
        async def stream() -> AsyncIterator[str]:
            last: object = None
            quiet = 0.0
            while not await request.is_disconnected():
                try:
                    data = await self.read(probe)
                except OrchestratorError:  # a busy or failing store: look again
                    data = {key: last}
                if data[key] != last:
                    last = data[key]
                    quiet = 0.0
                    yield f"event: change\ndata: {json.dumps(data)}\n\n"
                elif quiet >= KEEPALIVE_S:
                    quiet = 0.0
                    yield ": still here\n\n"
                await asyncio.sleep(self.poll)
                quiet += self.poll

        headers = {**HEADERS, "x-accel-buffering": "no"}
        return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)


def wants_json(request: Request) -> bool:
    """A client that accepts JSON and not HTML before it (a browser asks for HTML first)."""
    accept = request.headers.get("accept", "").lower()
    json_at, html_at = accept.find("application/json"), accept.find("text/html")
    return json_at >= 0 and (html_at < 0 or json_at < html_at)


def _html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers=HEADERS)


async def _form(request: Request) -> dict[str, str]:
    """A url-encoded form's fields (the last value of each), without a multipart parser."""
    raw = (await request.body()).decode("utf-8", errors="replace")
    return {k: v[-1] for k, v in parse_qs(raw, keep_blank_values=True).items()}


def _query(request: Request) -> ThreadQuery:
    """The list's filters from the page's GET parameters; a bad label raises LabelError."""
    params = request.query_params
    return ThreadQuery(
        params.get("state") or None,
        params.get("graph") or None,
        parse_labels(v for v in params.getlist("label") if v.strip()),
        (params.get("q") or "")[:500] or None,
    )
