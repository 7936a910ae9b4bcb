"""The roles a graph uses, or could use, and the files each comes from (`orchestrator roles`).

For a loaded graph, each role's files are the graph file and the files its `extends` chain
borrowed fields from (a library role, an agent file). Without a graph, the role libraries the
working folder sees and the Claude Code and OpenCode agent files found from it are listed, each
read the way a graph's `extends` would read it (a link out of its folder is listed, not read).
Each row says what an agent file's `disallowedTools` and `permissionMode: plan` took away.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from . import confine
from .agentfiles import KINDS, agent_root, read_agent_file, search_folders
from .loader import ROLE_SUFFIXES, library_root, parse_role_file, role_search_dirs
from .models import Graph, Role
from .problems import GraphError


@dataclass(frozen=True)
class RoleEntry:
    """One row of `orchestrator roles`."""

    name: str  # the role's key in the graph, or what `extends:` names
    actor: str  # who plays it: anthropic, human, claude-code, command: ARGV, graph: NAME, ...
    tools: tuple[str, ...]
    model: str | None
    description: str
    files: tuple[str, ...]  # where its fields are written, the graph's own file first
    # What an agent file's `disallowedTools` and `permissionMode: plan` took away (agentfiles.py)
    restrictions: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tools"] = list(self.tools)
        data["files"] = list(self.files)
        data["restrictions"] = list(self.restrictions)
        return data


def describe_actor(actor: Any) -> str:
    """An actor as people read it: its name, or its kind and what it runs."""
    if isinstance(actor, str):
        return actor
    dumped = actor.model_dump(exclude_none=True) if hasattr(actor, "model_dump") else actor
    if isinstance(dumped, dict):
        if isinstance(dumped.get("command"), list):
            return "command: " + " ".join(str(a) for a in dumped["command"])
        if dumped:
            key = next(iter(dumped))
            return f"{key}: {dumped[key]}"
    return str(actor)


def describe_tool(tool: Any) -> str:
    if isinstance(tool, str):
        return tool
    dumped = tool.model_dump(exclude_none=True) if hasattr(tool, "model_dump") else tool
    if isinstance(dumped, dict) and dumped:
        key = next(iter(dumped))
        value = dumped[key]
        if isinstance(value, dict) and isinstance(value.get("command"), list):
            value = " ".join(str(a) for a in value["command"])
        return f"{key}: {value}"
    return str(tool)


def graph_roles(graph: Graph) -> list[RoleEntry]:
    """Every role of a loaded graph, in file order."""
    return [
        _entry(name, role, role_files(graph, name), _restrictions(graph, name))
        for name, role in graph.roles.items()
    ]


def _restrictions(graph: Graph, name: str) -> tuple[str, ...]:
    """What the agent file of a role's `extends` chain took away, read again from it."""
    if graph.source is None:
        return ()
    for path, (smap, _) in graph.source.borrowed.items():
        if path[:2] == ("roles", name) and _is_agent_file(Path(smap.file)):
            try:
                return read_agent_file(Path(smap.file), name).restrictions
            except GraphError:  # changed since the graph loaded; the loader will say so
                return ()
    return ()


def _is_agent_file(path: Path) -> bool:
    folders = {sub for kind in KINDS.values() for sub in (*kind.project, *kind.home)}
    return path.suffix == ".md" and any(path.parent.as_posix().endswith(f) for f in folders)


def role_files(graph: Graph, name: str) -> tuple[str, ...]:
    """The graph's file, then the files of the role's `extends` chain, nearest first."""
    own = _display(graph.path) if graph.path else "<graph>"
    borrowed: list[str] = []
    if graph.source is not None:
        for path, (smap, _) in graph.source.borrowed.items():
            if path[:2] == ("roles", name) and smap.file not in borrowed:
                borrowed.append(smap.file)
    # The loader records the base-most layer first; people read the chain from the graph down.
    return (own, *reversed(borrowed))


def _display(file: str) -> str:
    """A file relative to the working folder when inside it, as problems name files."""
    try:
        return str(Path(file).resolve().relative_to(Path.cwd()))
    except (ValueError, OSError):
        return file


def _entry(
    name: str, role: Role, files: tuple[str, ...], restrictions: tuple[str, ...] = ()
) -> RoleEntry:
    return RoleEntry(
        name=name,
        # A subgraph role is played by a thread of the graph it names, not by its actor.
        actor=f"graph: {role.graph}" if role.graph is not None else describe_actor(role.actor),
        tools=tuple(describe_tool(t) for t in role.tools),
        model=role.model,
        description=role.description,
        files=files,
        restrictions=restrictions,
    )


def available_roles(cwd: Path | None = None) -> list[RoleEntry]:
    """The library roles and agent files a graph in `cwd` could extend, by what extends names."""
    cwd = cwd or Path.cwd()
    entries: dict[str, RoleEntry] = {}
    for folder in role_search_dirs(None, cwd):
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if path.suffix in ROLE_SUFFIXES and path.stem not in entries and path.is_file():
                # the first found wins, as in extends; a link out of the library is not read
                refused = _refused(path.stem, path, folder, library_root(folder))
                entries[path.stem] = refused or _library_entry(path)
    for kind in KINDS.values():
        for folder in search_folders(kind, cwd / "graph.yaml"):
            if not folder.is_dir():
                continue
            for path in sorted(folder.glob("*.md")):
                ref = f"{kind.prefix}:{path.stem}"
                if ref not in entries:
                    refused = _refused(ref, path, folder, agent_root(kind, folder))
                    entries[ref] = refused or _agent_entry(ref, path)
    return list(entries.values())


def _refused(name: str, path: Path, folder: Path, root: Path | None) -> RoleEntry | None:
    """A row for a file `extends` would refuse (a link out of its folder), not read."""
    if not confine.leaves(path, folder, root):
        return None
    return RoleEntry(name, "?", (), None, "(refused: a link out of its folder)", (str(path),))


def _library_entry(path: Path) -> RoleEntry:
    try:
        data = parse_role_file(path).data
    except GraphError:
        data = {}
    return _raw_entry(path.stem, data, str(path))


def _agent_entry(ref: str, path: Path) -> RoleEntry:
    try:
        layer = read_agent_file(path, ref)
    except GraphError:
        return _raw_entry(ref, {}, str(path))
    return replace(_raw_entry(ref, layer.data, str(path)), restrictions=layer.restrictions)


def _raw_entry(name: str, data: dict[str, Any], file: str) -> RoleEntry:
    """A row from a role file's fields as written (not yet merged into any graph)."""
    tools = data.get("tools")
    extends = data.get("extends")
    files = (file, f"extends {extends}") if isinstance(extends, str) else (file,)
    return RoleEntry(
        name=name,
        actor=describe_actor(data.get("actor", "anthropic")),
        tools=tuple(describe_tool(t) for t in tools) if isinstance(tools, list) else (),
        model=data.get("model") if isinstance(data.get("model"), str) else None,
        description=str(data.get("description", "")),
        files=files,
    )
