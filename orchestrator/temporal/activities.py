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
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.exceptions import ApplicationErrorCategory as Category

from ..core.events import SuspendKind
from ..core.outcomes import ActorFailed, Outcome, Replied
from ..extract.parse import parse_reply
from ..run.actors import default_actor_for
from ..run.options import RunOptions
from ..run.step import perform_step
from ..vcs.git_safe import WorktreeError
from ..vcs.shared import SharedBranch, checkout_step, commit_step, step_message
from ..vcs.worktrees import Worktree
from .codec import outcome_to_dict, plan_from_dict, role_from_dump
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

    @activity.defn(name=ACTIVITY_NAME)
    async def run_step(self, params: StepInput) -> dict[str, Any]:
        name = params.role_name
        role = role_from_dump(name, params.role)
        plan = plan_from_dict(params.plan)
        actor = self.actor_for(name, role)
        shared = SharedBranch.from_dict(params.worktree) if params.worktree else None
        thread_id = activity.info().workflow_id or ""
        tree: Worktree | None = None
        lease = ""
        if shared is not None:
            try:
                tree, lease = await self._heartbeating(
                    asyncio.to_thread(
                        checkout_step, self.cache, shared, thread_id, plan.step, bool(plan.attempts)
                    ),
                    plan.step,
                    name,
                )
            except WorktreeError as exc:
                return outcome_to_dict(_no_worktree(plan.step, exc))
        root = tree.workspace.resolve() if tree else Path(params.workspace).resolve()
        outcome = await self._heartbeating(perform_step(plan, role, root, actor), plan.step, name)
        if tree is not None and shared is not None and isinstance(outcome, Replied):
            message = step_message(plan.step, params.role_name, _status(outcome), thread_id)
            try:
                await self._heartbeating(
                    asyncio.to_thread(commit_step, tree, shared, message, lease), plan.step, name
                )
            except WorktreeError as exc:
                return outcome_to_dict(_no_worktree(plan.step, exc))
        return outcome_to_dict(outcome)

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


def _no_worktree(step: int, exc: WorktreeError) -> Outcome:
    return ActorFailed(step, f"the thread's worktree on this worker: {exc}", SuspendKind.ACTOR)
