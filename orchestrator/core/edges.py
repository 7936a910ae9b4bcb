"""Rendering an edge's templates (rules D4, D5 and D5b of engine.py's theory of operation).

Pure. A template that does not render, or a location that is no folder inside the workspace,
becomes the Record that suspends the thread, naming the edge. `needs_message` tells the judge
(J15) and the linter which `$START.resume` edges cannot render without a resume message.
"""

from __future__ import annotations

from typing import Any

from ..definition.models import RESUME, START, Edge, Graph, Target
from .checks import location_problem, suspend
from .commands import Record
from .events import SuspendKind
from .templates import (
    TemplateEmptyError,
    TemplateSyntaxError,
    TemplateVarError,
    render_prompt,
    variables,
)

Rendered = tuple[str, str | None, dict[str, str] | None]  # prompt, location, subgraph inputs


def render_one(label: str, template: str, context: dict[str, Any]) -> str | Record:
    try:
        return render_prompt(template, context)
    except TemplateVarError as exc:
        return suspend(
            f"{label}: template variable '{exc.name}' resolves to nothing "
            f"(run `orchestrator validate` to check the graph's templates)",
            SuspendKind.TEMPLATE,
        )
    except TemplateEmptyError:
        return suspend(f"{label}: the prompt rendered empty", SuspendKind.TEMPLATE)
    except TemplateSyntaxError as exc:
        return suspend(f"{label}: template syntax error: {exc}", SuspendKind.TEMPLATE)


def render_edge(label: str, target: Target | Edge, context: dict[str, Any]) -> Rendered | Record:
    """The prompt, location and subgraph inputs of an edge, rendered (D5, D5b)."""
    inputs: dict[str, str] | None = None
    if target.inputs is not None:
        inputs = {}
        for name, template in target.inputs.items():
            value = render_one(f"{label} (input '{name}')", template, context)
            if isinstance(value, Record):
                return value
            inputs[name] = value
    if target.prompt is not None:
        prompt = render_one(label, target.prompt, context)
        if isinstance(prompt, Record):
            return prompt
    else:  # a subgraph's inputs: the step's prompt shows them
        prompt = "\n".join(f"{k}: {v}" for k, v in (inputs or {}).items())
    location = render_one(label, target.location, context) if target.location else None
    if isinstance(location, Record):
        return location
    if location is not None and (problem := location_problem(location)):
        shown = location if len(location) <= 60 else location[:60] + "…"
        return suspend(f"{label}: location {shown!r} {problem}", SuspendKind.GRAPH)
    return prompt, location, inputs


MESSAGE = "$inputs.message"


def needs_message(graph: Graph) -> bool:
    """True when some `$START.resume` edge reads the resume message outside a section that
    tests it (`{{#$inputs.message}}...{{/$inputs.message}}` declares it optional): such an edge
    cannot render without one, so a resume without a message would leave the thread stuck."""
    for edge in graph.edges(START, RESUME):
        for template in (edge.prompt, edge.location, *(edge.inputs or {}).values()):
            if not template:
                continue
            try:
                uses = variables(template)
            except TemplateSyntaxError:
                continue  # the linter reports it; rendering it suspends (D5)
            if any(
                u.name == MESSAGE and u.kind in ("var", "raw") and MESSAGE not in u.sections
                for u in uses
            ):
                return True
    return False


def missing_edge(graph: Graph, source: str, status: str) -> Record:
    if source == START and status == RESUME:
        return suspend(
            "the graph has no `$START.resume` edge, so a completed thread cannot continue",
            SuspendKind.GRAPH,
        )
    known = ", ".join(sorted(graph.graph.get(source, {}))) or "none"
    return suspend(
        f"role '{source}' replied status '{status}' but the graph has no edge for it "
        f"(edges of '{source}': {known}); fix the graph and resume",
        SuspendKind.GRAPH,
    )
