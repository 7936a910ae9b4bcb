"""Loading graph files and role libraries (docs/format.md section 1), keeping source positions.

`load_graph` returns a `Graph` or raises `GraphError` with every structural problem found (YAML
syntax, unknown keys with did-you-mean hints, missing fields, wrong types, unknown `extends`),
each pointing at a file, line and column. Semantic checks live in `orchestrator.linter`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from . import confine, subgraphs
from .actor_specs import folder_of
from .agentfiles import agent_layer, agent_ref
from .models import Graph, Role
from .problems import GraphError, Problem, did_you_mean
from .reserved import GRAPH_SUFFIXES
from .validation_problems import problems_from_validation
from .yamlpos import SourceMap, YamlSyntaxError, load_yaml

ROLE_SUFFIXES = (".yaml", ".yml", ".md")
MAX_FILE_BYTES = 10_000_000  # graph and role files are a few kilobytes


def _data_package_dir(package: str) -> Path:
    """The folder of a data package that ships in the wheel (see setup.py and pyproject.toml).

    Python run from the repository's root imports the source tree's `orchestrator/`, which has
    no `_graphs` or `_roles`: the folders beside it (`graphs/`, `roles/`) are those packages."""
    try:
        folder = files(package)
    except ModuleNotFoundError:
        source = Path(__file__).resolve().parents[2] / package.rsplit("._", 1)[1]
        if not source.is_dir():
            raise
        return source
    if not isinstance(folder, Path):  # only a zip import gives anything else; pip never does
        raise RuntimeError(f"{package} is not installed as a folder: {folder}")
    return folder


def bundled_graphs_dir() -> Path:
    """The bundled graphs: the repository's `graphs/`, installed as `orchestrator._graphs`."""
    return _data_package_dir("orchestrator._graphs")


def bundled_roles_dir() -> Path:
    """The bundled role library: the repository's `roles/`, installed as `orchestrator._roles`."""
    return _data_package_dir("orchestrator._roles")


def resolve_graph_path(arg: str, cwd: Path | None = None) -> Path:
    """A path (has `/` or a YAML suffix) or a name found in ./graphs/ then the bundled graphs."""
    cwd = cwd or Path.cwd()
    if "/" in arg or os.sep in arg or arg.endswith(GRAPH_SUFFIXES):
        return (cwd / arg) if not os.path.isabs(arg) else Path(arg)
    for folder in (cwd / "graphs", bundled_graphs_dir()):
        for suffix in GRAPH_SUFFIXES:
            candidate = folder / f"{arg}{suffix}"
            if candidate.is_file():
                return candidate
    known = sorted(
        {
            p.stem
            for d in (cwd / "graphs", bundled_graphs_dir())
            if d.is_dir()
            for p in d.iterdir()
            if p.suffix in GRAPH_SUFFIXES
        }
    )
    hint = did_you_mean(arg, known) or (f"known graphs: {', '.join(known)}" if known else "")
    raise _fail(
        arg, "unreadable", f"no graph named '{arg}' in ./graphs/ or the bundled graphs", hint
    )


def _fail(
    file: str, code: str, message: str, hint: str = "", line: int = 1, column: int = 1
) -> GraphError:
    """A GraphError holding one problem."""
    return GraphError([Problem(file, line, column, code, "error", message, hint)])


