"""Checks before anything is created: the graph, the credentials, the thread's inputs, the
prices a cost limit needs, what a models file found in the current folder changes (announced
and recorded: docs/security.md), the workspace and the sandbox.

Inputs go to the models and the store, so one that holds a credential of the orchestrator's
environment (`tools/scrub.py`: a provider's key, a token, a URL's password, or a long piece of
one) is refused, naming the input and the variable, before anything is created: from the
command line, a batch file and the Python API alike.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..definition.model_config import (
    ModelConfigError,
    load_config,
    models_file_target,
    price_known,
    resolve_model,
)
from ..definition.models import Graph
from ..definition.problems import has_errors
from ..definition.validator import compile_validator
from ..errors import InputError as InputError  # with its family; imported from here too
from ..linter import lint
from ..tools.sandbox_needs import sandbox_problem, unsandboxed_roles
from ..tools.scrub import holder_of_secret
from .actors import model_settings
from .credentials import missing_credentials
from .errors import SessionError
from .preconditions import failing
from .warmup import import_sdk_in_background


def check_inputs(graph: Graph, inputs: dict[str, Any]) -> None:
    """Validate the thread's inputs against the graph's input schema. Raises InputError.

    An input the schema does not declare is refused (with the declared name it most looks
    like), unless the schema takes more: see `takes_input`.
    """
    schema = graph.input_schema
    declared = sorted(declared_inputs(schema))
    listed = ", ".join(declared) or "none"
    unknown = [key for key in inputs if not takes_input(schema, key)]
    if unknown:
        lines = []
        for key in unknown:
            close = difflib.get_close_matches(key, declared, n=1, cutoff=0.6)
            guess = f"; did you mean '{close[0]}'?" if close else ""
            lines.append(f"input '{key}' is not declared by graph '{graph.name}'{guess}")
        raise InputError("; ".join(lines) + f" (declared inputs: {listed})")
    refuse_secrets(inputs)
    # The contracts' validator: bounded patterns, no $ref fetched from outside the schema.
    errors = sorted(compile_validator(schema).iter_errors(inputs), key=lambda e: list(e.path))
    if errors:
        lines = []
        for err in errors:
            where = ".".join(str(p) for p in err.path)
            lines.append(f"input '{where}': {err.message}" if where else err.message)
        raise InputError("; ".join(lines) + f" (declared inputs: {listed})")


def refuse_secrets(inputs: dict[str, Any]) -> None:
    """Refuse an input that holds a credential of the orchestrator's environment (a provider's
    key, a token, a URL's password): inputs go to the models and the store. Raises InputError."""
    # The environment read once for all the strings: os.environ decodes every variable on
    # each pass, which cost more than the check itself.
    environ = dict(os.environ)
    for where, text in _strings(inputs, ""):
        holder = holder_of_secret(text, environ)
        if holder is not None:
            raise InputError(
                f"input '{where}' contains the value of {holder}; not sent to a model (remove "
                "it from the input)"
            )


