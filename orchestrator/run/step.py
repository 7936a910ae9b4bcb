"""One step of a thread, split where the moderator ends and the world begins.

    plan_step(graph, state, command, memory, model) -> StepPlan
        What the actor is asked: the prompt, the inputs, the history since the role last spoke,
        its own earlier visits (`memory: session`, kept within its budget: memory.py), the
        rejected attempts being repaired and the model settings. Pure: a function of the graph,
        the state and the session memory folded beside it, so a Temporal workflow can compute
        it as well as the local runner.
    perform_step(plan, role, root, actor) -> Outcome
        The rest, all I/O: the step's folder (made when the edge names a location), the actor's
        call, and its reply or its failure as an outcome for `judge`. The local runner calls it
        in-process; the Temporal activity calls it on a worker.

A plan holds JSON values and small frozen records only, so it travels to a worker as it is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..actors.base import ActorError, ActRequest, Attempt, HistoryItem, HumanNeeded, Visit
from ..actors.progress import OnProgress
from ..core import context
from ..core.commands import RunStep
from ..core.events import SuspendKind
from ..core.outcomes import ActorFailed, NeedsPerson, Outcome, PreconditionFailed, Replied
from ..core.state import ThreadState
from ..definition.models import Graph, Role
from ..tools.boundary import Boundary
from ..tools.boundary import current as current_boundary
from ..tools.scrub import Secrets
from .actors import model_settings
from .memory import SessionMemory, dropped_note
from .preconditions import afailing
from .warmup import sdk_imported


@dataclass(frozen=True)
class StepPlan:
    """Everything an actor's request holds except the role object and the step's folder."""

    thread_id: str
    step: int
    role_name: str
    prompt: str
    location: str | None = None
    inputs: dict[str, Any] = field(default_factory=dict)
    history: tuple[HistoryItem, ...] = ()
    previous_visits: tuple[Visit, ...] = ()
    attempts: tuple[Attempt, ...] = ()
    model: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    graph_name: str = ""

    def request(
        self,
        role: Role,
        workspace: Path,
        progress: OnProgress | None = None,
        boundary: Boundary | None = None,
    ) -> ActRequest:
        return ActRequest(
            thread_id=self.thread_id,
            step=self.step,
            role_name=self.role_name,
            role=role,
            prompt=self.prompt,
            inputs=dict(self.inputs),
            history=self.history,
            previous_visits=self.previous_visits,
            attempts=self.attempts,
            workspace=workspace,
            model=self.model,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            graph_name=self.graph_name,
            progress=progress,
            boundary=boundary,
        )


def plan_step(
    graph: Graph,
    state: ThreadState,
    command: RunStep,
    memory: SessionMemory,
    model: str | None = None,
) -> StepPlan:
    """What the actor of the step in flight is asked. Pure. `memory` holds the `memory: session`
    roles' visits, fed the same events as `state`; `model` is --model, if given."""
    role = graph.roles[command.role]  # decide() suspends a step whose role is gone
    settings = model_settings(graph, role, model)
    prompt = command.prompt
    visits: tuple[Visit, ...] = ()
    if role.memory == "session":
        visits, dropped = memory.window(command.role)
        if dropped and visits:
            first = visits[0]
            visits = (
                Visit(f"{dropped_note(dropped)}\n\n{first.message}", first.reply),
                *visits[1:],
            )
        elif dropped:
            prompt = f"{dropped_note(dropped)}\n\n{prompt}"
    return StepPlan(
        thread_id=state.thread_id,
        step=command.step,
        role_name=command.role,
        prompt=prompt,
        location=command.location,
        inputs=dict(state.inputs),
        history=tuple(
            HistoryItem(s.step, s.role, s.status, s.frontmatter, s.body)
            for s in context.history_for(state, command.role)
        ),
        previous_visits=visits,
        attempts=tuple(Attempt(reply, errors) for reply, errors in command.attempts),
        model=settings.model,
        max_tokens=settings.max_tokens,
        temperature=settings.temperature,
        graph_name=graph.name,
    )


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
        reply = await actor.play(plan.request(role, workspace, progress, fixed))
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


def step_workspace(root: Path, location: str | None) -> Path | None:
    """The step's folder: the workspace, or the edge's location inside it (made if missing)."""
    if not location:
        return root
    target = (root / location).resolve()
    if target != root and root not in target.parents:
        return None
    target.mkdir(parents=True, exist_ok=True)
    return target
