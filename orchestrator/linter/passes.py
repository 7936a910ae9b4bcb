"""`lint(graph)`: the passes over one loaded graph, each isolated from the others' failures.

The loader already rejects what pydantic can see (YAML syntax, unknown keys, missing fields,
wrong types, unknown `extends` and tools). The passes look at what only the whole graph shows,
in order: names, schemas, shape (`$START`/`$END`, edges, status keys), flow (reachability, a way
to `$END`) and templates. Each adds problems and never stops the others: a bug in one pass
becomes an internal-error problem and the rest still report.
"""

from __future__ import annotations

from collections.abc import Callable

from ..definition.models import Graph
from ..definition.problems import Problem
from .codes import internal_error
from .fanout import check_fanouts
from .flow import check_reachability
from .guard_types import check_guard_types
from .guards import check_guards
from .models import check_models
from .names import check_names
from .python_refs import check_python_refs
from .schemas import check_schemas
from .shape import check_edges, check_start_and_end
from .templates import check_templates
from .view import GraphView

PASSES: tuple[Callable[[GraphView], None], ...] = (
    check_names,
    check_schemas,
    check_start_and_end,
    check_edges,
    check_reachability,
    check_guards,
    check_guard_types,
    check_fanouts,
    check_templates,
    check_python_refs,
    check_models,
)


def lint(graph: Graph) -> list[Problem]:
    """Every problem found in a loaded graph, sorted by file, line and column."""
    try:
        view = GraphView(graph)
    except Exception as exc:
        return [internal_error(graph.position()[0], exc)]
    for check in PASSES:
        try:
            check(view)
        except Exception as exc:  # a linter bug must not hide the other passes' findings
            view.internal_error(exc)
    if graph.source is not None:  # what loading found but did not refuse (agent files' tools)
        view.problems.extend(graph.source.notes)
    return sorted(set(view.problems))
