"""What the moderator shows: the names an edge prompt sees, and the history a role is shown.

Pure functions of the graph and the state. Each costs the same at step 10 and at step 10,000:
the template context depends on the number of roles, the history on HISTORY_LIMIT.
"""

from __future__ import annotations

from typing import Any

from ..definition.models import START, Edge, Graph
from .state import Step, ThreadState
from .templates import may_read


def output_with_nulls(
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


def _inputs(graph: Graph, state: ThreadState) -> dict[str, Any]:
    """The thread's inputs; declared-but-absent ones are null, like optional fields."""
    declared = graph.input_schema.get("properties")
    inputs = dict.fromkeys(declared, None) if isinstance(declared, dict) else {}
    inputs.update(state.inputs)
    if state.end_message is not None:
        inputs["message"] = state.end_message
    return inputs


def template_context(
    graph: Graph,
    state: ThreadState,
    source: str,
    status: str,
    previous: Step | None = None,
    branches: list[dict[str, Any]] | None = None,
    *,
    steps: bool = True,
) -> dict[str, Any]:
    """The names an edge prompt sees (docs/format.md section 6). `previous` is the step whose
    output the edge leaves from (default: the last committed one; on a join edge, the step that
    fanned out); `branches` is `$branches`, on a join edge. `steps=False` leaves `$steps` out,
    for templates that do not read it (`reads_steps`): it is every role's last output, rebuilt
    at each step, and most edges' templates read only the step they leave from."""
    steps_ctx: dict[str, Any] = {}
    for role, step in state.latest.items() if steps else ():
        entry = output_with_nulls(graph, role, step.status, step.frontmatter)
        entry["$body"] = step.body
        entry["$status"] = step.status
        steps_ctx[role] = entry
    context: dict[str, Any] = {}
    last = previous if previous is not None or branches is not None else state.last
    if source != START and last is not None:
        context.update(output_with_nulls(graph, last.role, last.status, last.frontmatter))
        context["$body"] = last.body
    if source != START:
        context["$status"] = status  # the status of the edge being taken
    if branches is not None:
        context["$branches"] = branches
    context["$inputs"] = _inputs(graph, state)
    if steps:
        context["$steps"] = steps_ctx
    context["$thread"] = {
        "id": state.thread_id,
        "step": state.committed + 1,
        "workspace": state.workspace,
    }
    return context


def reads_steps(edge: Edge) -> bool:
    """Whether any template of the edge (prompt, location, inputs, recovery) may read `$steps`."""
    templates = (edge.prompt, edge.location, edge.recovery, *(edge.inputs or {}).values())
    return any(template and may_read(template, "$steps") for template in templates)


def _output(graph: Graph, step: Step) -> dict[str, Any]:
    """A step's output as a guard sees it: fields (declared ones null when absent), `status`."""
    data = output_with_nulls(graph, step.role, step.status, step.frontmatter)
    data.pop("$status", None)
    data["status"] = step.status
    return data


def guard_names(graph: Graph, state: ThreadState, source: str) -> dict[str, Any]:
    """The names an edge guard sees (docs/format.md section 11)."""
    last = state.last if source != START else None
    return {
        "output": _output(graph, last) if last is not None else {},
        "inputs": _inputs(graph, state),
        "steps": {role: _output(graph, step) for role, step in state.latest.items()},
        "visits": {role: state.visits.get(role, 0) for role in graph.roles},
        "thread": {"step": state.committed + 1},
    }


def history_for(state: ThreadState, role: str) -> list[Step]:
    """The committed steps since `role` last spoke (the most recent HISTORY_LIMIT of them)."""
    mine = state.latest.get(role)
    since = mine.index if mine is not None else -1
    return [step for step in state.recent if step.index > since]
