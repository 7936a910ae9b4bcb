"""Forks of local threads (docs/format.md section 20), and a worktree thread's commit a step.

A mixin of the local `Session`:

- `fork(thread_id, *, at, reply | status + set, message, reuse, title, graph)`: the new thread's
  first events are made by the moderator (core/fork.py: what is kept, the reply judged as a
  person's answer, every refusal) before anything exists; then, for a thread with a git
  worktree, the fork's own worktree and branch `orchestrator/<fork-id>` at the commit of the
  step before the fork point (vcs/shared.py `step_commit`; the base when forking at step 1);
  then the thread in the store, all its first events in one transaction. Nothing of the
  original changes. The fork is advanced like any thread (`advance`), with `--reuse` served by
  run/reuse.py.
- `step_commits`: the options of an advance whose thread has a worktree, wrapped so that every
  committed step of the thread commits the worktree on its branch ("step N: ROLE -> STATUS",
  vcs/shared.py `step_message`, one commit a step: what a fork starts from), while the thread's
  lease is held and before its next step starts. Git runs through vcs/git_safe.py only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from ..actors.recording import Recording
from ..core import engine
from ..core.events import Event, StepCommitted, ThreadStarted
from ..core.fork import Fork, fork_events, reply_text
from ..core.state import ThreadState, ThreadSummary
from ..definition.models import Graph
from ..store.base import EventStore, StoredEvent, StoreError, ThreadRow
from ..store.ids import new_thread_id
from ..tools import boundary as trust
from ..vcs.shared import step_commit, step_message
from ..vcs.worktrees import (
    Worktree,
    WorktreeError,
    commit_all,
    create_worktree,
    discard_worktree,
    identity,
    load_worktree,
)
from .actors import default_actor_for
from .errors import SessionError
from .options import ActorFor, RunOptions
from .reuse import Reuse, reuse_from, reusing

Notify = Callable[[str], None]


class _Reads(Protocol):
    store: EventStore
    notify: Notify

    @property
    def directory(self) -> Path | None: ...
    def thread(self, thread_id: str) -> ThreadRow: ...
    def graph_for(self, row: ThreadRow, graph_arg: str | None = None) -> Graph: ...
    def recording(self, thread_id: str) -> Recording: ...


class Forking:
    def fork(
        self: _Reads,
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
        """Fork the thread at step `at` (default: its last committed step + 1); the new
        thread's id. It is not advanced: `advance` it as any thread (docs/threads.md).

        `reply` (a whole reply text) or `status` with `set` (fields; text values typed by the
        role's contract, as `threads answer --set` does) stands as step `at`'s output. Raises
        Refused naming the step and role (nothing made) when the moderator refuses the fork."""
        row = self.thread(thread_id)
        graph = graph or self.graph_for(row)
        events = [s.event for s in self.store.events(row.id)]
        reply = reply_text(graph, events, at, reply, status, set)
        new_id = new_thread_id()
        plan = fork_events(
            events,
            graph,
            new_id=new_id,
            at=at,
            reply=reply,
            message=message,
            reuse=reuse,
            title=title,
        )
        tree = _fork_worktree(self.directory, row.id, new_id, plan)
        head = plan.events[0]
        assert isinstance(head, ThreadStarted)
        if tree is not None:
            head = replace(head, workspace=str(tree.workspace))
        try:
            _store(self.store, [head, *plan.events[1:]], row, graph)
        except StoreError:
            if tree is not None:  # no thread will ever use it
                discard_worktree(tree)
            raise
        # The trust boundary, fixed now as at a thread's start: a worktree's git folders asked
        # of the repository; in place, what was found when the original started (the
        # workspace is the same, and a role may have changed it since).
        store_dir = self.directory
        if tree is not None:
            workspace = Path(head.workspace)
            fixed = trust.at_start(workspace, graph=graph, store_dir=store_dir, worktree=tree)
            trust.record(fixed, store_dir, new_id)
        elif (kept := trust.recorded(store_dir, row.id)) is not None:
            trust.record(kept, store_dir, new_id)
        return new_id

    async def afork(
        self: _Reads,
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
    ) -> str:
        return Forking.fork(
            self,
            thread_id,
            at=at,
            reply=reply,
            status=status,
            set=set,
            message=message,
            reuse=reuse,
            title=title,
            graph=graph,
        )

    def forks(self: _Reads) -> dict[str, dict[str, Any]]:
        """Thread id -> {thread, step}: each fork in the store and where it was forked from."""
        return self.store.forks()

    def reusing(
        self: _Reads,
        thread_id: str,
        actor_for: ActorFor | None,
        options: RunOptions | None,
        events: list[Event] | None = None,
    ) -> ActorFor | None:
        """`actor_for` (None: the roles' own actors) behind the original's replies, for a fork
        made with `reuse` whose steps have not differed from the original's yet
        (run/reuse.py); else `actor_for` as it is. `events`: the thread's log, when the caller
        has just read it (the store's is read otherwise)."""
        if events is None:
            events = [s.event for s in self.store.events(thread_id)]
        forked = reuse_from(events)
        if forked is None:
            return actor_for
        original = self.recording(forked.from_thread)
        inner = actor_for or default_actor_for(options or RunOptions())
        return reusing(inner, Reuse(thread_id, forked.at_step, original))


def _fork_worktree(
    store_dir: Path | None, original: str, new_id: str, plan: Fork
) -> Worktree | None:
    """The fork's own worktree, at the commit of the step before the fork point, when the
    original has one (its sidecar); None otherwise."""
    if store_dir is None:
        return None
    tree = load_worktree(store_dir, original)
    if tree is None:
        return None
    try:
        start = step_commit(tree, plan.at)
        folder = Path(tree.repo) / tree.subdir if tree.subdir else Path(tree.repo)
        return create_worktree(folder, store_dir, new_id, start=start, base=tree.base)
    except WorktreeError as exc:
        raise SessionError(
            f"cannot give the fork of thread {original} its own git worktree: {exc}", usage=False
        ) from None


def _store(store: EventStore, events: list[Event], row: ThreadRow, graph: Graph) -> None:
    """The fork in the store: its ThreadStarted, then the rest in one transaction."""
    state = ThreadState()
    summaries: list[ThreadSummary] = []
    for event in events:
        engine.apply(state, event)
        summaries.append(state.summary())
    head = events[0]
    assert isinstance(head, ThreadStarted)
    store.create(
        head, summaries[0], graph_path=row.graph_path, snapshot=graph.model_dump(mode="json")
    )
    rest = list(zip(events[1:], summaries[1:], strict=True))
    if rest:
        *before, (last, summary) = rest
        store.append_future(head.thread_id, len(events), last, summary, before).result()


def step_commits(
    tree: Worktree | None, thread_id: str, options: RunOptions | None, notify: Notify
) -> RunOptions | None:
    """`options` whose `on_event` also commits the worktree after each of the thread's
    committed steps (see the module's docstring); as they are when there is no worktree."""
    if tree is None:
        return options
    options = options or RunOptions()
    shown = options.on_event
    failed: list[str] = []
    author: list[dict[str, str]] = []  # the commits' identity, asked of git once an advance

    def on_event(stored: StoredEvent, state: ThreadState) -> None:
        event = stored.event
        if isinstance(event, StepCommitted) and not failed:
            text = step_message(event.step, event.role, event.status, thread_id)
            try:
                if not author:
                    author.append(identity(tree))
                commit_all(tree, text, author[0])
            except WorktreeError as exc:  # a tampered worktree: never committed again
                failed.append(str(exc))
                notify(f"step {event.step} was not committed on {tree.branch}: {exc}")
        if shown is not None:
            shown(stored, state)

    return replace(options, on_event=on_event)
