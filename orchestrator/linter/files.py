"""Linting files by path, as `orchestrator validate` does: a graph file, or a library role file.

Both never raise: a file that does not load gives the loader's problems, and an unexpected
failure gives an internal-error problem naming the file.
"""

from __future__ import annotations

from pathlib import Path

from ..definition.loader import RoleSource, build_graph, load_role, parse_role_file, parse_yaml_file
from ..definition.models import Role
from ..definition.problems import GraphError, Problem
from ..definition.yamlpos import SourceMap
from .codes import Locate, Where, internal_error
from .passes import lint
from .schemas import role_problems


def lint_graph_file(path: Path) -> list[Problem]:
    """Load a graph file (by path, never by name) and lint it; never raises."""
    try:
        graph = build_graph(*parse_yaml_file(path), path)
    except GraphError as err:
        return sorted(err.problems)
    except Exception as exc:
        return [internal_error(str(path), exc)]
    return lint(graph)


def lint_role_file(path: Path) -> list[Problem]:
    """Check one library role file (roles/NAME.yaml or .md) on its own; never raises."""
    try:
        source = parse_role_file(path)
        if isinstance(source.data.get("extends"), str):
            role, locate = _load_extending_role(path, source)
        else:
            role = load_role(path)
            locate = _locator(source.smap, source.path_prefix)
        return sorted(set(role_problems(path.stem, role, locate)))
    except GraphError as err:
        return sorted(err.problems)
    except Exception as exc:
        return [internal_error(str(path), exc)]


def _locator(smap: SourceMap, prefix: tuple[str | int, ...]) -> Locate:
    def locate(*where: str | int, key: bool = False) -> Where:
        return smap.where(prefix + where, key=key)

    return locate


def _load_extending_role(path: Path, source: RoleSource) -> tuple[Role, Locate]:
    """A library role that extends another: resolved the way a graph resolves its roles.

    The role is loaded as the only role of a graph read from the same file (its positions moved
    under `roles.NAME`), so `extends` chains, overrides and problem positions work as in graphs:
    a problem in a field the role takes from the role it extends points into that file.
    """
    prefix: tuple[str | int, ...] = ("roles", path.stem)
    moved = SourceMap(
        source.smap.file,
        {prefix + k[len(source.path_prefix) :]: v for k, v in source.smap.values.items()},
        {prefix + k[len(source.path_prefix) :]: v for k, v in source.smap.keys.items()},
    )
    moved.values.setdefault(prefix, source.smap.values.get((), (1, 1)))
    data = {"name": "role", "description": "role", "roles": {path.stem: source.data}, "graph": {}}
    graph = build_graph(data, moved, path)
    return graph.roles[path.stem], _locator(moved, prefix)
