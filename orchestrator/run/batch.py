"""Many threads in one process: one thread per line of inputs, N at a time.

Each thread is an ordinary thread in the store (resumable on its own), started and advanced by
the session like a single run: its own git worktree and branch when the graph edits files, and
its work committed there when it completes. A thread that suspends
because the provider rate-limited it (429 after the SDK's own retries) is not a failure of the
batch: when `allowed()` says it may be retried (a passing failure, and the moderator would take
the resume: core/allowed.py), the batch halves its concurrency, waits with exponential backoff,
and resumes the thread (at most MAX_RATE_LIMIT_RESUMES times);
concurrency grows back by one after each thread that finishes cleanly (additive increase,
multiplicative decrease), so a rate limit slows the batch down instead of failing it.

A line may name its thread: `"$title"` (text) and `"$labels"` (an object of `key: value`) are
taken out of the line before its inputs are checked (`$` starts no input's name); the labels
given to the whole batch (`--label`) apply under each line's own.

While the batch runs, the objects that existed before it (the imports: the SDK, pydantic, the
graph; about 190,000 objects) are frozen (`gc.freeze`), so the collector's full passes walk only
what the batch made: one full pass over the whole heap costs 0.1 to 0.15 s, and a batch of
threads that keep their logs in memory triggers several (docs/performance.md, issue 23); and
the youngest generation is collected after 10,000 new objects instead of 700. Both are undone
when the batch ends, so garbage from before it is collected then.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.events import ThreadStatus
from ..core.outcomes import Refused, ResumeRequested
from ..core.titles import check_labels
from ..definition.models import Graph
from ..store.base import EventStore, ThreadBusy
from .actors import default_actor_for
from .contract import ThreadSession
from .input_files import FileRefused, read_regular_file
from .options import ActorFor, RunOptions, ThreadResult
from .preflight import InputError, check_inputs
from .session import Session

MAX_RATE_LIMIT_RESUMES = 8  # the batch's patience; whether a retry may happen is allowed()'s

MAX_BATCH = 100_000_000  # bytes of a batch file: a line of inputs each, so more than an input


class BatchInputError(InputError):
    """A line of the batch file is not a valid set of inputs; nothing was started."""


def read_batch(
    path: Path,
    graph: Graph,
    defaults: dict[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Parse and check every line first (with `defaults`, the -i values, under each line's
    own, and `labels` under its `$labels`), so a bad line costs nothing."""
    try:
        # A regular file only: not a FIFO that never opens, /dev/zero or /proc/self/environ.
        lines = read_regular_file(path, MAX_BATCH).decode("utf-8").splitlines()
    except FileRefused as exc:
        raise BatchInputError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise BatchInputError(
            f"{path} is not UTF-8 text (bad byte at offset {exc.start})"
        ) from None
    batch: list[dict[str, Any]] = []
    problems: list[str] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            inputs = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{path}:{number}: not JSON: {exc.msg}")
            continue
        if not isinstance(inputs, dict):
            problems.append(f"{path}:{number}: expected a JSON object of inputs")
            continue
        naming = {k: inputs.pop(k) for k in NAMING if k in inputs}
        inputs = {**(defaults or {}), **inputs}
        try:
            check_inputs(graph, inputs)
            title, line_labels = split_line(naming)
            if labels or line_labels:
                naming["$labels"] = {**(labels or {}), **line_labels}
        except InputError as exc:  # a LabelError too
            problems.append(f"{path}:{number}: {exc}")
            continue
        batch.append({**inputs, **naming})
    if problems:
        raise BatchInputError("\n".join(problems))
    if not batch:
        raise BatchInputError(f"{path} holds no inputs (one JSON object per line)")
    return batch


NAMING = ("$title", "$labels")  # the keys of a batch line that name its thread, not inputs


def split_line(naming: Mapping[str, Any]) -> tuple[str | None, dict[str, str]]:
    """A line's `$title` and `$labels`, checked (an InputError says what is wrong)."""
    title = naming.get("$title")
    if title is not None and not isinstance(title, str):
        raise InputError(f"$title must be text, not {type(title).__name__}")
    labels = naming.get("$labels") or {}
    if not isinstance(labels, dict):
        raise InputError('$labels must be an object of key: value, as {"team": "auth"}')
    return title, check_labels(labels)


