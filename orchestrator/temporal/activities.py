"""The `run_step` activity: a role step performed on a worker.

It does what the local runner does for a RunStep command, with the same function
(`run/step.perform_step`): the role's actor (chosen as locally: `run/actors.default_actor_for`,
with no terminal, so a human role's step waits for `threads answer`) is called with the plan
the workflow made, and its reply or its failure comes back as an outcome. While the actor works
the activity heartbeats, so Temporal learns within the heartbeat timeout that a worker died, and
the workflow runs the step again elsewhere. A cancel from the workflow (the thread was cancelled
or interrupted) cancels the actor's call, which stops its process, and the worker logs one
line, not a traceback (an ordinary event, not an error); a worker shutting down
hands the step back to the workflow, which runs it again on another worker.

A thread on a git workspace carries its branch (`vcs/shared.SharedBranch`): the step then runs
in this worker's worktree of the branch, in its cache (`--cache`, $ORCHESTRATOR_WORKER_CACHE),
checked out at the last committed step's files; after a reply its files are committed as the
step ("step N: ROLE -> STATUS") and pushed to the thread's repository before the outcome goes
back, so whichever worker runs the next step starts from them. A worktree that cannot be made
or pushed suspends the thread, saying why (kind `actor`).

A fork made with `--reuse` sends, for a step equal to the original's, the original's kept reply
(`StepInput.reuse`, reuse.py): played by `KeptReply` instead of the role's actor, so no actor
is called, and the step is committed on a shared branch like any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.exceptions import ApplicationErrorCategory as Category

from ..actors.base import ActReply, ActRequest
from ..actors.recording import ReplayActor, parse_recording
from ..core.events import SuspendKind
from ..core.outcomes import ActorFailed, Outcome, Replied
from ..definition.models import Role
from ..extract.parse import parse_reply
from ..run.actors import default_actor_for
from ..run.options import RunOptions
from ..run.step import StepPlan, perform_step
from ..vcs.git_safe import WorktreeError
from ..vcs.shared import SharedBranch, checkout_step, commit_step, step_message
from .codec import outcome_to_dict, plan_from_dict, role_from_dump
from .reuse import REUSED
from .workflow import ACTIVITY_NAME, WORKER_SHUTDOWN, StepInput

HEARTBEAT_EVERY = 1.0  # seconds; the SDK sends at most one per 80% of the heartbeat timeout
STEP_STOPPED = "StepStopped"  # the error type of a step stopped by its thread's cancel
BENIGN = Category.BENIGN
CACHE_ENV = "ORCHESTRATOR_WORKER_CACHE"  # the worker's cache folder (its worktrees), or --cache
T = TypeVar("T")
log = logging.getLogger("orchestrator.temporal.worker")


class StepActivities:
    """The activities of one worker, sharing its actors (one API client and connection pool)."""

    def __init__(self, options: RunOptions | None = None, cache: Path | None = None):
        self.actor_for = default_actor_for(options or RunOptions(interactive=False))
        self.cache = cache or default_cache()
        self.busy: set[str] = set()  # the worktree folders steps are running in
        self.git_lock = threading.Lock()

    @activity.defn(name=ACTIVITY_NAME)
    async def run_step(self, params: StepInput) -> dict[str, Any]:
        name = params.role_name
        role = role_from_dump(name, params.role)
        plan = plan_from_dict(params.plan)
        if params.reuse is not None:  # a fork's step equal to the original's: its kept reply
            actor: Any = KeptReply(params.reuse)
        elif params.replay is not None:  # a replay: the recorded replies, no tool, no file
            actor = ReplayActor(parse_recording(params.replay), pace=params.pace)
        else:
            actor = self.actor_for(name, role)
        if params.worktree is None:
            root = Path(params.workspace).resolve()
            outcome = await self._heartbeating(
                perform_step(plan, role, root, actor), plan.step, name
            )
            return outcome_to_dict(outcome)
        thread_id = activity.info().workflow_id or ""
        # One worktree per thread, reused step after step; a parallel branch of the thread
        # running beside another step on this worker gets one of its own.
        folder = thread_id if thread_id not in self.busy else f"{thread_id}.{plan.step}"
        self.busy.add(folder)
        try:
            shared = SharedBranch.from_dict(params.worktree)
            return outcome_to_dict(await self._on_branch(shared, plan, role, actor, folder))
        except WorktreeError as exc:
            failed = ActorFailed(
                plan.step, f"the thread's worktree on this worker: {exc}", SuspendKind.ACTOR
            )
            return outcome_to_dict(failed)
        finally:
            self.busy.discard(folder)

    async def _on_branch(
        self, shared: SharedBranch, plan: StepPlan, role: Role, actor: Any, folder: str
    ) -> Outcome:
        """The step in this worker's worktree of the thread's branch, committed and pushed."""
        name, thread_id = plan.role_name, plan.thread_id
        checkout = self._git(
            checkout_step, self.cache, shared, thread_id, plan.step, bool(plan.attempts), folder
        )
        tree, lease = await self._heartbeating(checkout, plan.step, name)
        root = tree.workspace.resolve()
        outcome = await self._heartbeating(perform_step(plan, role, root, actor), plan.step, name)
        if isinstance(outcome, Replied):
            message = step_message(plan.step, name, _status(outcome), thread_id)
            commit = self._git(commit_step, tree, shared, message, lease)
            await self._heartbeating(commit, plan.step, name)
        return outcome

    async def _git(self, function: Callable[..., T], *args: Any) -> T:
        """`function` in a thread, one at a time on this worker: steps running at once share
        the cache's mirror, whose refs git locks."""

        def locked() -> T:
            with self.git_lock:
                return function(*args)

        return await asyncio.to_thread(locked)

    async def _heartbeating(self, work: Awaitable[T], step: int, role: str) -> T:
        """Await `work`, heartbeating; a cancel stops it (see the module's docstring)."""
        task = asyncio.ensure_future(work)
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=HEARTBEAT_EVERY)
                if done:
                    return task.result()
                activity.heartbeat(step)
        except asyncio.CancelledError:
            if activity.is_worker_shutdown():  # not the thread's doing: run it elsewhere
                raise ApplicationError(
                    "the worker shut down during the step", type=WORKER_SHUTDOWN
                ) from None
            # The thread was cancelled or interrupted (or its workflow ended): nothing went
            # wrong here, so one line, not the SDK's traceback of a failed activity (a benign
            # error is logged at debug level; the workflow no longer waits for this result).
            info = activity.info()
            log.warning(
                "step %s (%s) of thread %s stopped: its thread was cancelled, interrupted or ended",
                step,
                role,
                info.workflow_id,
            )
            raise ApplicationError(
                "the step was stopped", type=STEP_STOPPED, category=BENIGN
            ) from None
        finally:
            if not task.done():  # cancelled: the thread was cancelled or interrupted
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task


class KeptReply:
    """The actor of a reused step (reuse.py): the original's reply, no call, nothing spent. It
    goes through `perform_step` like any actor, so a thread on a shared branch commits the step
    ("step N: ROLE -> STATUS") as locally: replies are reused, not files."""

    kind = REUSED

    def __init__(self, kept: dict[str, Any]):
        self.kept = kept

    async def play(self, request: ActRequest) -> ActReply:
        return ActReply(str(self.kept["reply"]), message=str(self.kept.get("message") or ""))


def default_cache() -> Path:
    """Where a worker keeps its worktrees: $ORCHESTRATOR_WORKER_CACHE, else the user's cache."""
    folder = os.environ.get(CACHE_ENV)
    if folder:
        return Path(folder)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "orchestrator" / "worker"


def _status(outcome: Replied) -> str:
    """The reply's $status for the step's commit message ("?" when it has none: the workflow
    will ask for a repair, whose commit replaces this one)."""
    frontmatter, _ = parse_reply(outcome.text)
    status = (frontmatter or {}).get("$status")
    return str(status) if isinstance(status, str) and status else "?"
