"""Shared fixtures: graphs written to temp files, the shared corpus, a clean environment."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.definition.loader import load_graph
from orchestrator.definition.models import Graph

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads the developer's store, models config or real API key."""
    monkeypatch.setenv("ORCHESTRATOR_HOME", str(tmp_path / ".orchestrator-home"))
    monkeypatch.delenv("ORCHESTRATOR_MODEL", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("ORCHESTRATOR_TEMPORAL", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-real-key")


@pytest.fixture
def write_graph(tmp_path: Path) -> Callable[..., Path]:
    """Write a graph file `graphs/NAME.yaml` from dedented YAML text; returns its path."""

    def write(text: str, name: str | None = None) -> Path:
        text = textwrap.dedent(text).lstrip()
        if name is None:
            for line in text.splitlines():
                if line.startswith("name:"):
                    name = line.split(":", 1)[1].strip().strip("\"'")
                    break
        folder = tmp_path / "graphs"
        folder.mkdir(exist_ok=True)
        path = folder / f"{name or 'graph'}.yaml"
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def make_graph(write_graph: Callable[..., Path]) -> Callable[..., Graph]:
    def make(text: str, name: str | None = None) -> Graph:
        return load_graph(write_graph(text, name))

    return make
