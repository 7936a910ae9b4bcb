"""decide() for parallel branches and `for_each` (rules D9-D13 of engine.py's theory of operation).

An edge that fans out is recorded once (`BranchesStarted`, every branch's prompt rendered then,
from the output that fanned out); each branch then starts as a step of its own, at most
`limits.max_parallel` at once, and commits on its own. The join edge is taken when every branch
has committed. Pure, like the rest of the moderator.
"""

from __future__ import annotations

from typing import Any

from ..definition.models import Edge, Graph, Target
from .checks import suspend
from .commands import Command, Idle, Limits, Record, RunBranches
from .context import output_with_nulls
from .edges import render_edge
from .events import BranchesStarted, StepStarted, SuspendKind
from .state import InFlight, ThreadState
from .subgraph import step_command

Rendered = dict[str, Any]  # a branch as BranchesStarted keeps it: role, prompt, location, inputs


def for_each_items(edge: Edge, context: dict[str, Any]) -> list[Any] | str:
    """The list a `for_each` edge iterates over, or why there is none (D10b)."""
    assert edge.for_each is not None
    value: Any = context
    for part in edge.for_each.split("."):
        if not isinstance(value, dict) or part not in value:
            return f"`for_each: {edge.for_each}` names nothing in the output that fanned out"
        value = value[part]
    if not isinstance(value, list):
        kind = "null" if value is None else type(value).__name__
        return f"`for_each: {edge.for_each}` is not a list (it is {kind})"
    return value


def branch_contexts(
    edge: Edge, context: dict[str, Any]
) -> list[tuple[Target, dict[str, Any]]] | str:
    """Each branch's target and the names its prompt sees, in branch order."""
    if edge.for_each is None:
        return [(target, context) for target in edge.branches()]
    items = for_each_items(edge, context)
    if isinstance(items, str):
        return items
    target = edge.branches()[0]
    return [(target, {**context, edge.item_name: item}) for item in items]


def over_limit(state: ThreadState, roles: list[str], limits: Limits) -> str | None:
    """D11: a fan-out is checked as a whole: every branch is a step; a role is visited once."""
    steps = state.committed + state.child_steps - state.budget_step
    if roles and steps + len(roles) > limits.max_steps:
        return (
            f"limit max_steps ({limits.max_steps}) reached: {steps} steps ran and the fan-out "
            f"has {len(roles)} branches; raise `limits.max_steps` in the graph or pass "
            "--max-steps, then resume"
        )
    for role in dict.fromkeys(roles):
        visits = state.visits.get(role, 0) - state.budget_visits.get(role, 0)
        if visits >= limits.max_visits:
            return (
                f"limit max_visits ({limits.max_visits}) reached: role '{role}' already ran "
                f"{visits} times; raise `limits.max_visits` in the graph, then resume"
            )
    spent = state.cost_usd - state.budget_cost
    if limits.max_cost_usd is not None and spent >= limits.max_cost_usd:
        return (
            f"limit max_cost_usd (${limits.max_cost_usd:.2f}) reached: ${spent:.4f} spent; "
            "raise `limits.max_cost_usd` in the graph, then resume"
        )
    return None


def started(
    state: ThreadState, source: str, status: str, option: int, branches: list[Rendered]
) -> Record:
    return Record(BranchesStarted(source, status, state.committed + 1, branches, option))


def _runs(graph: Graph, state: ThreadState, limits: Limits, running: list[InFlight]) -> RunBranches:
    return RunBranches(tuple(step_command(graph, state, f, limits) for f in running))


def next_branch_command(graph: Graph, state: ThreadState, limits: Limits) -> Command | None:
    """What a fan-out in progress needs next; None once every branch committed (the join)."""
    fo = state.fanout
    assert fo is not None
    running = fo.running()
    for f in running:
        if f.role not in graph.roles:  # D2, for a branch
            return suspend(
                f"step {f.step}: the graph no longer has role '{f.role}'", SuspendKind.GRAPH, f.step
            )
    if fo.failed:  # D12, D12b: the others finish first, then the thread suspends
        if running:
            return _runs(graph, state, limits, running)
        index = min(fo.failed)
        reason, kind = fo.failed[index]
        others = (
            f" ({len(fo.failed) - 1} other branch(es) failed too)" if len(fo.failed) > 1 else ""
        )
        return suspend(
            f"branch {index + 1} of {len(fo.branches)}: {reason}{others}",
            kind,
            fo.first_step + index,
        )
    if fo.complete:
        return None
    unstarted = fo.unstarted()
    if unstarted and len(running) < limits.max_parallel:  # D9
        index = unstarted[0]
        branch = fo.branches[index]
        prompt = branch["prompt"]
        if state.resume_message:
            prompt = f"{prompt}\n\nMessage from the person who resumed this thread:\n{state.resume_message}"
        return Record(
            StepStarted(
                fo.first_step + index,
                branch["role"],
                prompt,
                fo.source,
                fo.status,
                branch.get("location"),
                fo.option,
                branch=index,
                inputs=branch.get("inputs"),
            )
        )
    if running:  # D9b
        return _runs(graph, state, limits, running)
    return Idle(state.status)  # D13: only branches waiting for a person (A12 made it wait)


def branches_value(graph: Graph, state: ThreadState) -> list[dict[str, Any]]:
    """`$branches` on a join edge: each branch's output, in branch order."""
    fo = state.fanout
    assert fo is not None
    values = []
    for index in range(len(fo.branches)):
        step = fo.done[index]
        entry = {"role": step.role, "status": step.status, "$body": step.body}
        entry.update(output_with_nulls(graph, step.role, step.status, step.frontmatter))
        entry.pop("$status", None)
        values.append(entry)
    return values


def fan_out(
    graph: Graph,
    state: ThreadState,
    limits: Limits,
    key: tuple[str, str, int],
    edge: Edge,
    context: dict[str, Any],
) -> Record:
    """D10, D10b, D11: render every branch from the output that fanned out, and record them."""
    source, status, option = key
    label = f"edge {source} --{status}-->"
    contexts = branch_contexts(edge, context)
    if isinstance(contexts, str):
        return suspend(f"{label} {edge.role}: {contexts}", SuspendKind.TEMPLATE)
    branches: list[Rendered] = []
    for index, (target, names) in enumerate(contexts):
        rendered = render_edge(f"{label} {target.role} (branch {index + 1})", target, names)
        if isinstance(rendered, Record):
            return rendered
        prompt, location, inputs = rendered
        branches.append(
            {"role": target.role, "prompt": prompt, "location": location, "inputs": inputs}
        )
    problem = over_limit(state, [str(b["role"]) for b in branches], limits)
    if problem is not None:
        return suspend(problem, SuspendKind.LIMIT)
    return started(state, source, status, option, branches)
