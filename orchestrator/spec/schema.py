"""The JSON Schema of the graph file format, generated from the pydantic models.

Editors use it to complete and check graph files (`orchestrator schema > graph.schema.json`);
docs/graph.schema.json is a committed copy that a test keeps equal to this output. Two things
the models cannot say are added here: top-level keys starting with `x-` are allowed (holders
for YAML anchors), and a role that `extends` a library role may leave out the fields it inherits.
"""

from __future__ import annotations

import json
from typing import Any

from .models import Graph

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def graph_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a graph file."""
    schema = Graph.model_json_schema()
    schema["patternProperties"] = {"^x-": {"description": "free for YAML anchors; ignored"}}
    role = schema["$defs"]["Role"]
    required = role.pop("required", [])
    # With `extends`, the library role supplies what is missing; without it, all is needed.
    role["if"] = {"required": ["extends"]}
    role["else"] = {"required": required}
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
