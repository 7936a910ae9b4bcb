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

import frontmatter as _frontmatter
from pydantic import BaseModel, ValidationError

from ..problems import GraphError, Problem, did_you_mean
from .actor_specs import entry_fields, folder_of
from .models import TOOL_SETS, Defaults, Edge, Graph, Limits, Role
from .yamlpos import SourceMap, YamlSyntaxError, load_yaml

GRAPH_SUFFIXES = (".yaml", ".yml")
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
        text = _read_text(path)
        try:
            handler = _frontmatter.YAMLHandler()
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
        dirs.append(graph_path.resolve().parent.parent / "roles")
        dirs.append(graph_path.resolve().parent / "roles")
    dirs += [cwd / "roles", bundled_roles_dir()]
    unique: list[Path] = []
    for d in dirs:
        if d not in unique:
            unique.append(d)
    return unique


def find_library_role(name: str, dirs: list[Path]) -> Path | None:
    """The library role file for `name`; relative to the working folder when inside it, so that
    problems name it as `validate roles/` does."""
    for folder in dirs:
        for suffix in ROLE_SUFFIXES:
            candidate = folder / f"{name}{suffix}"
            if candidate.is_file():
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


def _strip_union_tags(loc: tuple[Any, ...], data: Any) -> tuple[str | int, ...]:
    """Keep the parts of a pydantic `loc` that index into the raw data (drops union tags)."""
    path: list[str | int] = []
    node = data
    for i, part in enumerate(loc):
        if (
            isinstance(node, dict)
            and part in node
            or isinstance(node, list)
            and isinstance(part, int)
            and 0 <= part < len(node)
        ):
            node = node[part]
            path.append(part)
        elif i == len(loc) - 1 and isinstance(part, str | int) and not _is_tag(part):
            path.append(part)  # a missing or unknown key: point at its parent, name it
    return tuple(path)


def _is_tag(part: Any) -> bool:
    return isinstance(part, str) and ("[" in part or part[:1].isupper() or part in ("str", "int"))


def _model_fields_at(model: type[BaseModel], path: tuple[str | int, ...]) -> list[str]:
    """Field names of the model that holds `path` (for did-you-mean)."""
    if not path:
        return list(model.model_fields)
    head = path[0]
    if (fields := entry_fields(path)) is not None:
        return fields
    if head in ("roles",) and len(path) >= 2:
        return list(Role.model_fields) if len(path) <= 3 else []
    if head == "graph" and len(path) >= 3:
        return list(Edge.model_fields)
    if head == "defaults":
        return list(Defaults.model_fields)
    if head == "limits":
        return list(Limits.model_fields)
    return list(model.model_fields)


def problems_from_validation(
    exc: ValidationError, data: Any, locate: Any, model: type[BaseModel], role: str = ""
) -> list[Problem]:
    """Turn pydantic errors into problems; `locate(path, key)` gives (file, line, col).

    `role`: the role's name when `model` is `Role` (a role file checked on its own).
    """
    problems: dict[tuple[str | int, ...], Problem] = {}
    for err in exc.errors():
        path = _strip_union_tags(tuple(err["loc"]), data)
        kind = err["type"]
        dotted = ".".join(str(p) for p in path) or "(top level)"
        if kind == "extra_forbidden":
            key = str(path[-1]) if path else "?"
            file, line, col = locate(path, True)
            hint = did_you_mean(key, _model_fields_at(model, path[:-1]))
            where = ".".join(str(p) for p in path[:-1]) or "the top level"
            problem = Problem(
                file, line, col, "unknown-key", "error", f"unknown key '{key}' in {where}", hint
            )
        elif kind == "missing":
            file, line, col = locate(path[:-1], False)
            owner = ".".join(str(p) for p in path[:-1]) or "the graph"
            problem = Problem(
                file,
                line,
                col,
                "missing-field",
                "error",
                f"{owner} is missing required field '{path[-1]}'",
            )
        elif _tool_at(path, model):
            file, line, col = locate(path, False)
            value = data
            for part in path:
                value = value[part]
            hint = did_you_mean(str(value), TOOL_SETS) or f"tool sets: {', '.join(TOOL_SETS)}"
            problem = Problem(
                file,
                line,
                col,
                "unknown-tool",
                "error",
                f"role '{path[1] if model is Graph else role}' asks for unknown tool set '{value}'",
                hint,
            )
        elif len(path) >= 3 and path[0] == "roles" and path[2] == "actor" and len(path) == 3:
            file, line, col = locate(path, False)
            problem = Problem(
                file,
                line,
                col,
                "bad-type",
                "error",
                f"{dotted}: must be 'anthropic', 'human', {{command: [argv]}} or {{python: m:f}}",
            )
        else:
            file, line, col = locate(path, False)
            problem = Problem(file, line, col, "bad-type", "error", f"{dotted}: {_message(err)}")
        # union members each report; keep the first problem per path
        problems.setdefault(path + (problem.code,), problem)
    return list(problems.values())


def _tool_at(path: tuple[str | int, ...], model: type[BaseModel]) -> bool:
    """Is `path` one entry of a role's `tools:` (in a graph, or in a role file)?"""
    where = path[2:] if model is Graph and len(path) == 4 and path[0] == "roles" else path
    return len(where) == 2 and where[0] == "tools" and isinstance(where[1], int)


def _message(err: Any) -> str:
    msg = str(err["msg"])
    if err["type"].startswith("literal_error") or "literal" in err["type"]:
        return msg.replace("Input should be", "must be")
    if err["type"] == "string_pattern_mismatch":
        return "must be kebab-case (lowercase letters, digits and single hyphens)"
    return msg.replace("Input should be", "must be").replace("a valid dictionary", "a mapping")


# --------------------------------------------------------------------------- graphs


def load_graph(source: str | os.PathLike[str], *, text: str | None = None) -> Graph:
    """Load a graph file (path or name) with its library roles. Raises GraphError."""
    path = resolve_graph_path(str(source)) if text is None else Path(str(source))
    data, smap = parse_yaml_file(path, text)
    return build_graph(data, smap, path)


def build_graph(data: Any, smap: SourceMap, path: Path | None) -> Graph:
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
                    raw = _apply_extends(name, raw, dirs, smap, problems)
                except GraphError as err:
                    problems.extend(err.problems)
                if len(problems) > before:
                    broken.add(name)
            merged[name] = raw
        data = {**data, "roles": merged}

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
    for name, role in graph.roles.items():
        role._name, role._folder = name, folder_of(path)
    return graph


def _apply_extends(
    name: str,
    raw: dict[str, Any],
    dirs: list[Path],
    smap: SourceMap,
    problems: list[Problem],
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
        found = find_library_role(base, dirs)
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
