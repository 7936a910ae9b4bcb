"""Pass: `python:` actors and tools name a function that exists (docs/actors.md).

Checked statically (`orchestrator.definition.pyref.find`): the module's file is found the way the run
will import it, from the graph's folder first, and the function's name is looked for among the
module's top-level definitions. Nothing of the module runs during `validate`.
"""

from __future__ import annotations

from ..definition.models import PythonTool
from ..definition.pyref import PyRefError, find
from .view import GraphView


def check_python_refs(view: GraphView) -> None:
    for name, role in view.graph.roles.items():
        if role.python_ref is not None:
            _check(view, role.python_ref, role.folder, ("roles", name, "actor", "python"), name)
        for i, tool in enumerate(role.tools):
            if isinstance(tool, PythonTool):
                _check(view, tool.python, role.folder, ("roles", name, "tools", i, "python"), name)


def _check(
    view: GraphView, ref: str, folder: str | None, path: tuple[str | int, ...], role: str
) -> None:
    try:
        find(ref, folder)
    except PyRefError as exc:
        view.report(
            view.at(*path),
            "unknown-python",
            f"role '{role}': {exc.message}",
            "the module is imported from the graph's folder, then from the installed packages",
        )
