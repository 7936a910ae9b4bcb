"""Subgraph roles (docs/format.md section 14): where a role's graph is, and the role's contract.

A role with `graph:` runs another graph as a child thread. Its graph is found like any graph,
starting from the parent's folder: a path (it has a `/` or a YAML suffix) relative to the
parent's file, or a name looked up beside the parent, in `./graphs/` and in the bundled graphs.

The role has no `frontmatter` of its own: its contract is derived from the child's endings. Its
statuses are the names of the child's endings; the fields of one ending are those of the step
an edge into that ending leaves from (the child's last committed step), required where every
such edge has them required. The loader puts that schema in the role, so every later stage
(the linter's status and template checks, extraction, the editor) treats the role like any
other.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .reserved import END, GRAPH_SUFFIXES, START

if TYPE_CHECKING:
    from .models import Graph


def find_child(
    name: str, parent: Path | None, bundled: Path, cwd: Path | None = None
) -> Path | None:
    """The file of a subgraph role's graph, or None when there is none."""
    base = parent.parent if parent is not None else (cwd or Path.cwd())
    if "/" in name or os.sep in name or name.endswith(GRAPH_SUFFIXES):
        candidate = Path(name) if os.path.isabs(name) else base / name
        return candidate if candidate.is_file() else None
    for folder in (base, (cwd or Path.cwd()) / "graphs", bundled):
        for suffix in GRAPH_SUFFIXES:
            candidate = folder / f"{name}{suffix}"
            if candidate.is_file():
                return candidate
    return None


def endings(graph: Graph) -> dict[str, list[tuple[str, str]]]:
    """Each ending's name with the (source role, status) of every edge into it, in file order."""
    found: dict[str, list[tuple[str, str]]] = {}
    for source, status, _, edge in graph.routes():
        for target in [edge] if not edge.fans_out else ([edge.join] if edge.join else []):
            if target.role == END:
                name = getattr(target, "ending", None) or "done"
                found.setdefault(name, []).append((source, status))
    return found


def contract_schema(child: Graph) -> dict[str, Any]:
    """The frontmatter schema of a role that runs `child`: one variant per ending."""
    variants = []
    for ending, sources in endings(child).items():
        properties: dict[str, Any] = {}
        required: set[str] | None = None
        for source, status in sources:
            contract = None
            if source != START and source in child.roles:
                contract = child.roles[source].contract.for_status(status)
            names = set(contract.required) if contract is not None else set()
            if contract is not None:
                for name in sorted(contract.fields):
                    properties.setdefault(name, contract.field_schemas.get(name) or {})
            required = names if required is None else required & names
        variant: dict[str, Any] = {
            "type": "object",
            "properties": {"$status": {"const": ending}, **properties},
            "required": ["$status", *sorted(required or ())],
        }
        variants.append(variant)
    return {"oneOf": variants}
