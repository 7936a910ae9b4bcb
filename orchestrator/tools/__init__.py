"""Workspace-confined tools for roles' `tools:` (docs/format.md section 3).

A role's tool sets map to Anthropic's client tools: `read` and `edit` to the text editor tool
(`str_replace_based_edit_tool`, plus a small `search_files` tool for `read`), `shell` to the bash
tool. Every path a model gives is confined to the thread's workspace, reached without following
any symlink, and refused under `.git` and the orchestrator's own folders (`workspace.py`); the
shell runs with the workspace as its working directory and without secrets in its environment
(`shell.py`). `ToolBox` executes a tool call and returns `(text, is_error)` for a `tool_result`.
"""

from __future__ import annotations

from .toolbox import ToolBox, tool_definitions
from .workspace import PathRefused, Workspace

__all__ = ["PathRefused", "ToolBox", "Workspace", "tool_definitions"]