def _read_text(path: Path) -> str:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:  # refused before it is read: parsing it would take minutes
            raise _fail(
                str(path),
                "yaml-limit",
                f"the file has {size:,} bytes, more than the {MAX_FILE_BYTES:,} it may have",
                "graph and role files are a few kilobytes; check that this is the file you meant",
            )
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _fail(str(path), "unreadable", f"{path} is not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise _fail(str(path), "unreadable", f"cannot read {path}: {reason}") from None


def parse_yaml_file(path: Path, text: str | None = None) -> tuple[Any, SourceMap]:
    return _parse_shifted(path, _read_text(path) if text is None else text, 0)


# --------------------------------------------------------------------------- role library


@dataclass
class RoleSource:
    """A library role's raw fields and where they came from."""

    name: str
    data: dict[str, Any]
    smap: SourceMap
    path_prefix: tuple[str | int, ...] = ()  # where the fields sit inside the file


def parse_role_file(path: Path) -> RoleSource:
    """Read `roles/NAME.yaml` (all fields) or `roles/NAME.md` (frontmatter + procedure body)."""
    if path.suffix == ".md":
        # deferred: python-frontmatter's import costs start-up time a graph file never needs
        from frontmatter.default_handlers import YAMLHandler

        text = _read_text(path)
        try:
            handler = YAMLHandler()
            fm_text, body = handler.split(text) if text.lstrip().startswith("---") else ("", text)
        except ValueError:
            fm_text, body = "", text
        offset = text[: text.find(fm_text)].count("\n") if fm_text else 0
        data, smap = _parse_shifted(path, fm_text, offset)
        data = {} if data is None else data
        if not isinstance(data, dict):
            message = "a role file's frontmatter must be a mapping of role fields"
            raise _fail(str(path), "bad-type", message)
        if body.strip() and "procedure" not in data:
            data["procedure"] = body.strip() + "\n"
        return RoleSource(path.stem, data, smap)
    data, smap = parse_yaml_file(path)
    if not isinstance(data, dict):
        raise _fail(str(path), "bad-type", "a role file must be a mapping of role fields")
    return RoleSource(path.stem, data, smap)


def _parse_shifted(path: Path, text: str, line_offset: int) -> tuple[Any, SourceMap]:
    """Parse YAML that starts `line_offset` lines into the file (a .md role's frontmatter)."""
    try:
        # Blank lines in front make every position, even inside parser messages, a file line.
        data, smap = load_yaml("\n" * line_offset + text, str(path))
    except YamlSyntaxError as exc:
        message = f"YAML syntax: {exc.message}" if exc.code == "yaml-syntax" else exc.message
        raise _fail(
            str(path), exc.code, message, exc.hint, line=exc.line, column=exc.column
        ) from None
    if smap.duplicates:
        raise GraphError([_duplicate(str(path), *d) for d in smap.duplicates])
    return data, smap


def _duplicate(
    file: str, path: tuple[str | int, ...], first: tuple[int, int], again: tuple[int, int]
) -> Problem:
    """A key written twice in one mapping: only one value would count, silently."""
    owner = ".".join(str(p) for p in path[:-1]) or "the top level"
    return Problem(
        file,
        again[0],
        again[1],
        "duplicate-key",
        "error",
        f"duplicate key '{path[-1]}' in {owner}: first on line {first[0]}, again on line {again[0]}",
        "keep one of them (YAML would silently use only the last)",
    )


def role_search_dirs(graph_path: Path | None, cwd: Path | None = None) -> list[Path]:
    """Where `extends:` looks: the graph's sibling roles/, then ./roles/, then the bundled roles."""
    cwd = cwd or Path.cwd()
    dirs: list[Path] = []
    if graph_path is not None:
        here = graph_path.resolve().parent
        dirs.append(here.parent / "roles")
        dirs.append(here / "roles")
    dirs += [cwd / "roles", bundled_roles_dir()]
    unique: list[Path] = []
    for d in dirs:
        if d not in unique:
            unique.append(d)
    return unique


def library_root(folder: Path) -> Path | None:
    """The project folder a role library lies in (None for the bundled one), which a `roles`
    that is a symbolic link may not lead out of (definition/confine.py)."""
    return None if folder == bundled_roles_dir() else folder.parent


def find_library_role(name: str, dirs: list[Path]) -> Path | None:
    """The library role file for `name`; relative to the working folder when inside it, so that
    problems name it as `validate roles/` does. ValueError when `name` is no role name or the
    file is a link out of its library (definition/confine.py)."""
    problem = confine.name_problem(name)
    if problem is not None:
        raise ValueError(problem)
    for folder in dirs:
        for suffix in ROLE_SUFFIXES:
            candidate = folder / f"{name}{suffix}"
            if candidate.is_file():
                if confine.leaves(candidate, folder, library_root(folder)):
                    raise ValueError(confine.link_problem(candidate))
                try:
                    return candidate.relative_to(Path.cwd())
                except (ValueError, OSError):  # outside the working folder, or it is gone
                    return candidate
    return None


def _library_names(dirs: list[Path]) -> list[str]:
    return sorted(
        {p.stem for d in dirs if d.is_dir() for p in d.iterdir() if p.suffix in ROLE_SUFFIXES}
    )


# --------------------------------------------------------------------------- pydantic errors


def load_graph(source: str | os.PathLike[str], *, text: str | None = None) -> Graph:
    """Load a graph file (path or name) with its library roles. Raises GraphError."""
    path = resolve_graph_path(str(source)) if text is None else Path(str(source))
    data, smap = parse_yaml_file(path, text)
    return build_graph(data, smap, path)


def build_graph(
    data: Any, smap: SourceMap, path: Path | None, stack: tuple[Path, ...] = ()
) -> Graph:
    """A Graph from parsed YAML; `stack` is the chain of graphs that contain this one."""
    file = smap.file
    if not isinstance(data, dict):
        message = "a graph file must be a YAML mapping (name, description, roles, graph)"
        raise _fail(file, "bad-type", message)
    data = {k: v for k, v in data.items() if not str(k).startswith("x-")}
    problems: list[Problem] = []
    broken: set[str] = set()  # roles whose library role could not be found or read
    roles = data.get("roles")
    if isinstance(roles, dict):
        dirs = role_search_dirs(path)
        merged: dict[str, Any] = {}
        for name, raw in roles.items():
            if isinstance(raw, dict) and isinstance(raw.get("extends"), str):
                before = len(problems)
                try:
                    raw = _apply_extends(name, raw, dirs, smap, problems, path)
                except GraphError as err:
                    problems.extend(err.problems)
                if len(problems) > before:
                    broken.add(name)
            merged[name] = raw
        data = {**data, "roles": merged}
    children = subgraphs.load_subgraphs(
        data, smap, path, stack, problems, _load_child, bundled_graphs_dir()
    )

    def locate(p: tuple[str | int, ...], key: bool) -> tuple[str, int, int]:
        return smap.where(p, key=key)

    try:
        graph = Graph.model_validate(data)
    except ValidationError as exc:
        # A role whose `extends` failed lacks its library fields; don't also report those.
        problems.extend(
            p
            for p in problems_from_validation(exc, data, locate, Graph)
            if not (p.code == "missing-field" and any(f"roles.{b} " in p.message for b in broken))
        )
        raise GraphError(sorted(problems, key=lambda p: (p.file, p.line, p.column))) from None
    if problems:
        raise GraphError(problems)
    graph._source = smap
    graph._path = str(path) if path is not None else None
    folder = folder_of(path)  # once per graph: it resolves the path (system calls per link)
    for name, role in graph.roles.items():
        role._name, role._folder = name, folder
    graph._subgraphs = children
    return graph


def _load_child(path: Path, stack: tuple[Path, ...]) -> Graph:
    """A subgraph role's graph, with the chain of graphs that contain it."""
    data, smap = parse_yaml_file(path)
    return build_graph(data, smap, path, stack)


def _apply_extends(
    name: str,
    raw: dict[str, Any],
    dirs: list[Path],
    smap: SourceMap,
    problems: list[Problem],
    graph_path: Path | None = None,
) -> dict[str, Any]:
    """Merge a role over its library role (and that role's own `extends`, if any).

    The fields that come from a library file are recorded in `smap.borrowed`, so that their
    problems point into that file.
    """
    chain: list[str] = []
    current = raw
    layers: list[RoleSource] = []
    while isinstance(current.get("extends"), str):
        base = current["extends"]
        if base in chain:
            line, col = smap.at(("roles", name, "extends"))
            problems.append(
                Problem(
                    smap.file,
                    line,
                    col,
                    "unknown-extends",
                    "error",
                    f"role '{name}' extends a cycle: {' -> '.join(chain + [base])}",
                )
            )
            break
        chain.append(base)
        agent = agent_ref(base)
        if agent is not None:  # an agent file of Claude Code or OpenCode: the last layer
            found_agent = agent_layer(name, agent, smap, graph_path)  # GraphError if absent
            layers.append(RoleSource(agent[1], found_agent.data, found_agent.smap))
            break
        try:
            found = find_library_role(base, dirs)
        except ValueError as exc:
            file, line, col = _extends_at(name, smap, layers)
            message = f"role '{name}' cannot extend '{base}': {exc}"
            problems.append(Problem(file, line, col, "unknown-extends", "error", message))
            break
        if found is None:
            line, col = smap.at(("roles", name, "extends")) if len(chain) == 1 else (1, 1)
            hint = did_you_mean(base, _library_names(dirs)) or "looked in: " + ", ".join(
                str(d) for d in dirs
            )
            problems.append(
                Problem(
                    smap.file,
                    line,
                    col,
                    "unknown-extends",
                    "error",
                    f"role '{name}' extends '{base}', which is not in any role library",
                    hint,
                )
            )
            break
        source = parse_role_file(found)
        layers.append(source)
        current = source.data
    merged: dict[str, Any] = {}
    for layer in reversed(layers):
        for key, value in layer.data.items():
            merged[key] = value
            smap.borrowed[("roles", name, key)] = (layer.smap, (*layer.path_prefix, key))
    for key in raw:
        smap.borrowed.pop(("roles", name, key), None)
    merged.update(raw)
    return merged


def _extends_at(name: str, smap: SourceMap, layers: list[RoleSource]) -> tuple[str, int, int]:
    """Where the `extends:` being followed is written: the graph's role, or the library role
    the chain has reached."""
    if not layers:
        return smap.where(("roles", name, "extends"))
    last = layers[-1]
    return last.smap.where((*last.path_prefix, "extends"))


def load_role(path: Path) -> Role:
    """Load and check one library role file on its own. Raises GraphError."""
    source = parse_role_file(path)

    def locate(p: tuple[str | int, ...], key: bool) -> tuple[str, int, int]:
        line, col = source.smap.at(p, key=key)
        return source.smap.file, line, col

    data = dict(source.data)
    try:
        role = Role.model_validate(data)
    except ValidationError as exc:
        problems = problems_from_validation(exc, data, locate, Role, path.stem)
        fixed = [
            Problem(
                p.file,
                p.line,
                p.column,
                p.code,
                p.severity,
                p.message,
                did_you_mean(p.message.split("'")[1], list(Role.model_fields))
                if p.code == "unknown-key"
                else p.hint,
            )
            for p in problems
        ]
        raise GraphError(fixed) from None
    role._name = path.stem
    return role