def _strings(value: Any, where: str) -> list[tuple[str, str]]:
    """Every string inside an input's value (and its keys), with where it is."""
    if isinstance(value, str):
        return [(where, value)]
    found: list[tuple[str, str]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            inner = f"{where}.{key}" if where else str(key)
            found += [(inner, str(key)), *_strings(item, inner)]
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found += _strings(item, f"{where}.{i}")
    return found


def declared_inputs(schema: dict[str, Any]) -> set[str]:
    """The names under `properties`, also those of `allOf`/`anyOf`/`oneOf` parts."""
    names = set((schema.get("properties") or {}).keys())
    for key in ("allOf", "anyOf", "oneOf"):
        for part in schema.get(key) or []:
            if isinstance(part, dict):
                names |= declared_inputs(part)
    return names


def takes_input(schema: dict[str, Any], name: str) -> bool:
    """Whether an input of this name may be given (docs/authoring.md section 7).

    A declared name, a name matching a `patternProperties` pattern, or any name when the
    schema says `additionalProperties: true` or gives a schema for them. A schema that says
    nothing about other names takes only its own: JSON Schema would let a misspelt input
    (`prioritty`) through, unnoticed, to the roles.
    """
    if name in declared_inputs(schema):
        return True
    patterns = schema.get("patternProperties") or {}
    if any(_matches(pattern, name) for pattern in patterns):
        return True
    extra = schema.get("additionalProperties")
    return extra is not None and extra is not False


def _matches(pattern: str, name: str) -> bool:
    try:
        return re.search(pattern, name) is not None
    except re.error:
        return False  # `validate` reports a bad pattern; here it simply matches nothing


def unpriced_models(graph: Graph, override: str | None = None) -> str | None:
    """Why the graph's `max_cost_usd` could never trip, or None.

    A model without a known price costs $0 in the ledger, so a cost limit over roles Claude
    plays on such a model would never be reached: say which roles, which models, and where to
    set their prices.
    """
    limit = graph.limits.max_cost_usd
    if limit is None:
        return None
    try:
        unpriced: dict[str, list[str]] = {}
        for name, role in graph.roles.items():
            if not role.is_model:
                continue
            model = resolve_model(model_settings(graph, role, override).model)
            if not price_known(model):
                unpriced.setdefault(model, []).append(name)
    except ModelConfigError as exc:
        return str(exc)
    if not unpriced:
        return None
    which = "; ".join(
        f"model '{model}' (role{'s' if len(roles) > 1 else ''} {', '.join(roles)})"
        for model, roles in unpriced.items()
    )
    return (
        f"graph '{graph.name}' sets max_cost_usd ({limit:g}), but no price is known for {which}, "
        "so its cost would count as $0 and the limit could never be reached. Set the price "
        f"under `prices:` in the models file {models_file_target()} (docs/models.md, "
        '"The models file"), or choose a model with a known price'
    )


def plays_claude(graph: Graph, seen: set[str] | None = None) -> bool:
    """Whether Claude plays some role of the graph or of a child graph (a subgraph role is
    played by its child thread, not by Claude, whatever its `actor` default says)."""
    seen = set() if seen is None else seen
    seen.add(graph.hash)
    for name, role in graph.roles.items():
        if role.is_model:
            return True
        if not role.is_subgraph:
            continue
        child = graph.subgraph(name)
        if child is not None and child.hash not in seen and plays_claude(child, seen):
            return True
    return False


def found_models_file() -> dict[str, Any] | None:
    """What a models file found in the current folder (not named by the user) changes, as the
    thread records it: {"path", "changes"}; None when there is none or it changes nothing.
    ModelConfigError when it is malformed or lowers a known model's price."""
    return load_config().found_changes()


def announce_models_file(found: dict[str, Any]) -> str:
    return (
        f"the models file {found['path']} was found in the current folder (it may have come "
        "with the repository) and changes the built-in models: " + "; ".join(found["changes"])
    )


def check_credentials(graph: Graph, model: str | None = None) -> None:
    """Roles a model plays need their provider's key: refused before anything is recorded (run
    and resume; run/credentials.py)."""
    try:
        problem = missing_credentials(graph, model)
    except ModelConfigError as exc:
        raise SessionError(str(exc)) from None
    if problem is not None:
        raise SessionError(problem)


def check_prices(graph: Graph, model: str | None = None) -> None:
    """Refuse a cost limit that could never trip: a model of unknown price counts $0."""
    problem = unpriced_models(graph, model)
    if problem is not None:
        raise SessionError(problem)


def found_models() -> dict[str, Any] | None:
    """`found_models_file()`, a malformed or price-lowering file refused (exit 2)."""
    try:
        return found_models_file()
    except ModelConfigError as exc:
        raise SessionError(str(exc)) from None


def check_graph(graph: Graph) -> None:
    """A graph with lint errors is refused before anything is created (local or Temporal)."""
    problems = lint(graph)
    if has_errors(problems):
        raise SessionError(
            "the graph has errors; fix them before running (see `orchestrator validate`)",
            usage=False,
            problems=problems,
        )


def workspace_folder(workspace: str | os.PathLike[str] | None) -> Path:
    """The thread's workspace, resolved (the current folder by default); it must be a folder."""
    folder = Path(workspace or Path.cwd()).resolve()
    if not folder.is_dir():
        raise SessionError(f"the workspace {folder} is not a directory")
    return folder


def preflight(
    graph: Graph,
    *,
    workspace: str | os.PathLike[str] | None,
    replay: bool,
    model: str | None,
    notify: Callable[[str], None],
) -> Path:
    """The checks before anything is created; returns the workspace folder, resolved.

    The graph lints clean; unless a recording is replayed (it calls no model, runs no tool and
    starts no process): credentials exist for roles Claude plays, a cost limit has prices, a
    models file found here is announced, and a sandbox can be made for roles that need one. The
    workspace is a directory and the graph's `requires:` hold there."""
    check_graph(graph)
    if not replay:
        check_credentials(graph, model)
        import_sdk_in_background(graph)  # while the thread is set up (run/warmup.py)
        check_prices(graph, model)
        if (found := found_models()) is not None:
            notify(announce_models_file(found))
    folder = workspace_folder(workspace)
    unmet = failing(graph.requires, folder)
    if unmet:
        raise SessionError(
            f"graph '{graph.name}' cannot start here:\n" + "\n".join(f"  - {m}" for m in unmet),
            usage=False,
        )
    if not replay:
        problem = sandbox_problem(graph)
        if problem is not None:
            raise SessionError(problem, usage=False)
        for name in unsandboxed_roles(graph):
            notify(f"role '{name}' runs its processes without a sandbox (sandbox: off)")
    return folder