class AdaptiveLimiter:
    """A semaphore whose size shrinks on rate limits and grows back on success.

    First come, first served: a slot that frees is handed to the longest waiting thread at
    once (counted for it before it wakes), so each waiting thread wakes once, when its turn
    comes; a condition woken for all would wake every waiting thread at every change."""

    def __init__(self, limit: int):
        self.max = max(1, limit)
        self.limit = self.max
        self.active = 0
        self._waiting: deque[asyncio.Future[None]] = deque()

    async def __aenter__(self) -> None:
        if self.active < self.limit and not self._waiting:
            self.active += 1
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.active -= 1  # the slot was handed over as we were cancelled: pass it on
                self._hand_over()
            else:
                self._waiting.remove(turn)
            raise

    async def __aexit__(self, *exc: object) -> None:
        self.active -= 1
        self._hand_over()

    async def backoff(self) -> None:
        self.limit = max(1, self.limit // 2)

    async def recover(self) -> None:
        self.limit = min(self.max, self.limit + 1)
        self._hand_over()

    def _hand_over(self) -> None:
        while self._waiting and self.active < self.limit:
            turn = self._waiting.popleft()
            if not turn.done():
                self.active += 1
                turn.set_result(None)


@dataclass
class BatchItem:
    line: int
    inputs: dict[str, Any]
    thread_id: str = ""
    result: ThreadResult | None = None
    rate_limited: int = 0  # how many times the batch waited out a rate limit for it
    error: str | None = None  # why its thread could not go on (another process took it)


async def run_batch(
    graph: Graph,
    batch: list[dict[str, Any]],
    store: EventStore | ThreadSession,
    *,
    concurrency: int = 4,
    actor_for: ActorFor | None = None,
    options_for: Callable[[], RunOptions] = RunOptions,
    workspace: str | Path | None = None,
    in_place: bool = False,
    backoff_seconds: float = 2.0,
    on_done: Callable[[BatchItem], None] | None = None,
) -> list[BatchItem]:
    """Run one thread per inputs mapping, at most `concurrency` at a time.

    Every thread works in `workspace` (default: the current directory), or in a git worktree
    of its own there when the graph edits files (unless `in_place`), as a single run would.
    """
    # A store is given its own local session; a session (the contract) is used as it is.
    session = store if isinstance(store, ThreadSession) else Session(store)
    folder = Path(workspace or Path.cwd()).resolve()
    limiter = AdaptiveLimiter(concurrency)
    items = [BatchItem(i, inputs) for i, inputs in enumerate(batch, 1)]
    # One set of actors (one API client and connection pool) for the whole batch.
    actor_for = actor_for or default_actor_for(options_for())

    async def one(item: BatchItem) -> None:
        first: ResumeRequested | None = None
        while True:
            async with limiter:
                # A line becomes a thread when its turn comes: queued lines are no threads
                # that look `running` to `threads list` and to other processes.
                if not item.thread_id:
                    inputs = {k: v for k, v in item.inputs.items() if k not in NAMING}
                    title, labels = split_line(item.inputs)
                    started = session.start(
                        graph,
                        inputs,
                        folder=folder,
                        in_place=in_place,
                        title=title,
                        labels=labels,
                    )
                    item.thread_id = started.thread_id
                try:
                    result = await session.advance(
                        graph,
                        item.thread_id,
                        actor_for=actor_for,
                        options=options_for(),
                        first=first,
                    )
                except (Refused, ThreadBusy) as exc:  # another process took or ended it
                    item.error = exc.message
                    if on_done is not None:
                        on_done(item)
                    return
            # Whether the thread may simply be resumed again (suspended by a passing failure,
            # and the moderator would take the resume) is the moderator's answer, not ours;
            # a completed thread ends there (asking would read and fold its whole log again).
            retry = (
                session.allowed(item.thread_id, graph).retry.ok
                if result.state != ThreadStatus.COMPLETED
                else False
            )
            if retry and item.rate_limited < MAX_RATE_LIMIT_RESUMES:
                item.rate_limited += 1
                await limiter.backoff()
                await asyncio.sleep(backoff_seconds * 2 ** (item.rate_limited - 1))
                first = ResumeRequested()
                continue
            break
        item.result = result
        if result.state == ThreadStatus.COMPLETED:
            await limiter.recover()
        if on_done is not None:
            on_done(item)

    with quiet_collector():
        await asyncio.gather(*(one(item) for item in items))
    return items


# Collect the youngest generation after this many new objects, not CPython's 700: a model
# call makes a few hundred short-lived containers (the SDK's events, the step's records), and
# a young collection costs about 0.4 µs per object it looks at, most of which would have been
# freed by their reference counts a moment later (cli/validate.py does the same).
GC_THRESHOLD = 10_000


@contextlib.contextmanager
def quiet_collector() -> Iterator[None]:
    """Make the garbage collector cheap while the batch runs (see the module's docstring): the
    heap from before the batch frozen, young collections less often. Left as found: a process
    that froze its heap itself keeps it frozen, and a threshold set meanwhile is kept."""
    thaw = not gc.get_freeze_count()
    threshold = gc.get_threshold()
    raise_it = 0 < threshold[0] < GC_THRESHOLD
    # No collection first: freezing and unfreezing only move the generations' lists, and a
    # full pass over the caller's heap at every batch would cost what it saves.
    if thaw:
        gc.freeze()
    if raise_it:
        gc.set_threshold(GC_THRESHOLD, *threshold[1:])
    try:
        yield
    finally:
        if raise_it and gc.get_threshold()[0] == GC_THRESHOLD:
            gc.set_threshold(*threshold)
        if thaw:
            gc.unfreeze()
