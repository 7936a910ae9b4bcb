"""Pydantic's validation errors as problems with file positions (codes of the loader)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from .actor_specs import entry_fields
from .models import MISSING_FIELD, TOOL_SETS, Defaults, Edge, Graph, Limits, Role
from .problems import Problem, did_you_mean

# What a union member says when the value has the other shape (an edge that is one mapping is
# not "a valid list" of edges): noise when another member reports inside the value.
SHAPE_ERRORS = frozenset(
    {"list_type", "dict_type", "model_type", "model_attributes_type", "literal_error"}
)
# Strict fields (models.py): what to write instead of a quoted number or a YAML 1.1 `yes`.
TYPE_HINTS = {
    "int_type": 'a whole number, without quotes (5, not "5" or true)',
    "float_type": 'a number, without quotes (0.5, not "0.5")',
    "bool_type": "true or false, without quotes (yes, no, on and off are text)",
}


def _strip_union_tags(loc: tuple[Any, ...], data: Any) -> tuple[str | int, ...]:
    """Keep the parts of a pydantic `loc` that index into the raw data (drops union tags)."""
    path: list[str | int] = []
    node = data
    for i, part in enumerate(loc):
        if (
            isinstance(node, dict)
            and part in node
            or isinstance(node, list)
            and isinstance(part, int)
            and 0 <= part < len(node)
        ):
            node = node[part]
            path.append(part)
        elif i == len(loc) - 1 and isinstance(part, str | int) and not _is_tag(part):
            path.append(part)  # a missing or unknown key: point at its parent, name it
    return tuple(path)


def _is_tag(part: Any) -> bool:
    return isinstance(part, str) and ("[" in part or part[:1].isupper() or part in ("str", "int"))


def _model_fields_at(model: type[BaseModel], path: tuple[str | int, ...]) -> list[str]:
    """Field names of the model that holds `path` (for did-you-mean)."""
    if not path:
        return list(model.model_fields)
    head = path[0]
    if (fields := entry_fields(path)) is not None:
        return fields
    if head in ("roles",) and len(path) >= 2:
        return list(Role.model_fields) if len(path) <= 3 else []
    if head == "graph" and len(path) >= 3:
        return list(Edge.model_fields)
    if head == "defaults":
        return list(Defaults.model_fields)
    if head == "limits":
        return list(Limits.model_fields)
    return list(model.model_fields)


def problems_from_validation(
    exc: ValidationError, data: Any, locate: Any, model: type[BaseModel], role: str = ""
) -> list[Problem]:
    """Turn pydantic errors into problems; `locate(path, key)` gives (file, line, col).

    `role`: the role's name when `model` is `Role` (a role file checked on its own).
    """
    problems: dict[tuple[str | int, ...], Problem] = {}
    errors = [(err, _strip_union_tags(tuple(err["loc"]), data)) for err in exc.errors()]
    for err, path in errors:
        kind = err["type"]
        if kind in SHAPE_ERRORS and any(
            len(other) > len(path) and other[: len(path)] == path for _, other in errors
        ):
            continue  # the union member of the other shape: the one that matched says more
        dotted = ".".join(str(p) for p in path) or "(top level)"
        if kind == "extra_forbidden":
            key = str(path[-1]) if path else "?"
            file, line, col = locate(path, True)
            hint = did_you_mean(key, _model_fields_at(model, path[:-1]))
            where = ".".join(str(p) for p in path[:-1]) or "the top level"
            problem = Problem(
                file, line, col, "unknown-key", "error", f"unknown key '{key}' in {where}", hint
            )
        elif kind == "missing" or MISSING_FIELD in err["msg"]:
            owner_path = path[:-1] if kind == "missing" else path
            file, line, col = locate(owner_path, False)
            owner = ".".join(str(p) for p in owner_path) or (role or "the graph")
            name = path[-1] if kind == "missing" else err["msg"].split("'")[1]
            problem = Problem(
                file,
                line,
                col,
                "missing-field",
                "error",
                f"{owner} is missing required field '{name}'",
            )
        elif _tool_at(path, model):
            file, line, col = locate(path, False)
            value = data
            for part in path:
                value = value[part]
            hint = did_you_mean(str(value), TOOL_SETS) or f"tool sets: {', '.join(TOOL_SETS)}"
            problem = Problem(
                file,
                line,
                col,
                "unknown-tool",
                "error",
                f"role '{path[1] if model is Graph else role}' asks for unknown tool set '{value}'",
                hint,
            )
        elif len(path) >= 3 and path[0] == "roles" and path[2] == "actor" and len(path) == 3:
            file, line, col = locate(path, False)
            problem = Problem(
                file,
                line,
                col,
                "bad-type",
                "error",
                f"{dotted}: must be 'anthropic', 'human', 'claude-code', {{command: [argv]}} or "
                "{python: module:function}",
            )
        else:
            file, line, col = locate(path, False)
            problem = Problem(
                file,
                line,
                col,
                "bad-type",
                "error",
                f"{dotted}: {_message(err)}",
                TYPE_HINTS.get(kind, ""),
            )
        # union members each report; keep the first problem per path
        problems.setdefault(path + (problem.code,), problem)
    return list(problems.values())


def _tool_at(path: tuple[str | int, ...], model: type[BaseModel]) -> bool:
    """Is `path` one entry of a role's `tools:` (in a graph, or in a role file)?"""
    where = path[2:] if model is Graph and len(path) == 4 and path[0] == "roles" else path
    return len(where) == 2 and where[0] == "tools" and isinstance(where[1], int)


def _message(err: Any) -> str:
    msg = str(err["msg"])
    if err["type"].startswith("literal_error") or "literal" in err["type"]:
        return msg.replace("Input should be", "must be")
    if err["type"] == "string_pattern_mismatch":
        return "must be kebab-case (lowercase letters, digits and single hyphens)"
    return msg.replace("Input should be", "must be").replace("a valid dictionary", "a mapping")


# --------------------------------------------------------------------------- graphs
