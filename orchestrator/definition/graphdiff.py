"""What changed between two versions of a graph (shown when a thread resumes under a new one)."""

from __future__ import annotations

from typing import Any


def graph_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Readable differences between two `Graph.model_dump(mode="json")` snapshots."""
    changes: list[str] = []
    old_roles, new_roles = old.get("roles") or {}, new.get("roles") or {}
    for name in sorted(set(old_roles) | set(new_roles)):
        if name not in new_roles:
            changes.append(f"role '{name}' was removed")
        elif name not in old_roles:
            changes.append(f"role '{name}' was added")
        else:
            fields = sorted(
                k
                for k in set(old_roles[name]) | set(new_roles[name])
                if old_roles[name].get(k) != new_roles[name].get(k)
            )
            if fields:
                changes.append(f"role '{name}' changed: {', '.join(fields)}")
    old_edges, new_edges = _edges(old), _edges(new)
    for key in sorted(set(old_edges) | set(new_edges)):
        label = f"edge {key[0]} --{key[1]}-->"
        if key not in new_edges:
            changes.append(f"{label} {old_edges[key].get('role')} was removed")
        elif key not in old_edges:
            changes.append(f"{label} {new_edges[key].get('role')} was added")
        elif old_edges[key] != new_edges[key]:
            a, b = old_edges[key], new_edges[key]
            if a.get("role") != b.get("role"):
                changes.append(f"{label} now goes to {b.get('role')} (was {a.get('role')})")
            else:
                changes.append(f"{label} {b.get('role')}: prompt or location changed")
    for section in ("inputs", "limits", "defaults", "description"):
        if old.get(section) != new.get(section):
            changes.append(f"{section} changed")
    return changes


def _edges(snapshot: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    graph = snapshot.get("graph") or {}
    return {
        (source, status): edge
        for source, edges in graph.items()
        for status, edge in (edges or {}).items()
    }
