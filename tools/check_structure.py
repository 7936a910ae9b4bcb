#!/usr/bin/env python3
"""Check the structure rules of a Python package; exit 1 listing every offender.

    python tools/check_structure.py [--root DIR] [--package NAME] [--max-lines N]

Defaults: the repository this file is in, the package `orchestrator`, 500 lines. The rules:

1. **No long modules.** No module of the package has more than `--max-lines` lines.
2. **No import cycles.** The import graph is built from the `ast` of every module: imports at
   module level and inside functions and classes, relative imports resolved; `from P import x`
   is an import of the module `P.x` when there is one, else of `P`. Importing `a.b.c` also runs
   `a/__init__` and `a/b/__init__`, so the graph has those edges too (not towards the
   importer's own packages: they are already running when it runs), and a package `__init__`
   that eagerly imports its submodules is seen on the cycles it makes. Imports under
   `if TYPE_CHECKING:` are left out: they never run, so they cannot make a cycle at run time.
   Every import that lies on a cycle is shown in at least one reported cycle (the shortest one
   through it), as a chain `a -> b -> a`.
3. **Imports inside a function say why.** The project imports at the top of a module, except
   where importing late keeps start-up fast (or breaks what would be a cycle). Such an import
   needs a comment on its own line or on the line above, saying why; a run of consecutive
   imports (blank lines between isort's groups allowed) shares the comment above its first
   line. A bare `# noqa` or `# type: ignore` does not say why.
4. **No loose modules.** The package's top level holds only `__init__` and `__main__`; every
   other module belongs to the subpackage of its idea.
5. **No cycles between packages.** A package is a folder directly under the package (with every
   module below it); package A importing package B (any module of A importing any module of B,
   as in rule 2) and B importing A, directly or through others, is a cycle even when no module
   cycle makes it: the layers must point one way. Each reported cycle names, for every arrow,
   one import that makes it.

It needs nothing but the standard library, and imports nothing it checks.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_LINES = 500
# Comment markers that do not say why on their own.
TOOL_MARKERS = re.compile(r"(noqa\b(:\s*[A-Z0-9, ]+)?|type:\s*ignore(\[[^\]]*\])?|pragma:[^#]*)")


@dataclass
class Module:
    name: str  # dotted
    path: Path
    is_package: bool
    lines: list[str] = field(default_factory=list)
    tree: ast.Module | None = None


# --------------------------------------------------------------------------- finding modules


def find_modules(root: Path, package: str) -> dict[str, Module]:
    """Every `.py` file of the package under `root`, by dotted name."""
    base = root / package.replace(".", "/")
    modules: dict[str, Module] = {}
    for path in sorted(base.rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        parts = list(rel.parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        text = path.read_text(encoding="utf-8")
        name = ".".join(parts)
        modules[name] = Module(
            name, path, is_package, text.splitlines(), ast.parse(text, str(path))
        )
    return modules


# --------------------------------------------------------------------------- imports


@dataclass(frozen=True)
class Import:
    node: ast.Import | ast.ImportFrom
    in_function: bool
    type_checking: bool


def imports_of(tree: ast.Module) -> list[Import]:
    """Every import statement, with whether it is inside a function or under TYPE_CHECKING."""
    found: list[Import] = []

    def visit(node: ast.AST, in_function: bool, type_checking: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                found.append(Import(child, in_function, type_checking))
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                visit(child, True, type_checking)
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    visit(ast.Module(body=[stmt], type_ignores=[]), in_function, True)
                for stmt in child.orelse:
                    visit(ast.Module(body=[stmt], type_ignores=[]), in_function, type_checking)
            else:
                visit(child, in_function, type_checking)

    visit(tree, False, False)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def targets(module: Module, node: ast.Import | ast.ImportFrom, known: set[str]) -> set[str]:
    """The modules of the package that an import statement imports."""
    if isinstance(node, ast.Import):
        return {_known_prefix(alias.name, known) for alias in node.names} - {""}
    if node.level:
        package = module.name if module.is_package else module.name.rpartition(".")[0]
        parts = package.split(".")
        if node.level - 1 >= len(parts):
            return set()  # a relative import above the top: Python refuses it too
        base = ".".join(parts[: len(parts) - (node.level - 1)])
        source = f"{base}.{node.module}" if node.module else base
    else:
        source = node.module or ""
    found = set()
    for alias in node.names:
        submodule = f"{source}.{alias.name}"
        found.add(submodule if submodule in known else _known_prefix(source, known))
    return found - {""}


def _known_prefix(name: str, known: set[str]) -> str:
    """`name`, or its longest prefix that is a module of the package; "" when none is."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in known:
            return candidate
        parts.pop()
    return ""


def import_graph(modules: dict[str, Module]) -> dict[str, set[str]]:
    """Module -> the modules that importing it runs first (rule 2)."""
    known = set(modules)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for module in modules.values():
        assert module.tree is not None
        for imp in imports_of(module.tree):
            if not imp.type_checking:
                graph[module.name] |= targets(module, imp.node, known) - {module.name}
    for name, imported in graph.items():
        running = {name, *_packages_of(name)}
        for target in list(imported):
            # `import a.b.c` runs a/__init__ and a/b/__init__ before c.
            imported |= {p for p in _packages_of(target) if p in known} - running
    return graph


