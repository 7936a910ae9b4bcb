"""Static checks of graph and role files: `lint(graph) -> list[Problem]` (docs/format.md section 10).

Theory of operation
-------------------
The loader (`orchestrator.definition.loader`) rejects what it can see in one file: YAML syntax,
unknown keys, missing fields, wrong types, unknown `extends` and tools. `lint` looks at what only
the whole graph shows, in passes over one shared `GraphView` (view.py) that each add problems and
never stop the others (passes.py):

1. names (names.py): the graph's `name:` against its file stem; reserved role names;
2. schemas (schemas.py): each role's output contract and the `inputs:` schema;
3. shape (shape.py): `$START`/`$END`, edges into unknown roles, status keys against the statuses
   each role's schema can emit; flow (flow.py): reachability and a way out to `$END`;
   Guards (guards.py): CEL syntax, the names a guard reads, a default last; and their types
   (guard_types.py): each guard run by CEL on sample values of the contracts' declared types;
4. templates (templates.py): every edge's `prompt` and `location`, each name resolved in the
   edge's scope (scope.py) against a forward dataflow analysis of what has certainly run and
   which statuses the latest replies may have (dataflow.py), a `for_each` item's fields against
   the items' schema.

Misspelled role names (an unknown name with one close match) are read as the role they resemble
for the shape and template passes, so one typo gives one problem, not a cascade. `validate` lints
files by path (files.py); codes.py lists every code with its severity.
"""

from __future__ import annotations

from .codes import CODES, internal_error
from .files import lint_graph_file, lint_role_file
from .passes import lint

__all__ = ["CODES", "internal_error", "lint", "lint_graph_file", "lint_role_file"]
