"""The session: a thread's whole life, the same for every entry point.

The command line (a single run, a batch, `threads ...`) and the Python API go through a
`Session`, so they cannot drift apart; threads on Temporal go through `TemporalSession`
(orchestrator/temporal/session.py). Both implement one protocol, `ThreadSession`
(run/contract.py), which is all the faces and the client hold:

- preflight (run/preflight.py): the graph lints clean, credentials exist for roles Claude plays and a sandbox can
  be made for roles that run commands (unless a recording is replayed), the workspace is a
  directory, the graph's `requires:` hold (the inputs are checked by `start`);
- start: a git worktree on branch `orchestrator/THREAD-ID` when some role edits files or runs
  commands and the workspace is in a repository (unless in place or replaying), then the
  ThreadStarted event, and the thread's trust boundary found and recorded (tools/boundary.py);
- advance: the runner, with the worktree recreated if it was removed, the graph's Python code
  imported afresh and the boundary entered before any role runs, the work committed on the
  thread's branch after every committed step (run/forking.py) and when the thread completes;
- fork: a new thread from another's log up to a step (run/forking.py, core/fork.py);
- resume, answer, cancel: requests judged by the moderator (a refusal raises `Refused`);
- prune: the worktrees of threads that ended, and their merged branches;
- read: a thread's summary row, its events and their typed view, and what a waiting thread
  asks; each read has an awaitable twin (`athread`, `aevents`, ...), as the contract asks;
- close: the store is closed (its writer thread ends); a session shares nothing else.

Notes for the person (a dirty checkout, a recreated worktree, a changed graph) go to `notify`;
the session prints nothing itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..actors.recording import Recording, ReplayActor, recording_from_events
from ..core import engine
from ..core.events import Event, ThreadStarted, ThreadStatus
from ..core.outcomes import Answered, CancelRequested, Outcome, ResumeRequested
from ..core.state import ThreadState
from ..core.steps import ThreadView, thread_view
from ..core.subgraph import children_in_flight
from ..core.titles import ThreadQuery, check_labels, make_title
from ..definition.graphdiff import graph_changes
from ..definition.loader import load_graph
from ..definition.models import Graph
from ..definition.problems import GraphError, has_errors
from ..definition.pyref import preload
from ..linter import lint
from ..store.base import (
    EventStore,
    StoredEvent,
    StoreError,
    ThreadBusy,
    ThreadNotFound,
    ThreadRow,
    default_store_dir,
)
from ..store.ids import new_thread_id
from ..store.sqlite import SqliteStore
from ..tools import boundary as trust
from ..vcs.worktrees import (
    Worktree,
    WorktreeError,
    WorktreeTampered,
    commit_message,
    create_worktree,
    discard_worktree,
    ensure_worktree,
    find_repo,
    finish_worktree,
    load_worktree,
    needs_isolation,
    uncommitted_changes,
)
from .errors import SessionError as SessionError
from .forking import Forking, step_commits
from .options import ActorFor, RunOptions, ThreadResult
from .preflight import check_credentials, check_inputs, check_prices, found_models, preflight
from .prune import Pruned, prune_worktrees
from .routing import ChildRouting
from .runner import advance
from .telemetry import traced
from .twins import AwaitableTwins
from .waiting import Question, answer_errors, question_for, question_of

Notify = Callable[[str], None]


@dataclass(frozen=True)
class Started:
    thread_id: str
    workspace: Path  # where the roles work: the worktree, or the folder itself
    worktree: Worktree | None
    first: StoredEvent | None = None  # the thread's first event, ThreadStarted, as stored


def open_store(
    store: EventStore | str | os.PathLike[str] | None, *, readonly: bool = False
) -> EventStore:
    """A store object as it is, else the SQLite store in that folder (default: docs/threads.md).

    `readonly` opens it for reading only: nothing is created, and a store on a read-only file
    system can still be listed, shown and exported.
    """
    if store is not None and not isinstance(store, (str, os.PathLike)):
        return store
    directory = default_store_dir(store)
    try:
        return SqliteStore(directory, readonly=readonly)
    except StoreError as exc:
        raise SessionError(exc.message, usage=False) from None


class Session(AwaitableTwins, ChildRouting, Forking):
    def __init__(self, store: EventStore, *, notify: Notify | None = None):
        self.store = store
        self.notify: Notify = notify or (lambda text: None)
        self._boundaries: dict[str, trust.Boundary] = {}  # found at start, by thread

    blocking = False  # reads are local: a server may make them on its loop

    def close(self) -> None:
        """Close the store (a SQLite store's writer thread ends; what is queued is written)."""
        self.store.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def directory(self) -> Path | None:
        found = getattr(self.store, "directory", None)
        return Path(found) if found is not None else None

    # ------------------------------------------------------------------ starting

    def preflight(
        self,
        graph: Graph,
        *,
        workspace: str | os.PathLike[str] | None,
        replay: bool,
        model: str | None = None,
    ) -> Path:
        """The checks before anything is created (run/preflight.py); returns the workspace
        folder, resolved. `model` is the model every role is played on (`--model`), if forced."""
        return preflight(graph, workspace=workspace, replay=replay, model=model, notify=self.notify)

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
    ) -> Started:
        """Create the thread (and its worktree): inputs are checked before anything exists.

        `options` matter where starting a thread also sets it running (on Temporal); a local
        thread runs with the options `advance` is given."""
        check_inputs(graph, inputs)
        thread_id = thread_id or new_thread_id()
        tree = None if in_place or replay else self._isolate(graph, folder, thread_id)
        workspace = tree.workspace if tree is not None else folder
        started = ThreadStarted(
            thread_id=thread_id,
            graph=graph.name,
            graph_hash=graph.hash,
            inputs=dict(inputs),
            workspace=str(workspace),
            models_file=None if replay else found_models(),
            title=make_title(title, inputs),
            labels=check_labels(labels),
        )
        state = engine.apply(ThreadState(), started)
        try:
            self.store.create(
                started,
                state.summary(),
                graph_path=str(graph.path or ""),
                snapshot=graph.model_dump(mode="json"),
            )
        except StoreError:
            if tree is not None:  # no thread will ever use it
                discard_worktree(tree)
            raise
        # Before any role runs: the git folders, asked of git now, recorded for the resumes.
        # The graph's files and the store are added by `advance` (trust.of_thread), as they
        # are then: finding them here too cost a third of a thread's start, for nothing.
        fixed = trust.git_at_start(workspace, tree)
        self._boundaries[thread_id] = fixed
        trust.record(fixed, self.directory, thread_id)
        return Started(thread_id, workspace, tree, self.store.events(thread_id)[0])

    def _isolate(self, graph: Graph, folder: Path, thread_id: str) -> Worktree | None:
        """The thread's git worktree, or None to work in place (nothing edits, or no repo)."""
        store_dir = self.directory
        if store_dir is None or not needs_isolation(graph):
            return None
        repo = find_repo(folder)
        if repo is None:
            return None
        try:
            dirty = uncommitted_changes(repo, ignore=store_dir)
            tree = create_worktree(folder, store_dir, thread_id)
        except WorktreeError as exc:
            raise SessionError(
                f"cannot give the thread its own git worktree: {exc}", usage=False
            ) from None
        if dirty:
            n = len(dirty)
            self.notify(
                f"{repo} has uncommitted changes ({n} path{'s' if n != 1 else ''}); the thread "
                f"starts from the last commit ({tree.base[:10]}) and does not see them. Commit "
                "them first, or pass --in-place to work in the checkout itself."
            )
        return tree

    # ------------------------------------------------------------------ advancing

    def worktree(self, thread_id: str) -> Worktree | None:
        return load_worktree(self.directory, thread_id)

    async def advance(
        self,
        graph: Graph,
        thread_id: str,
        *,
        options: RunOptions | None = None,
        actor_for: ActorFor | None = None,
        replay: Recording | None = None,
        first: Outcome | None = None,
    ) -> ThreadResult:
        """Advance the thread as far as it goes; commit its work on its branch if it completes.

        An answer for a person who waits inside a subgraph's child (`allowed()` lists it through
        the parent's step) is recorded in that child, and the thread resumed, which continues
        the child (rules S5, S3)."""
        if isinstance(first, Answered):
            leaf_graph, leaf = self.waiting_leaf(graph, thread_id, first.step)
            if leaf != self.thread(thread_id).id:
                self._record(leaf_graph, leaf, Answered(first.text))
                first = ResumeRequested()
        if first is not None:  # a resume or an answer the thread would refuse says so first
            engine.judge(graph, self.state(thread_id), first)  # pure: raises Refused
        if replay is None and actor_for is None:  # the roles' own actors: models are called
            check_credentials(graph)
            check_prices(graph, options.model if options is not None else None)
        tree = self.worktree(thread_id)
        log: list[Event] | None = None  # the thread's events, once read
        if tree is not None:
            try:
                if ensure_worktree(tree):
                    self.notify(f"recreated the thread's worktree {tree.path}")
                    tree = self.worktree(thread_id) or tree
            except WorktreeError as exc:
                raise SessionError(
                    f"the thread's worktree cannot be used: {exc}", usage=False
                ) from None
        if replay is not None:
            pace = options.replay_pace if options is not None else 0.0
            replay_actor = ReplayActor(replay, pace=pace)
            actor_for = lambda name, role: replay_actor  # noqa: E731
        else:  # a fork made with --reuse takes the original's replies (run/reuse.py)
            # The log is read once here, for this and for the workspace below (each read
            # decoded every event of the thread again).
            log = [s.event for s in self.store.events(thread_id)]
            actor_for = self.reusing(thread_id, actor_for, options, log)
        options = step_commits(tree, thread_id, options, self.notify)  # a commit a step
        finished: dict[str, dict[str, Any]] = {}

        def commit(result: ThreadResult) -> None:  # runs while the lease is held
            if tree is not None:
                finished["worktree"] = self._finish(graph, result, tree)

        if replay is None:  # the graph's Python code as it is now, before any role runs
            preload(trust.python_refs(graph))
        state = engine.fold(log) if log is not None else self.state(thread_id)
        root, known = Path(state.workspace), self._boundaries.get(thread_id)
        fixed = trust.of_thread(root, thread_id, graph, self.directory, tree, known)
        with trust.entered(fixed), traced(graph, thread_id, options) as options:  # and OTel
            result = await advance(
                graph,
                self.store,
                thread_id,
                actor_for=actor_for,
                options=options,
                first=first,
                finish=commit,
            )
        if tree is not None:  # a thread ended by another process commits nothing: where it is
            result.worktree = finished.get("worktree") or self._finish(graph, result, tree)
        return result

    def _finish(self, graph: Graph, result: ThreadResult, tree: Worktree) -> dict[str, Any]:
        where = {"branch": tree.branch, "repo": tree.repo, "path": tree.path, "base": tree.base}
        if result.state != ThreadStatus.COMPLETED:
            return where
        state = engine.fold([s.event for s in self.store.events(result.thread_id)])
        text = commit_message(graph.name, result.thread_id, state.inputs, result.final or "")
        try:
            return finish_worktree(tree, text).to_dict()
        except WorktreeTampered as exc:  # nothing of it was committed, nor may git go there
            self.notify(f"the thread's work was not committed on {tree.branch}: {exc}")
            return where
        except WorktreeError as exc:
            self.notify(
                f"could not commit the thread's work on {tree.branch}: {exc}; "
                f"the work is in {tree.path}"
            )
            return where

    async def resume(
        self,
        graph: Graph,
        thread_id: str,
        *,
        message: str | None = None,
        options: RunOptions | None = None,
        actor_for: ActorFor | None = None,
    ) -> ThreadResult:
        first = ResumeRequested(message)
        return await self.advance(
            graph, thread_id, options=options, actor_for=actor_for, first=first
        )

    async def answer(
        self,
        graph: Graph,
        thread_id: str,
        text: str,
        *,
        step: int | None = None,
        options: RunOptions | None = None,
        actor_for: ActorFor | None = None,
    ) -> ThreadResult:
        """Answer the person's step the thread waits for (`step`: which one, when several
        branches wait); when a subgraph's child is what waits, `advance` takes the answer
        there (rule S5) and continues the parent."""
        return await self.advance(
            graph, thread_id, options=options, actor_for=actor_for, first=Answered(text, step)
        )

    def _record(self, graph: Graph | None, thread_id: str, outcome: Outcome) -> None:
        """Judge an outcome and append its events, without advancing the thread."""
        for _ in range(5):  # another process may append between our read and our write
            state = self.state(thread_id)
            try:
                for event in engine.judge(graph, state, outcome):
                    engine.apply(state, event)
                    self.store.append(thread_id, state.events, event, state.summary())
            except ThreadBusy:
                continue
            return
        raise SessionError(f"thread {thread_id} keeps changing; try again", usage=False)

    def cancel(self, thread_id: str, reason: str = "cancelled by the user") -> ThreadRow:
        """Cancel a thread, also one another process is running (it stops its step)."""
        row = self.thread(thread_id)
        state = self.state(row.id)
        self._record(None, row.id, CancelRequested(reason))
        for child_thread in children_in_flight(state):  # S6: cancelled with it
            try:
                child = self.store.thread(child_thread)
            except ThreadNotFound:
                continue
            if child.id == child_thread and not child.state.ended:
                self.cancel(child.id, reason)
        return self.store.thread(row.id)

    def prune(self, *, dry_run: bool = False, branches: bool = False) -> list[Pruned]:
        """Remove the git worktrees of ended threads (and with `branches`, their merged
        branches); never work not committed or commits on no other branch (run/prune.py)."""
        if self.directory is None:
            return []
        return prune_worktrees(self.directory, self.store, dry_run=dry_run, branches=branches)

    # ------------------------------------------------------------------ reading

    def thread(self, thread_id: str) -> ThreadRow:
        """A thread's summary row by id, or by a unique prefix or suffix of its id."""
        try:
            return self.store.thread(thread_id)
        except ThreadNotFound:
            where = self.directory or "the store"
            raise ThreadNotFound(
                thread_id,
                f"no thread '{thread_id}' in {where}",
                hint="see `orchestrator threads list`",
            ) from None

    def threads(
        self, state: str | None = None, query: ThreadQuery | None = None
    ) -> list[ThreadRow]:
        return self.store.threads(state, query)

    def events(self, thread_id: str, after: int = 0) -> list[StoredEvent]:
        """The thread's events, or those with a sequence number above `after` (a watcher's
        next read: the web page's live updates)."""
        return self.store.events(thread_id, after)

    def state(self, thread_id: str) -> ThreadState:
        return engine.fold([s.event for s in self.store.events(thread_id)])

    def question(
        self, thread_id: str, graph: Graph | None = None, step: int | None = None
    ) -> Question | None:
        """What a waiting thread asks at `step` (None: the first step that may be answered),
        and the answers its role takes; None if nothing there may be answered (`allowed`).

        The role is the one `answer` would use: of `graph`, else of the thread's graph file,
        else of the graph as it was when the thread started.
        """
        row = self.thread(thread_id)
        if self.state(row.id).status != ThreadStatus.WAITING:
            return None
        graph = graph or self._graph_quietly(row)
        if graph is None:  # no graph to read the role from: the question, without its forms
            return question_of(self.state(row.id), {})
        asked = question_for(self.allowed(row.id, graph), step)
        if asked is None and step is None:  # a role the graph lost: the question, no forms
            lost = question_of(self.state(row.id), graph.roles)
            return lost if lost is not None and lost.role is None else None
        return asked

    def check_answer(
        self, graph: Graph, thread_id: str, text: str, step: int | None = None
    ) -> tuple[str, ...]:
        """Why the moderator would refuse this answer (empty: it would take it); nothing is
        recorded. Raises Refused when the thread does not wait for an answer at all."""
        leaf_graph, leaf = self.waiting_leaf(graph, thread_id, step)
        return answer_errors(
            leaf_graph, self.state(leaf), text, step if leaf == thread_id else None
        )

    def graph_of(self, row: ThreadRow) -> Graph | None:
        """The thread's graph to show (its file, else as it was when the thread started), or
        None when neither loads; nothing is linted or noted, unlike `graph_for`."""
        return self._graph_quietly(row)

    def _graph_quietly(self, row: ThreadRow) -> Graph | None:
        try:
            return load_graph(row.graph_path or row.graph)
        except (GraphError, ValueError, OSError):
            pass
        try:  # the graph as it was when the thread started
            return Graph.model_validate(self.store.snapshot(row.id))
        except ValueError:
            return None

    def child_events(self, thread_id: str) -> list[StoredEvent] | None:
        """The log of a subgraph step's child thread (`PARENT.STEP`), or None if it has none."""
        try:
            row = self.store.thread(thread_id)
        except ThreadNotFound:
            return None
        return self.store.events(thread_id) if row.id == thread_id else None

    def recording(self, thread_id: str) -> Recording:
        """The thread's recording, with its subgraph children's steps inside."""
        return recording_from_events(
            [s.event for s in self.store.events(thread_id)],
            lambda child: [s.event for s in self.child_events(child) or []],
        )

    def view(self, thread_id: str) -> ThreadView:
        return thread_view([s.event for s in self.store.events(thread_id)])

    def graph_for(self, row: ThreadRow, graph_arg: str | None = None) -> Graph:
        """The thread's graph, loaded and linted, with what changed since it started noted."""
        path = graph_arg or row.graph_path or row.graph
        if not graph_arg and row.graph_path and not Path(row.graph_path).exists():
            raise SessionError(
                f"the graph file {row.graph_path} of thread {row.id} is gone; pass --graph PATH"
            )
        graph = load_graph(path)
        problems = lint(graph)
        if has_errors(problems):
            raise SessionError(
                "the graph has errors; fix them, then resume", usage=False, problems=problems
            )
        if graph.hash != row.graph_hash:
            changes = graph_changes(self.store.snapshot(row.id), graph.model_dump(mode="json"))
            self.notify(
                f"the graph changed since thread {row.id} started "
                f"({row.graph_hash[:15]}… → {graph.hash[:15]}…):\n"
                + "\n".join(f"  - {c}" for c in changes or ["(only formatting or library roles)"])
            )
        return graph
