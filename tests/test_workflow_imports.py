"""The Temporal workflow imports deterministic modules only (DESIGN "Wave 3 invariants").

A fresh interpreter imports what every workflow needs (asyncio, temporalio's workflow module:
asyncio itself loads `subprocess`, so its presence says nothing), then the workflow module, and
looks at what came in: no sqlite3, no actor, no tool (the sandbox), no SQLite store, and no
module of the package that holds `subprocess`. The control runs the same check over
`orchestrator.run.step` (a step's I/O, which the activities import) and sees it fail.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("temporalio")

PROBE = textwrap.dedent(
    """
    import importlib, json, sys, types
    import asyncio, temporalio.workflow  # what any workflow needs; asyncio loads subprocess
    before = set(sys.modules)
    importlib.import_module(sys.argv[1])
    new = sorted(set(sys.modules) - before)
    ours = [m for m in sys.modules if m == "orchestrator" or m.startswith("orchestrator.")]
    holding = sorted(
        name
        for name in ours
        for value in vars(sys.modules[name]).values()
        if isinstance(value, types.ModuleType) and value.__name__ in ("subprocess", "sqlite3")
        or getattr(value, "__module__", None) in ("subprocess", "asyncio.subprocess")
    )
    print(json.dumps({"new": new, "holding_subprocess": holding}))
    """
)

FORBIDDEN_PREFIXES = ("orchestrator.actors", "orchestrator.tools", "orchestrator.store.sqlite")


def loaded_by(module: str) -> dict[str, list[str]]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, module], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    found: dict[str, list[str]] = json.loads(out.stdout)
    return found


def problems(found: dict[str, list[str]]) -> list[str]:
    bad = [m for m in found["new"] if m in ("sqlite3", "_sqlite3", "subprocess")]
    bad += [m for m in found["new"] if m.startswith(FORBIDDEN_PREFIXES)]
    bad += [f"{m} holds subprocess" for m in found["holding_subprocess"]]
    return bad


def test_the_workflow_module_loads_nothing_that_does_io() -> None:
    found = loaded_by("orchestrator.temporal.workflow")
    assert "orchestrator.core.driver" in found["new"]  # the probe sees what was imported
    assert problems(found) == []


def test_control_a_steps_io_module_is_seen() -> None:
    """The same check over the module that performs a step (actors, sandbox, processes)."""
    bad = problems(loaded_by("orchestrator.run.step"))
    assert any(m.startswith("orchestrator.actors") for m in bad), bad
    assert any(m.startswith("orchestrator.tools") for m in bad), bad
    assert any("holds subprocess" in m for m in bad), bad
