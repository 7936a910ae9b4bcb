"""pytest plugin for testing graphs (registered through the `pytest11` entry point).

Why a plugin: a folder of recordings should be a test suite without anyone writing a test
function per file, and a diverging recording should fail with the divergence itself (step,
roles, validation errors), not with a traceback through the engine. What it adds:

* ini option `orchestrator_recordings`: folders whose `*.yaml`/`*.yml` files are collected as
  test items (`FILE::replay`). Each replays the recording through the graph its `graph:` names
  and fails with the first divergence. The folders must lie where pytest collects (for example
  under `testpaths`); pytest calls this plugin for every file it visits.
* ini option `orchestrator_graphs`: folders (or graph files) where a recording's `graph:` name
  is looked up; default `graphs/` next to the ini file, then the bundled graphs.
* fixture `graph_yaml`: write a graph from YAML text into the test's `tmp_path` and load it.

The assertions themselves (`assert_path`, `assert_statuses`, `assert_prompt`,
`assert_same_route`, `recordings`, `reply`, `simulate`) are plain functions in
`orchestrator.testing`, so they also work outside pytest.

Import-light on purpose: pytest imports this module for every run in an environment where
orchestrator is installed, including projects that never test a graph, so at import time it
needs only pytest and the standard library. The engine is imported when a recording item runs.
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..actors.recording import Recording
    from ..definition.models import Graph

RECORDING_SUFFIXES = (".yaml", ".yml")
_GRAPHS: pytest.StashKey[dict[Path, Graph]] = pytest.StashKey()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "orchestrator_recordings",
        type="paths",
        default=[],
        help="orchestrator: folders whose recordings (*.yaml, *.yml) are collected as tests "
        "that replay each one through its graph",
    )
    parser.addini(
        "orchestrator_graphs",
        type="paths",
        default=[],
        help="orchestrator: folders (or graph files) where a recording's `graph:` name is "
        "looked up (default: graphs/ next to the ini file, then the bundled graphs)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_GRAPHS] = {}


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    # Called for every file pytest visits: return fast unless it is a configured recording.
    if file_path.suffix not in RECORDING_SUFFIXES:
        return None
    folders: list[Path] = parent.config.getini("orchestrator_recordings")
    if not folders:
        return None
    resolved = file_path.resolve()
    for folder in folders:
        folder = folder.resolve()
        if resolved == folder or folder in resolved.parents:
            collector: pytest.Collector = RecordingFile.from_parent(parent, path=file_path)
            return collector
    return None


class RouteDiverged(AssertionError):
    """A recording no longer takes the same route; the message is the replay's report."""


class RecordingFile(pytest.File):
    """A recording file: one test item that replays it."""

    def collect(self) -> Iterator[pytest.Item]:
        yield RecordingItem.from_parent(self, name="replay")


class RecordingItem(pytest.Item):
    """Replays one recording through the graph it names; fails with the first divergence."""

    def runtest(self) -> None:
        # deferred: pytest imports this plugin in every run; the engine loads only for a recording
        from ..actors.recording import load_recording
        from ..replay import replay_recording

        # Paths relative to the rootdir keep the failure short and the same on every machine.
        recording = dataclasses.replace(load_recording(self.path), path=self._shown(self.path))
        graph = _graph_for(self.config, recording)
        report = replay_recording(graph, recording)
        self.user_properties.append(("same_route", report.same_route))
        if not report.same_route:
            where = self._shown(Path(graph.path)) if graph.path else "bundled"
            raise RouteDiverged(
                f"the recording no longer takes the same route through graph '{graph.name}' "
                f"({where})\n" + textwrap.indent(report.describe(), "  ")
            )

    def _shown(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.config.rootpath.resolve()).as_posix()
        except ValueError:
            return str(path)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | Any:
        # Our own failures are explained by their message; a traceback through the engine
        # would only hide it. Anything else is a bug and keeps pytest's full report.
        from ..actors.recording import RecordingError
        from ..definition.problems import GraphError

        if isinstance(excinfo.value, GraphError):
            return "\n".join(p.format() for p in excinfo.value.problems)
        if isinstance(excinfo.value, RouteDiverged | RecordingError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"replay {self._shown(self.path)}"


def _graph_for(config: pytest.Config, recording: Recording) -> Graph:
    """The graph a recording names, from `orchestrator_graphs`, ./graphs or the bundled ones."""
    # deferred: pytest imports this plugin in every run; the engine loads only for a recording
    from ..actors.recording import RecordingError
    from ..definition.loader import load_graph, resolve_graph_path
    from ..definition.problems import GraphError
    from ..definition.reserved import GRAPH_SUFFIXES

    name = recording.graph
    if not name:
        raise RecordingError(f"{recording.path}: the recording names no `graph:` to replay it in")
    base = config.inipath.parent if config.inipath is not None else config.rootpath
    places: list[Path] = config.getini("orchestrator_graphs") or [base / "graphs"]
    path: Path | None = None
    for place in places:
        if place.is_file() and place.stem == name:
            path = place
            break
        for suffix in GRAPH_SUFFIXES:
            if (place / f"{name}{suffix}").is_file():
                path = place / f"{name}{suffix}"
                break
        if path is not None:
            break
    if path is None:
        try:
            path = resolve_graph_path(name, cwd=base)
        except GraphError as err:
            raise RecordingError(
                f"{recording.path}: the recording is of graph '{name}', which is not in "
                f"{', '.join(str(p) for p in places)} nor among the bundled graphs; set "
                f"`orchestrator_graphs` in the pytest configuration to the folder holding it"
            ) from err
    cache = config.stash[_GRAPHS]
    key = path.resolve()
    if key not in cache:
        cache[key] = load_graph(path)
    return cache[key]


@pytest.fixture
def graph_yaml(tmp_path: Path) -> Callable[[str], Graph]:
    """Write a graph from (indented) YAML text to `tmp_path/graphs/NAME.yaml` and load it.

    Library roles for `extends:` can be written to `tmp_path / "roles"` first.
    """

    def make(text: str) -> Graph:
        # deferred: pytest imports this plugin in every run; graphs load only when a test asks
        import yaml

        from ..definition.loader import load_graph

        text = textwrap.dedent(text).lstrip()
        data = yaml.safe_load(text)
        name = data.get("name") if isinstance(data, dict) else None
        folder = tmp_path / "graphs"
        folder.mkdir(exist_ok=True)
        path = folder / f"{name or 'graph'}.yaml"
        path.write_text(text, encoding="utf-8")
        return load_graph(path)

    return make
