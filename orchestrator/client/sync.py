"""`Orchestrator`: the client of docs/format.md section 10b for code that does not await.

It is `AsyncOrchestrator` (client/aio.py) run on an event loop of its own, in a thread of its
own ("orchestrator-client") that `close()` / the `with` block ends. So every method works the
same whether or not the caller's thread already runs an event loop (a web framework, a notebook):
the caller's loop is never asked to host another. Ctrl-C during a call interrupts the thread the
call advances, as Ctrl-C does on the command line (the thread is left resumable).

The methods, their keywords and what they return are `AsyncOrchestrator`'s; `events` is a plain
iterator here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Coroutine, Iterator, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

from ..actors.recording import Recording
from ..run.contract import CANCELLED_BY_USER, ThreadSession
from ..run.options import ActorFor, RunOptions
from ..store.base import StoredEvent
from .aio import AsyncOrchestrator, GraphArg, StoreArg
from .thread import Thread

T = TypeVar("T")


class Orchestrator:
    """Threads in a store (`store=`) or on Temporal (`temporal="host:7233"`): see the module
    and `AsyncOrchestrator`, whose methods these are."""

    def __init__(
        self,
        store: StoreArg = None,
        *,
        temporal: str | None = None,
        task_queue: str | None = None,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="orchestrator-client", daemon=True
        )
        self._thread.start()
        self._closed = False

        async def make() -> AsyncOrchestrator:  # made on its loop: what it opens lives there
            return AsyncOrchestrator(store, temporal=temporal, task_queue=task_queue, notify=notify)

        try:
            self._client = self._call(make())
        except BaseException:
            self._stop()
            raise

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the client's loop and wait for it. On Ctrl-C the task is cancelled and
        waited for (the runner records the interruption), then KeyboardInterrupt raised."""
        outcome: Future[T] = Future()
        tasks: list[asyncio.Task[T]] = []

        def settle(task: asyncio.Task[T]) -> None:
            if task.cancelled():
                outcome.set_exception(asyncio.CancelledError())
            elif (error := task.exception()) is not None:
                outcome.set_exception(error)
            else:
                outcome.set_result(task.result())

        def start() -> None:
            tasks.append(self._loop.create_task(coro))
            tasks[0].add_done_callback(settle)

        self._loop.call_soon_threadsafe(start)
        try:
            return outcome.result()
        except KeyboardInterrupt:
            self._loop.call_soon_threadsafe(lambda: tasks[0].cancel())  # after start: FIFO
            with contextlib.suppress(BaseException):
                outcome.result()
            raise

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    @property
    def session(self) -> ThreadSession:
        """The session underneath (run/contract.py); its async methods belong to this
        client's loop."""
        return self._client.session

    def __enter__(self) -> Orchestrator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Interrupt background runs, close what was opened, end the client's thread."""
        if self._closed:
            return
        self._closed = True
        try:
            self._call(self._client.aclose())
        finally:
            try:  # the loop's own helper threads (`asyncio.to_thread`) end with it
                self._call(self._loop.shutdown_asyncgens())
                self._call(self._loop.shutdown_default_executor())
            finally:
                self._stop()

    # ------------------------------------------------------------------ a thread's life

    def run(
        self,
        graph: GraphArg,
        inputs: Mapping[str, Any] | None = None,
        *,
        workspace: str | os.PathLike[str] | None = None,
        in_place: bool = False,
        model: str | None = None,
        max_steps: int | None = None,
        replay: Recording | str | os.PathLike[str] | None = None,
        actor_for: ActorFor | None = None,
        options: RunOptions | None = None,
        wait: bool = True,
        title: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> Thread:
        """As `AsyncOrchestrator.run`."""
        return self._call(
            self._client.run(
                graph,
                inputs,
                workspace=workspace,
                in_place=in_place,
                model=model,
                max_steps=max_steps,
                replay=replay,
                actor_for=actor_for,
                options=options,
                wait=wait,
                title=title,
                labels=labels,
            )
        )

    def answer(
        self,
        thread_id: str,
        *,
        status: str | None = None,
        fields: Mapping[str, Any] | None = None,
        body: str = "",
        text: str | None = None,
        step: int | None = None,
        graph: GraphArg | None = None,
        actor_for: ActorFor | None = None,
        options: RunOptions | None = None,
    ) -> Thread:
        """As `AsyncOrchestrator.answer`."""
        return self._call(
            self._client.answer(
                thread_id,
                status=status,
                fields=fields,
                body=body,
                text=text,
                step=step,
                graph=graph,
                actor_for=actor_for,
                options=options,
            )
        )

    def resume(
        self,
        thread_id: str,
        *,
        message: str | None = None,
        graph: GraphArg | None = None,
        model: str | None = None,
        max_steps: int | None = None,
        actor_for: ActorFor | None = None,
        options: RunOptions | None = None,
    ) -> Thread:
        """As `AsyncOrchestrator.resume`."""
        return self._call(
            self._client.resume(
                thread_id,
                message=message,
                graph=graph,
                model=model,
                max_steps=max_steps,
                actor_for=actor_for,
                options=options,
            )
        )

    def fork(
        self,
        thread_id: str,
        *,
        at: int | None = None,
        status: str | None = None,
        fields: Mapping[str, Any] | None = None,
        body: str = "",
        text: str | None = None,
        message: str | None = None,
        reuse: bool = False,
        title: str | None = None,
        graph: GraphArg | None = None,
        model: str | None = None,
        max_steps: int | None = None,
        actor_for: ActorFor | None = None,
        options: RunOptions | None = None,
    ) -> Thread:
        """As `AsyncOrchestrator.fork`."""
        return self._call(
            self._client.fork(
                thread_id,
                at=at,
                status=status,
                fields=fields,
                body=body,
                text=text,
                message=message,
                reuse=reuse,
                title=title,
                graph=graph,
                model=model,
                max_steps=max_steps,
                actor_for=actor_for,
                options=options,
            )
        )

    def cancel(self, thread_id: str, *, reason: str = CANCELLED_BY_USER) -> Thread:
        """As `AsyncOrchestrator.cancel`."""
        return self._call(self._client.cancel(thread_id, reason=reason))

    # ------------------------------------------------------------------ reading

    def get(self, thread_id: str) -> Thread:
        """As `AsyncOrchestrator.get`."""
        return self._call(self._client.get(thread_id))

    def list(
        self,
        *,
        state: str | None = None,
        graph: str | None = None,
        labels: Mapping[str, str] | None = None,
        search: str | None = None,
    ) -> list[Thread]:
        """As `AsyncOrchestrator.list`."""
        return self._call(self._client.list(state=state, graph=graph, labels=labels, search=search))

    def events(
        self, thread_id: str, *, after: int = 0, follow: bool = False
    ) -> Iterator[StoredEvent]:
        """As `AsyncOrchestrator.events`, as a plain iterator."""
        stream = self._client.events(thread_id, after=after, follow=follow)
        try:
            while True:
                try:
                    yield self._call(_next(stream))
                except StopAsyncIteration:
                    return
        finally:
            if not self._closed:
                self._call(stream.aclose())


async def _next(stream: Any) -> StoredEvent:
    item: StoredEvent = await stream.__anext__()
    return item
