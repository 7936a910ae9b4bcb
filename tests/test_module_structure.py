"""The shape of the code the linter and the loader live in: small modules, no import cycles.

Imports are read from the source (top-level and inside functions alike: an import moved into a
function still makes a cycle, it only hides it from Python at start-up).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import orchestrator

ROOT = Path(orchestrator.__file__).resolve().parent
CHECKED = ("spec", "linter")  # the packages whose modules must not import each other in a cycle
MAX_LINES = 500


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """The orchestrator modules a file imports, anywhere in it."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return {m for m in found if m.startswith("orchestrator")}


def graph_of(packages: tuple[str, ...]) -> dict[str, set[str]]:
    files = [p for pkg in packages for p in sorted((ROOT / pkg).rglob("*.py"))]
    names = {module_name(p) for p in files}
    return {module_name(p): {m for m in imports(p) if m in names} - {module_name(p)} for p in files}


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle, as a list of modules, or [] when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return []

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("package", CHECKED)
def test_no_import_cycles(package: str) -> None:
    # __init__ counts as a module: a module that imports its own package's __init__ makes a cycle
    assert find_cycle(graph_of((package,))) == []


def test_no_cycles_between_the_linter_and_the_spec() -> None:
    assert find_cycle(graph_of(CHECKED)) == []


@pytest.mark.parametrize("package", CHECKED)
def test_modules_stay_small(package: str) -> None:
    for path in sorted((ROOT / package).rglob("*.py")):
        lines = path.read_text(encoding="utf-8").count("\n")
        assert lines < MAX_LINES, f"{path.name} has {lines} lines"


def test_lint_is_the_function_and_linter_the_package() -> None:
    from orchestrator import lint
    from orchestrator.linter import lint as package_lint

    assert callable(lint) and lint is package_lint
    assert lint.__module__ == "orchestrator.linter.passes"
