"""A role's tools as OpenAI-style function tools, and the model's tool calls back as tool input.

The tool layer (`orchestrator/tools/`) describes its tools as the Messages API does: the editor
and the shell are Anthropic's schema-less client tools (`text_editor_20250728`, `bash_20250124`),
`search_files`, Python and MCP tools carry an `input_schema`. An OpenAI-compatible server needs
a JSON Schema for every function, so the two client tools get the schema of the inputs the
editor and the shell take (the same commands and fields), under the same names, and everything
else maps one to one. The calls then run through the same `ToolBox` as Claude's, with the same
confinement, sandbox and redaction: only the wire format differs.

The list is built from the role alone, in a fixed order, so the request's prefix (the tools,
then the system prompt) is byte-identical on every visit and a provider that caches prompt
prefixes can reuse it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..tools import editor, shell

EDITOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {
            "type": "string",
            "enum": ["view", "create", "str_replace", "insert"],
            "description": "view a file (with line numbers) or list a directory; create a "
            "file (overwrites); replace text that occurs exactly once; insert after a line",
        },
        "path": {"type": "string", "description": "a path relative to the workspace"},
        "view_range": {
            "type": "array",
            "items": {"type": "integer"},
            "description": "view: [first, last] line (last -1: to the end)",
        },
        "file_text": {"type": "string", "description": "create: the file's content"},
        "old_str": {"type": "string", "description": "str_replace: the text to replace"},
        "new_str": {"type": "string", "description": "str_replace: the replacement"},
        "insert_line": {"type": "integer", "description": "insert: after this line (0: top)"},
        "insert_text": {"type": "string", "description": "insert: the text to insert"},
    },
    "required": ["command", "path"],
}
EDITOR_DESCRIPTION = (
    "View, create and edit files in the workspace. Paths are relative to the workspace; `.git` "
    "and symbolic links are refused."
)
SHELL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"command": {"type": "string", "description": "the command to run"}},
    "required": ["command"],
}
SHELL_DESCRIPTION = (
    "Run a command with `bash -c` in the workspace, in a sandbox. Each call is a new shell: "
    "`cd` and `export` do not carry over. Output is cut to 30,000 characters."
)


def function_tools(definitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools of `tools.tool_definitions(role)` (and the extra tools') as function tools."""
    functions = []
    for d in definitions:
        if d.get("type") == editor.TOOL_TYPE:
            schema, description = EDITOR_SCHEMA, EDITOR_DESCRIPTION
        elif d.get("type") == shell.TOOL_TYPE:
            schema, description = SHELL_SCHEMA, SHELL_DESCRIPTION
        else:
            schema = d.get("input_schema") or {"type": "object", "properties": {}}
            description = d.get("description") or ""
        functions.append(
            {
                "type": "function",
                "function": {"name": d["name"], "description": description, "parameters": schema},
            }
        )
    return functions


@dataclass(frozen=True)
class ToolCall:
    """One function call of an assistant message, as streamed pieces are put together."""

    id: str
    name: str
    arguments: str  # JSON text, as the model wrote it

    def parsed(self) -> tuple[dict[str, Any] | None, str | None]:
        """The arguments as an object, or the error the model is told (it may write bad JSON)."""
        try:
            value = json.loads(self.arguments or "{}")
        except ValueError as exc:
            return None, f"the arguments of {self.name} are not valid JSON ({exc}); call it again"
        if not isinstance(value, dict):
            return None, f"the arguments of {self.name} must be a JSON object"
        return value, None

    def message_part(self) -> dict[str, Any]:
        """This call as it goes back in the assistant message of the next request."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }
