"""Who plays each role, and with which model settings: decided once, here."""

from __future__ import annotations

from typing import Any

from ..actors.command import CommandProcessActor
from ..actors.human import HumanActor
from ..actors.python import PythonActor
from ..definition.models import CommandActor, Role
from .options import ActorFor, RunOptions
from .plan import ModelSettings as ModelSettings
from .plan import model_settings as model_settings


def default_actor_for(options: RunOptions) -> ActorFor:
    """Who plays each role when nothing else is said: the role's own `actor:` setting."""
    shared: dict[str, Any] = {}

    def actor_for(name: str, role: Role) -> Any:
        if isinstance(role.actor, CommandActor):
            return CommandProcessActor(role.actor.command, timeout=role.actor.timeout)
        if role.python_ref is not None:
            return PythonActor(role.python_ref, role.folder)
        if role.is_human:
            return HumanActor(interactive=options.interactive)
        if role.is_claude_code:
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
