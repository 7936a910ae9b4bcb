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
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.exceptions import ApplicationErrorCategory as Category

from ..actors.recording import ReplayActor, parse_recording
from ..run.actors import default_actor_for
from ..run.options import RunOptions
from ..run.step import perform_step
from .codec import outcome_to_dict, plan_from_dict, role_from_dump
from .workflow import ACTIVITY_NAME, WORKER_SHUTDOWN, StepInput

HEARTBEAT_EVERY = 1.0  # seconds; the SDK sends at most one per 80% of the heartbeat timeout
STEP_STOPPED = "StepStopped"  # the error type of a step stopped by its thread's cancel
BENIGN = Category.BENIGN
log = logging.getLogger("orchestrator.temporal.worker")


class StepActivities:
    """The activities of one worker, sharing its actors (one API client and connection pool)."""

    def __init__(self, options: RunOptions | None = None):
        self.actor_for = default_actor_for(options or RunOptions(interactive=False))

    @activity.defn(name=ACTIVITY_NAME)
    async def run_step(self, params: StepInput) -> dict[str, Any]:
        role = role_from_dump(params.role_name, params.role)
        plan = plan_from_dict(params.plan)
        if params.replay is not None:  # a replay: the recorded replies, no tool, no file
            actor: Any = ReplayActor(parse_recording(params.replay), pace=params.pace)
        else:
            actor = self.actor_for(params.role_name, role)
        root = Path(params.workspace).resolve()
        task = asyncio.ensure_future(perform_step(plan, role, root, actor))
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=HEARTBEAT_EVERY)
                if done:
                    return outcome_to_dict(task.result())
                activity.heartbeat(plan.step)
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
                plan.step,
                params.role_name,
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
