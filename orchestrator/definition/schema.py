"""The JSON Schema of the graph file format, generated from the pydantic models.

Editors use it to complete and check graph files (`orchestrator schema > graph.schema.json`);
docs/graph.schema.json is a committed copy that a test keeps equal to this output. Two things
the models cannot say (or say in validators) are added here: top-level keys starting with `x-`
are allowed (holders for YAML anchors); a role that `extends` a library role may leave out the
fields it inherits, and any other needs `goal` and `frontmatter` unless it runs a `graph`; a
requirement names exactly one kind; and an edge has one of the shapes `Edge` allows (a test runs
every graph of the suite through both this schema and `validate` to keep them agreeing).
"""

from __future__ import annotations

import json
from typing import Any

from .models import Graph

DRAFT = "https://json-schema.org/draft/2020-12/schema"
REQUIREMENT_KINDS = ("tool", "file", "env", "command")
_FANS_OUT = {"anyOf": [{"required": ["parallel"]}, {"required": ["for_each"]}]}
# Edge._one_shape as JSON Schema: a `parallel` edge has only its branches (and its join, guard);
# any other edge has a role and a prompt (or inputs); a fan-out has a join, nothing else does;
# `as` names a for_each item.
EDGE_SHAPES: list[dict[str, Any]] = [
    {
        "if": {"required": ["parallel"]},
        "then": {
            "not": {
                "anyOf": [
                    {"required": [k]} for k in ("role", "prompt", "inputs", "for_each", "location")
                ]
            }
        },
        "else": {
            "required": ["role"],
            "anyOf": [{"required": ["prompt"]}, {"required": ["inputs"]}],
        },
    },
    {"if": _FANS_OUT, "then": {"required": ["join"]}, "else": {"not": {"required": ["join"]}}},
    {"dependentRequired": {"as": ["for_each"]}},
]


def graph_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a graph file."""
    schema = Graph.model_json_schema()
    schema["patternProperties"] = {"^x-": {"description": "free for YAML anchors; ignored"}}
    defs = schema["$defs"]
    role = defs["Role"]
    required = role.pop("required", [])
    # With `extends`, the library role supplies what is missing; without it, all is needed,
    # and `goal` and `frontmatter` too unless the role runs a graph (Role._goal_or_graph).
    role["if"] = {"required": ["extends"]}
    role["else"] = {
        "required": required,
        "if": {"required": ["graph"]},
        "else": {"required": ["goal", "frontmatter"]},
    }
    # What the models' validators check, said to editors too (models.py): one kind per
    # requirement, and the shapes of an edge.
    defs["Requirement"]["oneOf"] = [{"required": [k]} for k in REQUIREMENT_KINDS]
    told = {"anyOf": [{"required": ["prompt"]}, {"required": ["inputs"]}]}
    defs["Branch"].update(told)
    defs["Join"].update(told)
    defs["Edge"]["allOf"] = EDGE_SHAPES
    schema["properties"]["graph"]["description"] = (
        "edges: $START or a role name -> status (`_` for a single exit) -> edge"
    )
    schema["properties"]["roles"]["description"] = "the roles, by name"
    ordered = {
        "$schema": DRAFT,
        "title": "orchestrator graph file",
        "description": "A graph of roles (docs/format.md section 2).",
    }
    return {**ordered, **{k: v for k, v in schema.items() if k not in ordered}}


def graph_schema_text() -> str:
    """The schema as `orchestrator schema` prints it (and docs/graph.schema.json holds it)."""
    return json.dumps(graph_schema(), indent=2, ensure_ascii=False) + "\n"
