"""ARCHITECTURE.md stays true: its table names every package of `orchestrator`, in an order the
imports keep (a package imports only packages above it), and every module it points to exists."""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_check_structure import checker

REPO = Path(__file__).resolve().parents[1]
TEXT = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
ROW = re.compile(r"^\| `(\w+)/` \| (\d+) \| ([\d,]+) \|", re.M)


def package_imports() -> dict[str, set[str]]:
    """Package -> the packages its modules import at run time (the checker's graph)."""
    graph = checker.import_graph(checker.find_modules(REPO, "orchestrator"))
    out: dict[str, set[str]] = {}
    for module, imported in graph.items():
        parts = module.split(".")
        if len(parts) < 2 or (REPO / "orchestrator" / f"{parts[1]}.py").exists():
            continue  # the package's own __init__ and __main__
        out.setdefault(parts[1], set()).update(
            t.split(".")[1]
            for t in imported
            if len(t.split(".")) > 1 and t.split(".")[1] != parts[1]
        )
    return out


def test_the_table_names_every_package_once() -> None:
    listed = [m.group(1) for m in ROW.finditer(TEXT)]
    packages = sorted(p.parent.name for p in (REPO / "orchestrator").glob("*/__init__.py"))
    assert sorted(listed) == packages and len(set(listed)) == len(listed)


def test_the_table_is_in_dependency_order() -> None:
    order = [m.group(1) for m in ROW.finditer(TEXT)]
    upward = [
        f"{package} imports {other}, listed below it"
        for package, imported in package_imports().items()
        for other in imported
        if other in order and order.index(other) > order.index(package)
    ]
    assert upward == []


def test_every_module_it_names_exists() -> None:
    named = set(re.findall(r"`((?:\w+/)+\w+\.py)`", TEXT))
    assert named, "the map names modules"
    missing = [
        n
        for n in sorted(named)
        if not (REPO / "orchestrator" / n).exists() and not (REPO / n).exists()
    ]
    assert missing == []
