"""Screenshots of the web page for the docs: `python -m tests.web_screenshots`.

Replays the README's quick start and leaves a thread waiting for a person, serves them, and
writes docs/web-threads.png and docs/web-thread.png with the system's headless Chromium.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from orchestrator import run_thread
from tests.cli_helpers import Project
from tests.solve_issue_scenario import RECORDING, SAMPLE
from tests.test_answer_cli import GRAPH, PROPOSAL
from tests.web_helpers import chromium, served

DOCS = Path(__file__).resolve().parents[1] / "docs"


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        project = Project(Path(folder))
        project.graph(GRAPH, "approve")
        project.script(worker=[PROPOSAL])
        os.environ.update(project.env())
        result = run_thread(
            "solve-issue",
            workspace=SAMPLE,
            store=project.store,
            replay=RECORDING,
            inputs={"issue": (SAMPLE / "ISSUE.md").read_text()},
        )
        assert project.run("run", "approve", "owls").returncode == 3
        with served(project.store, env=project.env()) as server, chromium() as browser:
            page = browser.new_page(viewport={"width": 1280, "height": 560})
            page.goto(server.url)
            page.wait_for_selector("#live.on")
            page.screenshot(path=str(DOCS / "web-threads.png"))
            page.set_viewport_size({"width": 1280, "height": 1000})
            page.goto(f"{server.base}threads/{result.thread_id}")
            page.wait_for_selector("#live.on")
            page.locator('details.step[data-step="3"] > summary').click()
            page.screenshot(path=str(DOCS / "web-thread.png"), full_page=True)
    print(f"wrote {DOCS / 'web-threads.png'} and {DOCS / 'web-thread.png'}")


if __name__ == "__main__":
    main()
