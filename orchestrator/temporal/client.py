"""Talking to Temporal: connecting, and reading its errors as the session's own.

Temporal's failures are translated once, here: a server that cannot be reached and a worker
that does not answer become `SessionError`s that say what to start; an update rejected by the
workflow's validator becomes the `Refused` (or `ThreadBusy`) that `judge` raised there.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Awaitable
from datetime import timedelta
from typing import NoReturn, TypeVar

from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from ..core.outcomes import Refused
from ..run.session import SessionError
from ..store.base import ThreadBusy

T = TypeVar("T")

READ_TIMEOUT = timedelta(seconds=20)  # a query or an update no worker takes up by then fails
CONNECT_TIMEOUT = 10.0  # seconds


async def connect(address: str) -> Client:
    """A client of the server at ADDRESS (host:port), namespace `default`."""
    try:
        return await asyncio.wait_for(Client.connect(address), CONNECT_TIMEOUT)
    except (TimeoutError, RuntimeError, OSError) as exc:
        raise SessionError(
            f"cannot reach the Temporal server at {address}: {exc or 'no answer'} "
            "(start one with `temporal server start-dev`, see docs/scale-out.md)",
            usage=False,
        ) from None


def no_worker(task_queue: str) -> SessionError:
    return SessionError(
        f"no worker answered on task queue '{task_queue}': start one with "
        f"`orchestrator worker --temporal ADDRESS --task-queue {task_queue}`",
        usage=False,
    )


async def answered(call: Awaitable[T], task_queue: str) -> T:
    """The result of a query or an update, with Temporal's failures read as the session's.

    An update waits for a worker to take it up: one that none takes up within READ_TIMEOUT
    fails, saying to start a worker."""
    try:
        return await asyncio.wait_for(call, READ_TIMEOUT.total_seconds())
    except TimeoutError:
        raise no_worker(task_queue) from None
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        if isinstance(cause, ApplicationError) and cause.type == "Refused":
            errors = cause.details[0] if cause.details else []
            raise Refused(cause.message, tuple(str(e) for e in errors)) from None
        if isinstance(cause, ApplicationError) and cause.type == "ThreadBusy":
            raise ThreadBusy(cause.message) from None
        raise SessionError(f"the thread's workflow refused the request: {cause or exc}") from None
    except RPCError as exc:
        if exc.status in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED):
            raise no_worker(task_queue) from None
        if exc.status == RPCStatusCode.FAILED_PRECONDITION and "poller" in exc.message:
            raise no_worker(task_queue) from None
        raise SessionError(f"Temporal: {exc.message}", usage=False) from None


def exit_now(code: int | str | None) -> NoReturn:
    """Leave the process without the interpreter's teardown, which a Temporal client's threads
    can crash (temporalio sdk-python issue 300: "PyGILState_Release" at exit). The output is
    flushed first; the exit code is the one the command chose."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    if code is None:
        os._exit(0)
    if isinstance(code, int):
        os._exit(code)
    print(code, file=sys.stderr, flush=True)
    os._exit(1)
