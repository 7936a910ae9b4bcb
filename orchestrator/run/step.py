"""One step of a thread, split where the moderator ends and the world begins.

    plan_step(graph, state, command, memory, model) -> StepPlan
        What the actor is asked (plan.py): pure, so a Temporal workflow computes it as well as
        the local runner, without importing this module.
    perform_step(plan, role, root, actor) -> Outcome
        The rest, all I/O: the step's folder (made when the edge names a location), the actor's
        call, and its reply or its failure as an outcome for `judge`. The local runner calls it
        in-process; the Temporal activity calls it on a worker.

A plan holds JSON values and small frozen records only, so it travels to a worker as it is.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..actors.base import ActorError, ActRequest, HumanNeeded
from ..actors.progress import OnProgress
from ..core.events import SuspendKind
from ..core.outcomes import ActorFailed, NeedsPerson, Outcome, PreconditionFailed, Replied
from ..definition.models import Role
from ..tools.boundary import Boundary
from ..tools.boundary import current as current_boundary
from ..tools.scrub import Secrets
from .plan import StepPlan as StepPlan
from .plan import plan_step as plan_step
from .preconditions import afailing
from .warmup import sdk_imported


async def perform_step(
    plan: StepPlan,
    role: Role,
    root: Path,
    actor: Any,
    progress: OnProgress | None = None,
    boundary: Boundary | None = None,
) -> Outcome:
    """Ask the actor; its reply, or why there is none, as an outcome. `progress` is told what
    happens during the step (actors that can tell: tokens, tool calls), for a display.
    `boundary` is the thread's (tools/boundary.py), by default the one the session entered for
    the thread it advances (a bare one on a Temporal worker).

    `root` is the thread's workspace, resolved. A cancellation (Ctrl-C, a cancel from elsewhere,
    a Temporal activity cancelled) goes through to the caller, which knows what it means.
    """
    outcome = await _perform(plan, role, root, actor, progress, boundary)
    if isinstance(outcome, ActorFailed):
        # The one path from an actor's failure to a suspend reason (stored, shown, served):
        # redacted of credentials whatever the actor said (a base URL with a password, a key
        # quoted by a crashing actor).
        return replace(outcome, message=Secrets.from_environment().redact(outcome.message))
    return outcome


async def _perform(
    plan: StepPlan,
    role: Role,
    root: Path,
    actor: Any,
    progress: OnProgress | None,
    boundary: Boundary | None,
) -> Outcome:
    try:
        workspace = step_workspace(root, plan.location)
    except OSError as exc:
        return ActorFailed(
            plan.step,
            f"cannot make the step's folder '{plan.location}': {exc.strerror or exc}",
            SuspendKind.GRAPH,
        )
    if workspace is None:
        return ActorFailed(
            plan.step, f"location '{plan.location}' is outside the workspace", SuspendKind.GRAPH
        )
    failures = await afailing(role.requires, workspace, role.env)
    if failures:
        return PreconditionFailed(plan.step, tuple(failures))
    if getattr(actor, "kind", "") == "anthropic":
        await sdk_imported()  # the rest of a background import is start-up, not this step
    started = time.monotonic()
    try:
        fixed = boundary or current_boundary(root)
        reply = await actor.play(act_request(plan, role, workspace, progress, fixed))
    except HumanNeeded:
        return NeedsPerson(plan.step)
    except ActorError as exc:
        usage = exc.usage.to_dict()
        return ActorFailed(
            plan.step,
            exc.message,
            exc.kind,
            usage=usage if any(usage.values()) else {},
            cost_usd=exc.cost_usd,
            detail=exc.detail,
        )
    except Exception as exc:  # a bug in an actor: the thread suspends, it does not crash
        return ActorFailed(
            plan.step,
            f"the {getattr(actor, 'kind', 'actor')} actor failed: {type(exc).__name__}: {exc}",
            SuspendKind.ACTOR,
        )
    return Replied(
        plan.step,
        reply.text,
        message=reply.message,
        usage=reply.usage.to_dict(),
        cost_usd=reply.cost_usd,
        model=reply.model,
        tool_calls=reply.tool_calls,
        duration_s=round(time.monotonic() - started, 3),
        actor=getattr(actor, "kind", type(actor).__name__),
    )


def act_request(
    plan: StepPlan,
    role: Role,
    workspace: Path,
    progress: OnProgress | None = None,
    boundary: Boundary | None = None,
) -> ActRequest:
    """The actor's request: the plan, with the role object, the step's folder and the
    thread's boundary, which only the process that performs the step has."""
    return ActRequest(
        thread_id=plan.thread_id,
        step=plan.step,
        role_name=plan.role_name,
        role=role,
        prompt=plan.prompt,
        inputs=dict(plan.inputs),
        history=plan.history,
        previous_visits=plan.previous_visits,
        attempts=plan.attempts,
        workspace=workspace,
        model=plan.model,
        max_tokens=plan.max_tokens,
        temperature=plan.temperature,
        graph_name=plan.graph_name,
        progress=progress,
        boundary=boundary,
    )


def step_workspace(root: Path, location: str | None) -> Path | None:
    """The step's folder: the workspace, or the edge's location inside it (made if missing)."""
    if not location:
        return root
    target = (root / location).resolve()
    if target != root and root not in target.parents:
        return None
    target.mkdir(parents=True, exist_ok=True)
    return target