def _packages_of(name: str) -> list[str]:
    """The packages holding a dotted module, outermost first: a.b.c -> [a, a.b]."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


# --------------------------------------------------------------------------- the rules


def long_modules(modules: dict[str, Module], root: Path, max_lines: int) -> list[str]:
    return [
        f"{m.path.relative_to(root)}: {len(m.lines)} lines (at most {max_lines})"
        for m in modules.values()
        if len(m.lines) > max_lines
    ]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The shortest cycle through every import that lies on a cycle, each once, sorted."""
    found: set[tuple[str, ...]] = set()
    for component in _strongly_connected(graph):
        for source in sorted(component):
            for target in sorted(graph[source] & component):
                back = _shortest_path(graph, target, source, component)
                if back is not None:
                    found.add(_rotated([source, *back[:-1]]))
    return sorted([*cycle, cycle[0]] for cycle in found)


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's components with more than one module (a module importing itself is skipped)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    counter = 0

    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop(0)
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)
    return components


def _shortest_path(
    graph: dict[str, set[str]], start: str, goal: str, within: set[str]
) -> list[str] | None:
    """The modules from `start` to `goal` (both included), by breadth-first search."""
    previous: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            path = [node]
            while (before := previous[path[-1]]) is not None:
                path.append(before)
            return path[::-1]
        for nxt in sorted(graph[node] & within):
            if nxt not in previous:
                previous[nxt] = node
                queue.append(nxt)
    return None


def _rotated(cycle: list[str]) -> tuple[str, ...]:
    """The cycle starting at its smallest module, so each cycle is found once."""
    first = cycle.index(min(cycle))
    return tuple(cycle[first:] + cycle[:first])


def loose_modules(modules: dict[str, Module], root: Path, package: str) -> list[str]:
    """Rule 4: modules at the package's top level other than `__init__` and `__main__`."""
    return [
        f"{m.path.relative_to(root)}: a module at the top level of {package} "
        "(only __init__ and __main__ belong there: move it into the package of its idea)"
        for m in modules.values()
        if not m.is_package
        and m.name.rpartition(".")[0] == package
        and m.name != f"{package}.__main__"
    ]


def package_cycles(graph: dict[str, set[str]], package: str) -> list[str]:
    """Rule 5: cycles between the packages directly under `package`, each arrow with a witness."""
    depth = package.count(".") + 2

    def unit(name: str) -> str:
        return ".".join(name.split(".")[:depth])

    units: dict[str, set[str]] = {}
    witness: dict[tuple[str, str], tuple[str, str]] = {}
    for importer in sorted(graph):
        units.setdefault(unit(importer), set())
        # The module named by the import statement, before the packages it runs on the way.
        for target in sorted(graph[importer], key=lambda t: (-t.count("."), t)):
            arrow = (unit(importer), unit(target))
            if arrow[0] != arrow[1]:
                units[arrow[0]].add(arrow[1])
                units.setdefault(arrow[1], set())
                witness.setdefault(arrow, (importer, target))
    found = []
    for cycle in cycles(units):
        arrows = zip(cycle, cycle[1:], strict=False)  # the chain repeats its first package
        reasons = "; ".join("{} imports {}".format(*witness[arrow]) for arrow in arrows)
        found.append("package cycle: " + " -> ".join(cycle) + f" ({reasons})")
    return found


def unexplained_late_imports(modules: dict[str, Module], root: Path) -> list[str]:
    problems = []
    for module in modules.values():
        assert module.tree is not None
        late = [imp.node for imp in imports_of(module.tree) if imp.in_function]
        starts = {node.lineno for node in late}
        ends = {node.end_lineno or node.lineno for node in late}
        for node in late:
            if not _explained(node, module.lines, starts, ends):
                where = f"{module.path.relative_to(root)}:{node.lineno}"
                statement = " ".join(module.lines[node.lineno - 1].split())
                problems.append(
                    f"{where}: import inside a function without a comment saying why: {statement}"
                )
    return problems


def _explained(node: ast.stmt, lines: list[str], starts: set[int], ends: set[int]) -> bool:
    """A comment on one of the statement's lines, or above it (or above its run of imports)."""
    last = node.end_lineno or node.lineno
    if any(_says_why(_comment(lines[n - 1])) for n in range(node.lineno, last + 1)):
        return True
    above = node.lineno - 1
    while above >= 1:
        text = lines[above - 1].strip()
        if text.startswith("#"):
            return _says_why(text)
        if not text:  # blank lines inside a run of imports (isort's groups) do not end it
            while above > 1 and not lines[above - 2].strip():
                above -= 1
            above -= 1
            if above < 1 or above not in ends:
                return False
        if above not in ends:
            return False
        # The line above ends another late import: the run shares the comment above it.
        above = max(s for s in starts if s <= above) - 1
    return False


def _comment(line: str) -> str:
    """The comment of a line of code ("" when none); good enough for import lines."""
    at = line.find("#")
    return line[at:] if at >= 0 else ""


def _says_why(comment: str) -> bool:
    text = TOOL_MARKERS.sub("", comment.lstrip("#")).strip(" #:")
    return bool(text)


# --------------------------------------------------------------------------- main


def check(root: Path, package: str, max_lines: int = MAX_LINES) -> list[str]:
    """Every offence, one line each (empty when the package keeps the rules)."""
    modules = find_modules(root, package)
    graph = import_graph(modules)
    problems = long_modules(modules, root, max_lines)
    problems += ["import cycle: " + " -> ".join(c) for c in cycles(graph)]
    problems += unexplained_late_imports(modules, root)
    problems += loose_modules(modules, root, package)
    problems += package_cycles(graph, package)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=REPO, help="the folder holding the package")
    parser.add_argument("--package", default="orchestrator")
    parser.add_argument("--max-lines", type=int, default=MAX_LINES)
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if not (root / args.package.replace(".", "/")).is_dir():
        print(f"no package {args.package} in {root}", file=sys.stderr)
        return 2
    problems = check(root, args.package, args.max_lines)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} structure problem(s) in {args.package}", file=sys.stderr)
        return 1
    print(f"structure ok: {args.package}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
