"""The loader's builder for files without anchors (`_PlainBuilder` in
orchestrator/definition/yamlpos.py) gives the same values and the same positions as the full one
on every graph the repository and the shared corpus hold, and on random documents; a file with
an anchor still takes the full builder (its alias limits need it)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.definition import yamlpos

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
FILES = [
    *sorted((ROOT / "graphs").glob("*.yaml")),
    *sorted((ROOT / "tests" / "lint_cases").glob("*.yaml")),
    *(sorted(CORPUS.rglob("*.yaml")) if CORPUS.is_dir() else []),
]


def built(builder: type[yamlpos._Builder], text: str) -> tuple[Any, yamlpos.SourceMap]:
    smap = yamlpos.SourceMap("f")
    loader = yamlpos.Yaml12Loader(text)
    try:
        node = loader.get_single_node()
        assert node is not None
        return builder(loader, smap).build(node, (), 0), smap
    finally:
        loader.dispose()


def assert_same(text: str) -> None:
    full, full_map = built(yamlpos._Builder, text)
    plain, plain_map = built(yamlpos._PlainBuilder, text)
    assert plain == full
    assert plain_map.values == full_map.values
    assert plain_map.keys == full_map.keys
    assert plain_map.duplicates == full_map.duplicates


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_graph_file_builds_the_same(path: Path) -> None:
    # (a file with anchors too: the plain builder expands its aliases alike, only uncounted)
    assert_same(path.read_text(encoding="utf-8"))


def random_value(rng: random.Random, depth: int) -> str:
    pick = rng.random()
    if depth > 3 or pick < 0.4:
        return rng.choice(["1", "true", "text", "'q'", "null", "2.5", "{}", "[]", "yes"])
    if pick < 0.7:
        items = [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
        return "[" + ", ".join(items) + "]"
    keys = [rng.choice(["a", "b", "c", "<<", "1", "on"]) for _ in range(rng.randint(0, 4))]
    pairs = []
    for key in keys:
        value = "{m: 1}" if key == "<<" else random_value(rng, depth + 1)
        pairs.append(f"{key}: {value}")
    return "{" + ", ".join(pairs) + "}"


@pytest.mark.parametrize("seed", range(100))
def test_random_documents_build_the_same(seed: int) -> None:
    assert_same("doc: " + random_value(random.Random(seed), 0) + "\nend: 1\n")


def test_a_file_with_an_anchor_takes_the_full_builder(monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[str] = []
    for cls in (yamlpos._Builder, yamlpos._PlainBuilder):

        class Spy(cls):  # type: ignore[valid-type,misc]
            def __init__(self, loader: Any, smap: yamlpos.SourceMap, name: str = cls.__name__):
                taken.append(name)
                super().__init__(loader, smap)

        monkeypatch.setattr(yamlpos, cls.__name__, Spy)
    yamlpos.load_yaml("a: &x [1]\nb: *x\n")
    yamlpos.load_yaml("a: [1]\nb: 'Q and A'\n")
    assert taken == ["_Builder", "_PlainBuilder"]


def test_graph_files_are_composed_by_libyaml_when_pyyaml_has_it() -> None:
    # PyYAML built with libyaml (as every wheel is): the loader's base is the C loader, so
    # composition runs in C; positions still come from the nodes' marks (checked above)
    assert yaml.__with_libyaml__
    assert issubclass(yamlpos.Yaml12Loader, yaml.CSafeLoader)
