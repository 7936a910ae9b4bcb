"""The SDK is imported in the background once a thread is about to run, not in its first step."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.cli_helpers import LOOP_GRAPH

CLAUDE_GRAPH = LOOP_GRAPH.replace("    actor: { command: [PYTHON, AGENT], timeout: 60 }\n", "")

PROBE = """
import sys, time
from pathlib import Path
from orchestrator.run.session import Session
from orchestrator.definition.loader import load_graph
from orchestrator.store.memory import MemoryStore
graph = load_graph(Path(sys.argv[1]))
assert "anthropic" not in sys.modules
Session(MemoryStore()).preflight(graph, workspace=sys.argv[2], replay=%s)
for _ in range(600):  # the import runs on its own thread; give it up to a minute
    if "anthropic.types" in sys.modules and "anthropic" in sys.modules:
        break
    time.sleep(0.1)
print("anthropic" in sys.modules)
"""


def _probe(tmp_path: Path, graph: str, *, replay: bool, tries: int = 600) -> str:
    path = tmp_path / "loop.yaml"
    path.write_text(graph)
    env = {"PATH": "/usr/bin:/bin", "ANTHROPIC_API_KEY": "sk-test-not-a-real-key"}
    probe = PROBE.replace("range(600)", f"range({tries})")
    done = subprocess.run(
        [sys.executable, "-c", probe % replay, str(path), str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_preflight_of_a_graph_that_asks_claude_starts_importing_the_sdk(tmp_path: Path) -> None:
    assert _probe(tmp_path, CLAUDE_GRAPH, replay=False) == "True"


def test_a_replay_does_not_import_the_sdk(tmp_path: Path) -> None:
    # A replay calls no model; half a second is ample for a background import to show up.
    assert _probe(tmp_path, CLAUDE_GRAPH, replay=True, tries=5) == "False"
