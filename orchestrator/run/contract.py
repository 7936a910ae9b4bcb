"""One session contract: what a thread's life offers every face, local or on Temporal.

`Session` (run/session.py, threads in a local store) and `TemporalSession`
(temporal/session.py, threads as workflows) both implement `ThreadSession`; the command line,
the web page, the MCP server, batches and the Python client (orchestrator/client/) hold this
protocol and never ask which one they were given. Where the two differ, the difference is a
property of the contract, not a class to switch on:

- `blocking`: whether reads wait on the network (Temporal); a server then runs them off its loop.
- `close()`: lets go of what the session opened (its store connection, its Temporal client).

Every read has an awaitable twin (`athread`, `athreads`, `aevents`, `aquestion`, `agraph_for`,
`acancel`, `astart`, `afork`) for callers inside an event loop: the sync forms of a Temporal session
run their own loop, which a running loop cannot host.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..actors.recording import Recording
    from ..core.allowed import Allowed
    from ..core.outcomes import Outcome
    from ..core.state import ThreadState
    from ..core.steps import ThreadView
    from ..core.titles import ThreadQuery
    from ..definition.models import Graph
    from ..store.base import StoredEvent, ThreadRow
    from ..vcs.worktrees import Worktree
    from .options import ActorFor, RunOptions, ThreadResult
    from .prune import Pruned
    from .session import Notify, Started
    from .waiting import Question

CANCELLED_BY_USER = "cancelled by the user"


@runtime_checkable
class ThreadSession(Protocol):
    """A thread's life: start, advance, answer, resume, cancel, read (module docstring)."""

    notify: Notify

    @property
    def blocking(self) -> bool:
        """True when reads wait on the network: call them off an event loop's thread."""
        ...

    def close(self) -> None:
        """Let go of the store connection or the Temporal client this session opened."""
        ...

    # starting
    def preflight(
        self,
        graph: Graph,
        *,
        workspace: str | os.PathLike[str] | None,
        replay: bool,
        model: str | None = None,
    ) -> Path: ...

    def start(
        self,
        graph: Graph,
        inputs: dict[str, Any],
        *,
        folder: Path,
        in_place: bool = False,
        replay: bool = False,
        thread_id: str | None = None,
        options: RunOptions | None = None,
        title: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> Started: ...

    async def astart(
        self,
        graph: Graph,
        inputs: dict[str, Any],
        *,
        folder: Path,
        in_place: bool = False,
        replay: bool = False,
        thread_id: str | None = None,
        options: RunOptions | None = None,
        title: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> Started: ...

    # advancing
    async def advance(
        self,
        graph: Graph,
        thread_id: str,
        *,
        options: RunOptions | None = None,
        actor_for: ActorFor | None = None,
        replay: Recording | None = None,
        first: Outcome | None = None,
    ) -> ThreadResult: ...

    async def resume(
        self,
        graph: Graph,
        thread_id: str,
        *,
        message: str | None = None,
        options: RunOptions | None = None,
        actor_for: ActorFor | None = None,
    ) -> ThreadResult: ...

    async def answer(
        self,
        graph: Graph,
        thread_id: str,
        text: str,
        *,
        step: int | None = None,
        options: RunOptions | None = None,
        actor_for: ActorFor | None = None,
    ) -> ThreadResult: ...

    def cancel(self, thread_id: str, reason: str = CANCELLED_BY_USER) -> ThreadRow: ...

    async def acancel(self, thread_id: str, reason: str = CANCELLED_BY_USER) -> ThreadRow: ...

    def fork(
        self,
        thread_id: str,
        *,
        at: int | None = None,
        reply: str | None = None,
        status: str | None = None,
        set: Mapping[str, Any] | None = None,  # noqa: A002 (the `--set` of the command line)
        message: str | None = None,
        reuse: bool = False,
        title: str | None = None,
        graph: Graph | None = None,
    ) -> str:
        """A new thread from this one's log up to step `at` (docs/format.md section 20); its
        id. Refused (nothing made) as the moderator says (core/fork.py). Not advanced."""
        ...

    async def afork(
        self,
        thread_id: str,
        *,
        at: int | None = None,
        reply: str | None = None,
        status: str | None = None,
        set: Mapping[str, Any] | None = None,  # noqa: A002
        message: str | None = None,
        reuse: bool = False,
        title: str | None = None,
        graph: Graph | None = None,
    ) -> str: ...

    def forks(self) -> dict[str, dict[str, Any]]:
        """Thread id -> {thread, step}: each fork and where it was forked from (lineage)."""
        ...

    def worktree(self, thread_id: str) -> Worktree | None: ...

    def prune(self, *, dry_run: bool = False, branches: bool = False) -> list[Pruned]: ...

    # reading
    def thread(self, thread_id: str) -> ThreadRow: ...

    async def athread(self, thread_id: str) -> ThreadRow: ...

    def threads(
        self, state: str | None = None, query: ThreadQuery | None = None
    ) -> list[ThreadRow]: ...

    async def athreads(
        self, state: str | None = None, query: ThreadQuery | None = None
    ) -> Sequence[ThreadRow]: ...

    def events(self, thread_id: str, after: int = 0) -> list[StoredEvent]: ...

    async def aevents(self, thread_id: str, after: int = 0) -> list[StoredEvent]: ...

    def state(self, thread_id: str) -> ThreadState: ...

    def view(self, thread_id: str) -> ThreadView: ...

    def question(
        self, thread_id: str, graph: Graph | None = None, step: int | None = None
    ) -> Question | None: ...

    async def aquestion(
        self, thread_id: str, graph: Graph | None = None, step: int | None = None
    ) -> Question | None: ...

    def check_answer(
        self, graph: Graph, thread_id: str, text: str, step: int | None = None
    ) -> tuple[str, ...]: ...

    def allowed(self, thread_id: str, graph: Graph | None = None) -> Allowed: ...

    def graph_for(self, row: ThreadRow, graph_arg: str | None = None) -> Graph: ...

    async def agraph_for(self, row: ThreadRow, graph_arg: str | None = None) -> Graph: ...

    def graph_of(self, row: ThreadRow) -> Graph | None: ...

    def child_events(self, thread_id: str) -> list[StoredEvent] | None: ...

    def recording(self, thread_id: str) -> Recording: ...
