"""Whether the providers a graph's roles run on have their credentials: asked before a thread
starts or resumes, so a missing key is one clear sentence (exit 2), not a suspended step.

Each role a model plays (also in child graphs) runs on its model's provider (docs/models.md):
Anthropic's needs ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN, `openai` needs OPENAI_API_KEY, an
`openai-compatible` provider the variable its `api_key_env` names, if any. Bedrock and Vertex
have many credential sources (profiles, instance roles, application default credentials) the
orchestrator cannot see from here: their SDKs report what is missing when the step runs.
"""

from __future__ import annotations

import os

from ..actors.anthropic import NO_KEY, env_credentials
from ..definition.model_config import ModelConfigError, model_ref, provider
from ..definition.models import Graph
from .actors import model_settings


def providers_used(
    graph: Graph, override: str | None = None, seen: set[str] | None = None
) -> set[str]:
    """The providers of the models the graph's roles (and its child graphs') run on."""
    seen = set() if seen is None else seen
    seen.add(graph.hash)
    used: set[str] = set()
    for name, role in graph.roles.items():
        if role.is_subgraph:
            child = graph.subgraph(name)
            if child is not None and child.hash not in seen:
                used |= providers_used(child, override, seen)
        elif role.is_model:
            try:
                used.add(model_ref(model_settings(graph, role, override).model).provider)
            except ModelConfigError:
                continue  # validate's unknown-provider; the step says so too
    return used


def missing_credentials(graph: Graph, override: str | None = None) -> str | None:
    """The sentence saying which provider's key is missing, or None."""
    for name in sorted(providers_used(graph, override)):
        spec = provider(name)
        if spec.kind == "anthropic" and not env_credentials():
            return NO_KEY
        variable = "OPENAI_API_KEY" if spec.kind == "openai" else spec.api_key_env
        if (
            spec.kind in ("openai", "openai-compatible")
            and variable
            and not os.environ.get(variable)
        ):
            return (
                f"No key for the model provider '{name}': set {variable}, or run with --replay "
                "RECORDING to replay a recorded thread without calling a model."
            )
    return None
