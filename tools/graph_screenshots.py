#!/usr/bin/env python3
"""Pictures of graph drawings for the docs, taken with the system's headless Chromium.

    python tools/graph_screenshots.py

Writes:
- docs/graph-implement-tasks.png: `orchestrator graph implement-tasks --format svg --thread ID`
  for a thread replayed from examples/implement-tasks.recording.yaml (its path and counts);
- docs/graph-fan-out.png: a graph with a 5-way fan-out and its join, loops, a `for_each`
  into a subgraph role (tests/drawing_graphs.py), drawn the same way;
- docs/web-threads.png and docs/web-thread.png, by `python -m tests.web_screenshots`.

Everything runs offline: the replay calls no model, Graphviz's `dot` and Chromium are local
programs (Playwright drives Chromium through `executable_path`; no browser is downloaded).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
EXAMPLES = REPO / "examples"


def orchestrator(*args: str, cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"orchestrator {' '.join(args)} failed:\n{out.stderr}")
    return out.stdout


def drawings(folder: Path) -> dict[str, str]:
    """The SVG texts to photograph, by file name."""
    store = folder / "store"
    orchestrator(
        "run",
        "implement-tasks",
        "--workspace",
        str(EXAMPLES / "sample-repo"),
        "-i",
        f"spec=@{EXAMPLES / 'tasks-spec.md'}",
        "--replay",
        str(EXAMPLES / "implement-tasks.recording.yaml"),
        "--store",
        str(store),
        cwd=folder,
    )
    listed = orchestrator("threads", "list", "--json", "--store", str(store), cwd=folder)
    thread = next(
        t["id"] for t in map(json.loads, listed.splitlines()) if t["graph"] == "implement-tasks"
    )
    sys.path.insert(0, str(REPO))
    # deferred: the test graphs live in the repository's tests, found through sys.path above
    from tests.drawing_graphs import CHILD, FAN5

    graphs = folder / "graphs"
    graphs.mkdir()
    (graphs / "child.yaml").write_text(CHILD)
    fan = FAN5.replace("PYTHON", json.dumps(sys.executable)).replace("AGENT", '"agent.py"')
    (graphs / "fan5.yaml").write_text(fan)
    return {
        "graph-implement-tasks.png": orchestrator(
            "graph",
            "implement-tasks",
            "--format",
            "svg",
            "--thread",
            thread,
            "--store",
            str(store),
            cwd=folder,
        ),
        "graph-fan-out.png": orchestrator("graph", "fan5", "--format", "svg", cwd=folder),
    }


def photograph(svgs: dict[str, str]) -> None:
    # deferred: Playwright is a development dependency, loaded only to take the pictures
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("ORCHESTRATOR_CHROMIUM") or shutil.which("chromium")
    if chromium is None:
        raise SystemExit("no Chromium: `apt-get install -y chromium`")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--headless", "--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 900, "height": 600}, device_scale_factor=2)
            for name, svg in svgs.items():
                page.set_content(f"<!doctype html><body style='margin:0'>{svg}</body>")
                page.locator("svg").screenshot(path=str(DOCS / name))
                print(f"wrote {DOCS / name}")
        finally:
            browser.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        photograph(drawings(Path(folder)))
    subprocess.run(
        [sys.executable, "-m", "tests.web_screenshots"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=True,
        timeout=600,
    )


if __name__ == "__main__":
    main()
