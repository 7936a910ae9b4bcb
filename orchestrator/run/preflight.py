"""Checks on a thread's inputs before anything is created."""

from __future__ import annotations

from typing import Any

from ..spec.models import Graph
from ..spec.validator import compile_validator


class InputError(ValueError):
    """The thread's inputs do not satisfy the graph's `inputs` schema."""


def check_inputs(graph: Graph, inputs: dict[str, Any]) -> None:
    """Validate the thread's inputs against the graph's input schema. Raises InputError."""
    schema = graph.input_schema
    # The contracts' validator: bounded patterns, no $ref fetched from outside the schema.
    errors = sorted(compile_validator(schema).iter_errors(inputs), key=lambda e: list(e.path))
    if errors:
        lines = []
        for err in errors:
            where = ".".join(str(p) for p in err.path)
            lines.append(f"input '{where}': {err.message}" if where else err.message)
        declared = ", ".join(sorted((schema.get("properties") or {}).keys())) or "none"
        raise InputError("; ".join(lines) + f" (declared inputs: {declared})")
