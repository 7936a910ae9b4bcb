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
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .problems import GraphError, Problem
from .reserved import END, GRAPH_SUFFIXES, START

if TYPE_CHECKING:
    from .models import Graph
    from .yamlpos import SourceMap


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


def load_subgraphs(
    data: dict[str, Any],
    smap: SourceMap,
    path: Path | None,
    stack: tuple[Path, ...],
    problems: list[Problem],
    load: Callable[[Path, tuple[Path, ...]], Graph],
    bundled: Path,
) -> dict[str, Graph]:
    """Load the graph of every subgraph role; give each role the contract of its endings."""
    roles = data.get("roles")
    if not isinstance(roles, dict):
        return {}
    children: dict[str, Graph] = {}
    here = (*stack, path.resolve()) if path is not None else stack
    for name, raw in list(roles.items()):
        if not isinstance(raw, dict) or not isinstance(raw.get("graph"), str):
            continue
        where = smap.at(("roles", name, "graph"))
        given = [k for k in ("frontmatter", "goal") if k in raw]
        if given:
            line, col = smap.at(("roles", name, given[0]), key=True)
            problems.append(
                Problem(
                    smap.file,
                    line,
                    col,
                    "bad-type",
                    "error",
                    f"role '{name}' runs a subgraph; its contract comes from that graph's "
                    f"endings, so it has no {' or '.join(given)} of its own",
                )
            )
            continue
        found = find_child(raw["graph"], path, bundled)
        if found is None:
            problems.append(
                Problem(
                    smap.file,
                    *where,
                    "unknown-graph",
                    "error",
                    f"role '{name}' runs graph '{raw['graph']}', which cannot be found",
                    "a name is looked up beside this file, in ./graphs/ and in the bundled "
                    "graphs; a path is relative to this file",
                )
            )
            continue
        if found.resolve() in here:
            chain = " -> ".join(
                p.stem for p in (*here, found.resolve())[here.index(found.resolve()) :]
            )
            problems.append(
                Problem(
                    smap.file,
                    *where,
                    "graph-cycle",
                    "error",
                    f"role '{name}' runs graph '{raw['graph']}', which contains this graph "
                    f"again ({chain})",
                    "a graph cannot run itself through subgraphs",
                )
            )
            continue
        try:
            child = load(found, here)
        except GraphError as err:
            problems.extend(err.problems)
            continue
        children[name] = child
        roles[name] = {
            **raw,
            "goal": child.description,
            "frontmatter": contract_schema(child),
        }
    return children
