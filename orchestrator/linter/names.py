"""Pass 1, names: the graph's `name:` against its file stem; reserved role names."""

from __future__ import annotations

from pathlib import Path

from ..definition.models import END, SINGLE_EXIT, START, SUSPEND
from .view import GraphView

RESERVED_ROLE_NAMES = (START, END, SUSPEND, SINGLE_EXIT)


def check_names(view: GraphView) -> None:
    path = view.graph.path
    if path is not None:
        stem = Path(path).stem
        if stem != view.graph.name:
            view.report(
                view.at("name"),
                "name-mismatch",
                f"the graph is named '{view.graph.name}' but its file is '{Path(path).name}'",
                f"set `name: {stem}` or rename the file to {view.graph.name}{Path(path).suffix}",
            )
    for name in view.roles:
        if name in RESERVED_ROLE_NAMES or name.startswith("$"):
            view.report(
                view.at("roles", name, key=True),
                "reserved-name",
                f"'{name}' cannot name a role: `$` names and `_` are reserved",
                "pick a plain name such as 'planner'",
            )
