"""`orchestrator serve --temporal ADDRESS`: the page over threads on Temporal, in Chromium.

A dev server on 127.0.0.1 and a worker process run the thread (tests/temporal_helpers.py); the
page lists it, shows its steps, takes a person's answer through the form, and follows the
thread to its end.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.temporal_helpers import require_extra

require_extra()

from tests.cli_helpers import Project  # noqa: E402  (after the check above)
from tests.temporal_helpers import (  # noqa: E402, F401  (the fixture is used by name)
    WorkerProcess,
    new_queue,
    temporal_address,
)
from tests.test_temporal import ASK  # noqa: E402
from tests.web_helpers import chromium, served  # noqa: E402

expect.set_options(timeout=30_000)  # a worker on a loaded machine takes its time


@pytest.fixture
def page() -> Iterator[Any]:
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        yield context.new_page()
        context.close()


def test_the_page_answers_a_person_on_temporal(
    tmp_path: Path,
    temporal_address: str,  # noqa: F811
    page: Any,
) -> None:
    project = Project(tmp_path)
    project.graph(ASK, "ask")
    project.script(
        worker={
            "1": "---\n$status: ask\nnote: the plan\n---\n",
            "3": "---\n$status: done\nnote: shipped\n---\n",
        }
    )
    queue = new_queue()
    env = project.env()
    worker = WorkerProcess(temporal_address, queue, env, tmp_path, tmp_path / "worker.log")
    try:
        out = subprocess.run(
            project.cmd("run", "ask", "go", "--temporal", temporal_address, "--task-queue", queue),
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert out.returncode == 3, out.stderr
        with served(None, env=env, temporal=(temporal_address, queue)) as server:
            assert "Temporal" in server.lines[0]
            page.goto(server.url)
            row = page.locator("tr[data-thread]").first
            expect(row.locator("[data-state]")).to_have_text("waiting")
            row.locator("a").click()
            expect(page.locator("details.step")).to_have_count(2)
            form = page.locator('.question form[data-status="yes"]')
            form.locator('textarea[name="field.why"]').fill("it is good")
            form.locator("button").click()
            expect(page.locator(".facts [data-state]")).to_have_text("completed")
            expect(page.locator("[data-ending] pre.final")).to_have_text("Finished: shipped")
            expect(page.locator('details.step[data-role="person"]')).to_have_attribute(
                "data-status", "yes"
            )
    finally:
        worker.stop()
