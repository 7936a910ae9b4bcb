"""Pass: every model a role would run on resolves (docs/format.md section 19, docs/models.md).

- `unknown-provider` (an error): a role's `model:` (or the graph's `defaults.model`, or an
  entry of a role's `fallback:`) is `PROVIDER:MODEL` with a provider that is neither built in
  nor declared in the models file in effect: `run` would stop at the role's first step.
- `no-tool-calls` (an error): a role with tools runs on a model whose provider the models file
  declares `tools: false`; its steps would stop with that message.
- `unknown-model` (a warning, as for an agent file's model): the graph sets `max_cost_usd` and
  a role would run on a model without a price, so its steps would count $0 and the limit could
  never trip; `run` refuses such a graph before it starts (run/preflight.py).

Only roles a model plays are checked (not people, processes, Python or subgraph roles). A models
file that cannot be read is not this pass's to report: `run` and `orchestrator models` name it.
"""

from __future__ import annotations

from ..definition.model_config import (
    ModelConfigError,
    load_config,
    model_ref,
    price_known,
    provider,
)
from ..definition.providers import ModelRef
from .view import GraphView


def check_models(view: GraphView) -> None:
    try:
        load_config()
    except ModelConfigError:
        return
    graph = view.graph
    limit = graph.limits.max_cost_usd
    # Most roles share a model: each setting is resolved once (each resolution reads the models
    # file in effect, which is the same for the whole graph).
    refs: dict[str | None, ModelRef | ModelConfigError] = {}
    for name, role in graph.roles.items():
        if not role.is_model:  # a subgraph role, a person, a command, Python, Claude Code
            continue
        if role.model:
            where: tuple[str | int, ...] = ("roles", name, "model")
        elif graph.defaults.model:
            where = ("defaults", "model")
        else:
            where = ("roles", name)
        settings = [(role.model or graph.defaults.model, where)]
        settings += [
            (model, ("roles", name, "fallback", i)) for i, model in enumerate(role.fallback)
        ]
        for setting, path in settings:
            if setting not in refs:
                try:
                    refs[setting] = model_ref(setting)
                except ModelConfigError as exc:
                    refs[setting] = exc
            ref = refs[setting]
            if isinstance(ref, ModelConfigError):
                view.report(
                    view.at(*path),
                    "unknown-provider",
                    f"role '{name}': {ref}",
                    "run `orchestrator models` to see the providers in effect",
                )
                continue
            if role.tools and not provider(ref.provider).tools:
                view.report(
                    view.at(*path),
                    "no-tool-calls",
                    f"role '{name}' has tools, but the model '{ref.ref}' takes no tool calls (the "
                    f"models file says `tools: false` for provider '{ref.provider}')",
                    "choose a model that calls tools for this role, or take its tools away",
                )
            if limit is not None and not price_known(ref.ref):
                view.report(
                    view.at(*path),
                    "unknown-model",
                    f"role '{name}': the model '{ref.ref}' has no price, so with max_cost_usd "
                    f"({limit:g}) its steps would count $0 and the limit could never be reached",
                    "set its price under `prices:` in the models file (docs/models.md); `run` "
                    "refuses the graph until then",
                )
