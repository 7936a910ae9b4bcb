"""What `orchestrator mcp` may read and run: the folders a caller's paths must stay inside.

A coding agent that calls the server is not the person who started it: a graph it names could
run anything (`sandbox: off` runs commands as the person), and a file it names would be read
and, through errors, told back. So, before anything is read:

- a graph, by name or by path, must be a file of the graph folders: the server folder's
  `graphs/`, the bundled graphs, and each `--allow-graphs DIR`. Paths are resolved (symbolic
  links and `..` followed) before they are compared, so a link inside a graph folder to a file
  outside it is refused too. The child graphs a subgraph role names must be there as well, and
  a problem found in a file outside them is told without its text.
- a graph with a role (its own, or a child graph's) whose `sandbox:` is `off`, or that runs
  Python code of the graph's folder (a `python:` actor or tool whose module lies beside the
  graph: it runs in the server's own process, unconfined, with its environment), is refused
  unless the server was started with `--allow-unsandboxed`: a caller that can write a graph
  folder could otherwise run anything through a Python actor, as it could through `sandbox:
  off`. Python code of the orchestrator itself or of installed packages is not the caller's to
  write. The check is made on every start, answer and resume, so a thread started elsewhere is
  not run unconfined through the server either.
- a workspace, or a recording to replay, must be inside the server's folder or an
  `--allow-workspace DIR`.

Each refusal names what is allowed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..definition.loader import bundled_graphs_dir
from ..definition.models import Graph, Role
from ..definition.problems import Problem
from ..definition.reserved import GRAPH_SUFFIXES
from ..errors import Refused


class Refusal(Refused):
    """A path or a graph this server does not take from its caller; the message says which
    folders it takes them from."""


@dataclass(frozen=True)
class Confinement:
    cwd: Path
    graph_folders: tuple[Path, ...]  # in lookup order: ./graphs, bundled, --allow-graphs
    work_folders: tuple[Path, ...]  # the server's folder, then --allow-workspace
    allow_unsandboxed: bool = False

    @classmethod
    def of(
        cls,
        cwd: Path,
        *,
        allow_graphs: Iterable[Path] = (),
        allow_workspaces: Iterable[Path] = (),
        allow_unsandboxed: bool = False,
    ) -> Confinement:
        cwd = cwd.resolve()
        graphs = [cwd / "graphs", bundled_graphs_dir(), *(_under(cwd, p) for p in allow_graphs)]
        work = [cwd, *(_under(cwd, p) for p in allow_workspaces)]
        return cls(
            cwd,
            tuple(p.resolve() for p in graphs),
            tuple(p.resolve() for p in work),
            allow_unsandboxed,
        )

    # ------------------------------------------------------------------ graphs

    def graph_file(self, given: str) -> Path:
        """The file of a graph named or pointed to by a caller, inside the graph folders."""
        if "/" in given or os.sep in given or given.endswith(GRAPH_SUFFIXES):
            path = _under(self.cwd, Path(given)).resolve()
            if not inside(path, self.graph_folders):
                raise Refusal(
                    f"refused: {given} is not in a graph folder of this server; graphs are "
                    f"taken only from {self._graph_places()}"
                )
            if not path.is_file():
                raise Refusal(f"no graph file {given} in {self._graph_places()}")
            return path
        for folder in self.graph_folders:
            for suffix in GRAPH_SUFFIXES:
                candidate = folder / f"{given}{suffix}"
                if candidate.is_file():
                    path = candidate.resolve()
                    if not inside(path, self.graph_folders):  # a link that leaves the folders
                        raise Refusal(
                            f"refused: the graph {given} ({candidate}) is a link to a file "
                            f"outside {self._graph_places()}"
                        )
                    return path
        raise Refusal(f"no graph named '{given}' in {self._graph_places()}")

    def check_children(self, graph: Graph) -> None:
        """Refuse a graph whose subgraph roles run graphs from outside the graph folders."""
        for name, child in _children(graph):
            if child.path and not inside(Path(child.path).resolve(), self.graph_folders):
                raise Refusal(
                    f"refused: the role {name} runs the graph {child.path}, which is not in "
                    f"{self._graph_places()}"
                )

    def check_sandboxed(self, graph: Graph) -> None:
        """Refuse a graph with a role unconfined, unless the server allows it."""
        if self.allow_unsandboxed:
            return
        off = unconfined_roles(graph)
        if off:
            raise Refusal(
                f"refused: the graph {graph.name} has roles with `sandbox: off` or Python code "
                f"of its folder ({', '.join(off)}), which would run unconfined as this user; "
                "only a server started with `orchestrator mcp --allow-unsandboxed` runs them"
            )

    def redact(self, problems: Iterable[Problem]) -> list[Problem]:
        """Problems of files outside the graph folders keep their place but not their text."""
        kept = []
        for p in problems:
            if p.file and os.path.isabs(p.file) and not self._allowed_file(p.file):
                p = Problem(p.file, 0, 0, p.code, p.severity, "a file outside the graph folders")
            kept.append(p)
        return kept

    def _allowed_file(self, file: str) -> bool:
        return inside(Path(file).resolve(), self.graph_folders)

    def _graph_places(self) -> str:
        return ", ".join(str(p) for p in self.graph_folders) + " (--allow-graphs DIR adds one)"

    # ------------------------------------------------------------------ other paths

    def work_path(self, given: str, what: str) -> Path:
        """A workspace or a recording, inside the server's folder or an allowed one."""
        path = _under(self.cwd, Path(given)).resolve()
        if not inside(path, self.work_folders):
            places = ", ".join(str(p) for p in self.work_folders)
            raise Refusal(
                f"refused: the {what} {given} is outside {places} "
                "(`orchestrator mcp --allow-workspace DIR` adds a folder)"
            )
        return path


def inside(path: Path, folders: Iterable[Path]) -> bool:
    return any(path == folder or path.is_relative_to(folder) for folder in folders)


def unconfined_roles(graph: Graph, prefix: str = "") -> list[str]:
    """The roles whose `sandbox:` is `off` or that run Python code of their graph's folder, a
    child graph's as `role/child-role`."""
    found = [
        prefix + name
        for name, role in graph.roles.items()
        if role.sandbox == "off" or local_python(role)
    ]
    for name in graph.roles:
        child = graph.subgraph(name)
        if child is not None:
            found += unconfined_roles(child, f"{prefix}{name}/")
    return found


def local_python(role: Role) -> bool:
    """Whether the role runs Python code from its graph's folder (a module or a package there,
    which is what the import finds first): its actor's or one of its tools'."""
    refs = [t.python for t in role.python_tools]
    if role.python_ref is not None:
        refs.append(role.python_ref)
    if not refs or role.folder is None:
        return False
    folder = Path(role.folder)
    for ref in refs:
        top = ref.partition(":")[0].split(".")[0]
        if (folder / f"{top}.py").exists() or (folder / top).is_dir():
            return True
    return False


def _children(graph: Graph, prefix: str = "") -> list[tuple[str, Graph]]:
    found = []
    for name in graph.roles:
        child = graph.subgraph(name)
        if child is not None:
            found += [(prefix + name, child), *_children(child, f"{prefix}{name}/")]
    return found


def _under(cwd: Path, path: Path) -> Path:
    path = path.expanduser()
    return path if path.is_absolute() else cwd / path
