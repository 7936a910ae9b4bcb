"""`package.module:function` references of `python:` actors and tools (docs/actors.md).

Two ways to look at a reference, one for each moment:

- `find(ref, folder)`: static, for `validate`. It finds the module's source file without running
  any of it (the import system's finders, walked one package at a time) and looks for the
  function's name among the module's top-level definitions with `ast`. Linting a graph never
  executes the code the graph names.
- `load(ref, folder)`: the function itself, for a run. A module that lives in the graph's folder
  is imported with that folder first on `sys.path`, and only while importing: afterwards the
  folder leaves `sys.path` and the folder's modules leave `sys.modules`, so two graphs that both
  have a `helpers.py` each get their own, and nothing of one graph is visible to the next. A
  module found elsewhere (an installed package) is imported the ordinary way.
- `preload(refs)`: when a thread starts or resumes, before any of its roles runs, the session
  imports every reference its graph names afresh; the steps then `load` the functions imported
  then. A module changed on disk during the thread (by a role: it should not be able to, the
  boundary keeps the graph's files read-only, but by anyone else too) is not picked up until
  the thread is resumed or another starts: what runs is what the thread started with, never
  what a step left behind. A reference not loaded yet (a Temporal worker) is imported at its
  first step and kept for the process's life.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast


class PyRefError(Exception):
    """A reference that cannot be found or loaded; the message says which and why."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Found:
    module: str
    function: str
    file: Path | None  # None: a built-in or a module without a file
    local: bool  # the module lives in the graph's folder


def split(ref: str) -> tuple[str, str]:
    module, sep, function = ref.partition(":")
    if not sep or not module or not function:
        raise PyRefError(f"'{ref}' is not of the form package.module:function")
    return module, function


def find(ref: str, folder: str | Path | None) -> Found:
    """Where the reference's module is, and that it defines the function; nothing is run."""
    module, function = split(ref)
    file, local = _module_file(module, folder)
    if file is not None and file.suffix == ".py":
        try:
            tree = ast.parse(file.read_text(encoding="utf-8"), str(file))
        except (OSError, SyntaxError, ValueError) as exc:
            raise PyRefError(f"module '{module}' ({file}) cannot be read: {exc}") from None
        names = _top_level_names(tree)
        if names is not None and function not in names:
            raise PyRefError(f"module '{module}' ({file}) has no function '{function}'")
    return Found(module, function, file, local)


def _module_file(module: str, folder: str | Path | None) -> tuple[Path | None, bool]:
    parts = module.split(".")
    local = folder is not None and _in_folder(parts[0], Path(folder))
    path: list[str] | None = [str(folder)] if local else None
    spec = None
    for i in range(len(parts)):
        name = ".".join(parts[: i + 1])
        try:
            if path is None:  # a top-level module found the ordinary way (never executed)
                spec = importlib.util.find_spec(name) if i == 0 else None
            else:
                spec = importlib.machinery.PathFinder.find_spec(name, path)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            where = f"the graph's folder ({folder}) or " if folder is not None else ""
            raise PyRefError(f"cannot find module '{name}' in {where}the installed packages")
        path = list(spec.submodule_search_locations or []) or None
        if i < len(parts) - 1 and path is None:
            raise PyRefError(f"'{name}' is a module, not a package: it has no '{parts[i + 1]}'")
    origin = spec.origin if spec is not None else None
    file = Path(origin) if origin and origin not in ("built-in", "frozen") else None
    return file, local


def _in_folder(top: str, folder: Path) -> bool:
    return (folder / f"{top}.py").is_file() or (folder / top / "__init__.py").is_file()


def _top_level_names(tree: ast.Module) -> set[str] | None:
    """Names a module binds at its top level; None when a star import makes it unknowable."""
    names: set[str] = set()
    for node in _top_nodes(tree.body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add(alias.asname or alias.name.split(".")[0])
    return names


def _top_nodes(body: list[ast.stmt]) -> list[ast.stmt]:
    """Top-level statements, looking into `if`/`try` blocks (conditional definitions)."""
    out: list[ast.stmt] = []
    for node in body:
        out.append(node)
        if isinstance(node, ast.If):
            out += _top_nodes(node.body) + _top_nodes(node.orelse)
        elif isinstance(node, ast.Try):
            out += _top_nodes(node.body) + _top_nodes(node.orelse) + _top_nodes(node.finalbody)
            for handler in node.handlers:
                out += _top_nodes(handler.body)
    return out


# --------------------------------------------------------------------------- loading

_lock = threading.Lock()  # sys.path and sys.modules are the process's: one import at a time
_loaded: dict[tuple[str, str], Callable[..., Any]] = {}


def load(ref: str, folder: str | Path | None) -> Callable[..., Any]:
    """The function a reference names: the one imported when the thread started (`preload`),
    else imported now and kept (see the module docstring)."""
    key = (ref, str(folder or ""))
    with _lock:
        if key in _loaded:
            return _loaded[key]
        function = _fresh(ref, folder)
        _loaded[key] = function
        return function


def preload(refs: Iterable[tuple[str, str | None]]) -> None:
    """Import every `(ref, folder)` afresh, for the steps of a thread starting or resuming.

    One that fails is forgotten: its step imports it again and suspends with why."""
    with _lock:
        for ref, folder in refs:
            key = (ref, str(folder or ""))
            _loaded.pop(key, None)
            try:
                _loaded[key] = _fresh(ref, folder)
            except PyRefError:
                continue


def _fresh(ref: str, folder: str | Path | None) -> Callable[..., Any]:
    module_name, function_name = split(ref)
    file, local = _module_file(module_name, folder)  # no source parsing: the import will tell
    found = Found(module_name, function_name, file, local)
    module = _import(found, Path(folder) if found.local and folder is not None else None)
    function = getattr(module, found.function, None)
    if function is None:
        raise PyRefError(f"module '{found.module}' has no function '{found.function}'")
    if not callable(function):
        raise PyRefError(f"'{ref}' is a {type(function).__name__}, not a function")
    return cast("Callable[..., Any]", function)


def _import(found: Found, folder: Path | None) -> Any:
    if folder is None:
        return _guarded_import(found.module)
    top = found.module.split(".")[0]
    owned = {n: m for n, m in sys.modules.items() if n == top or n.startswith(top + ".")}
    for name in owned:  # another graph's (or an installed) module of the same name
        del sys.modules[name]
    entry = str(folder)
    sys.path.insert(0, entry)
    importlib.invalidate_caches()
    try:
        return _guarded_import(found.module)
    finally:
        if entry in sys.path:
            sys.path.remove(entry)
        for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
            del sys.modules[name]
        sys.modules.update(owned)


def _guarded_import(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except SyntaxError as exc:
        raise PyRefError(
            f"module '{module}' has a syntax error at {exc.filename}:{exc.lineno}: {exc.msg}"
        ) from None
    except Exception as exc:  # the module's own code failed while importing
        raise PyRefError(
            f"importing module '{module}' failed: {type(exc).__name__}: {exc}"
        ) from None
