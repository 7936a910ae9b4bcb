"""What the moderator shows: the names an edge prompt sees, and the history a role is shown.

Pure functions of the graph and the state. Each costs the same at step 10 and at step 10,000:
the template context depends on the number of roles, the history on HISTORY_LIMIT.
"""

from __future__ import annotations

from typing import Any

from ..spec.models import START, Graph
from .state import Step, ThreadState


def _with_nulls(
    graph: Graph, role: str, status: str, frontmatter: dict[str, Any]
) -> dict[str, Any]:
    """Declared-but-absent fields of the status are present as null (docs/format.md section 6)."""
    data = dict(frontmatter)
    spec = graph.roles.get(role)
    contract = spec.contract.for_status(status) if spec is not None else None
    if contract is not None:
        for name in contract.fields:
            data.setdefault(name, None)
    return data


def template_context(graph: Graph, state: ThreadState, source: str, status: str) -> dict[str, Any]:
    """The names an edge prompt sees (docs/format.md section 6)."""
    steps_ctx: dict[str, Any] = {}
    for role, step in state.latest.items():
        entry = _with_nulls(graph, role, step.status, step.frontmatter)
        entry["$body"] = step.body
        entry["$status"] = step.status
        steps_ctx[role] = entry
    context: dict[str, Any] = {}
    if source != START and state.steps:
        last = state.steps[-1]
        context.update(_with_nulls(graph, last.role, last.status, last.frontmatter))
        context["$body"] = last.body
    declared = graph.input_schema.get("properties")
    inputs = dict.fromkeys(declared, None) if isinstance(declared, dict) else {}
    inputs.update(state.inputs)  # declared-but-absent inputs are null, like optional fields
    context["$inputs"] = inputs
    context["$steps"] = steps_ctx
    context["$thread"] = {
        "id": state.thread_id,
        "step": len(state.steps) + 1,
        "workspace": state.workspace,
    }
    return context


HISTORY_LIMIT = 30  # steps shown to a role; prompting trims further to its size budget


def history_for(state: ThreadState, role: str) -> list[Step]:
    """The committed steps since `role` last spoke (the most recent HISTORY_LIMIT of them)."""
    visits = state.visits.get(role)
    start = visits[-1] + 1 if visits else 0
    start = max(start, len(state.steps) - HISTORY_LIMIT)
    return state.steps[start:]


def previous_visits(state: ThreadState, role: str) -> list[Step]:
    """The role's own earlier committed steps, oldest first (its `memory: session`)."""
    return [state.steps[i] for i in state.visits.get(role, [])]
