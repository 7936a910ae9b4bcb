"""A step's plan: what its actor is asked, made from the moderator's state. Pure.

    plan_step(graph, state, command, memory, model) -> StepPlan
        The prompt, the inputs, the history since the role last spoke, its own earlier visits
        (`memory: session`, kept within its budget: memory.py), the rejected attempts being
        repaired and the model settings. A function of the graph, the state and the session
        memory folded beside it, so a Temporal workflow computes it as well as the local runner;
        the I/O of the step (its folder, the actor's call) is `step.perform_step`'s, which the
        workflow never imports.

A plan holds JSON values and small frozen records only, so it travels to a worker as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core import context
from ..core.commands import RunStep
from ..core.records import Attempt, HistoryItem, Visit
from ..core.state import ThreadState
from ..definition.models import Graph, Role
from .memory import SessionMemory, dropped_note


@dataclass(frozen=True)
class ModelSettings:
    model: str | None  # None: the models file's default (or ORCHESTRATOR_MODEL)
    max_tokens: int | None
    temperature: float | None


def model_settings(graph: Graph, role: Role, override: str | None = None) -> ModelSettings:
    """--model, then the role's setting, then the graph's `defaults` (docs/models.md)."""
    return ModelSettings(
        model=override or role.model or graph.defaults.model,
        max_tokens=role.max_tokens or graph.defaults.max_tokens,
        temperature=role.temperature
        if role.temperature is not None
        else graph.defaults.temperature,
    )


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
