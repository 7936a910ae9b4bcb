"""Who plays each role, and with which model settings: decided once, here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..actors.command import CommandProcessActor
from ..actors.human import HumanActor
from ..actors.python import PythonActor
from ..definition.models import CommandActor, Graph, Role
from ..definition.models import PythonActor as PythonSpec
from .options import ActorFor, RunOptions


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


def default_actor_for(options: RunOptions) -> ActorFor:
    """Who plays each role when nothing else is said: the role's own `actor:` setting."""
    shared: dict[str, Any] = {}

    def actor_for(name: str, role: Role) -> Any:
        if isinstance(role.actor, CommandActor):
            return CommandProcessActor(role.actor.command, timeout=role.actor.timeout)
        if isinstance(role.actor, PythonSpec):
            return PythonActor(role.actor.python, role.folder)
        if role.actor == "human":
            return HumanActor(interactive=options.interactive)
        if role.actor == "claude-code":
            # Imported on first use: only graphs with a Claude Code role need it.
            from ..actors.claude_code import ClaudeCodeActor

            return ClaudeCodeActor()
        if "model" not in shared:
            # Imported on first use: replays, simulations and graphs of people and processes
            # never need a model. One for every role a model plays: it picks the actor of each
            # step's provider (Anthropic, Bedrock, Vertex, OpenAI-style) and its fallbacks.
            from ..actors.routing import ModelActor

            shared["model"] = ModelActor(max_retries=options.max_retries, timeout=options.timeout)
        return shared["model"]

    return actor_for
