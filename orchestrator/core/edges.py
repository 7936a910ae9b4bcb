"""Rendering an edge's templates (rules D4, D5 and D5b of engine.py's theory of operation).

Pure. A template that does not render, or a location that is no folder inside the workspace,
becomes the Record that suspends the thread, naming the edge. `needs_message` tells the judge
(J15) and the linter which `$START.resume` edges cannot render without a resume message.
"""

from __future__ import annotations

from typing import Any

from ..definition.models import RESUME, SINGLE_EXIT, START, Edge, Graph, Target
from .checks import location_problem, suspend
from .commands import Record
from .context import guard_names
from .events import SuspendKind
from .guards import GuardError, evaluate
from .state import ThreadState
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


def choose_edge(
    graph: Graph, state: ThreadState, source: str, status: str
) -> tuple[int, Edge] | Record:
    """The first edge whose guard holds, else the default (the last); D4 and D4b."""
    edges = graph.edges(source, status)
    if not edges:
        return missing_edge(graph, source, status)
    if len(edges) == 1 and edges[0].when is None:
        return 0, edges[0]
    names = guard_names(graph, state, source)
    for option, edge in enumerate(edges):
        if edge.when is None:
            return option, edge
        try:
            if evaluate(edge.when, names):
                return option, edge
        except GuardError as exc:
            return suspend(
                f"edge {source} --{status}"  # a `parallel` edge has no role: no arrow
                + (f"--> {edge.role}" if edge.role is not None else "")
                + f" (edge {option + 1} of "
                f"{len(edges)}): its guard `{edge.when}` failed: {exc}",
                SuspendKind.GUARD,
            )
    return suspend(  # `validate` reports this as guard-no-default
        f"no edge for status '{status}' of '{source}' has a guard that holds, and the last one "
        "has a `when` too (the last edge of a list must be the default, without `when`)",
        SuspendKind.GRAPH,
    )


def next_edge_key(state: ThreadState) -> tuple[str, str]:
    """The edge key the next step leaves by: the last committed step's, $START's at first
    or when an ended thread is resumed."""
    last = state.last
    if last is None:
        return START, SINGLE_EXIT
    if state.resume_from_end:
        return START, RESUME
    return last.role, last.status
