"""The thread page's Resume button is offered exactly when the moderator would resume.

Two cases that drifted when the page decided by itself: a completed thread whose graph has no
`$START.resume` edge (it cannot continue: no button, and the judge's reason instead), and a
thread that failed at an ending of a graph that has one (it can: the button, whose message is
required because the edge reads `{{{$inputs.message}}}`, and pressing it continues the thread).
Command roles run by the real CLI make the threads; the page is read in the system's Chromium.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from orchestrator import get_thread
from tests.cli_helpers import LOOP_GRAPH, Project
from tests.web_helpers import chromium, served

expect.set_options(timeout=15_000)

VERDICT_GRAPH = """
name: verdict
description: A worker whose first try fails the thread at an ending; resume tries again.
roles:
  worker:
    description: Works
    goal: You work.
    actor: { command: [PYTHON, AGENT], timeout: 60 }
    frontmatter:
      type: object
      properties:
        $status: { enum: [bad, done] }
        note: { type: string }
      required: [$status, note]
graph:
  $START:
    _: { role: worker, prompt: "Start {{{$inputs.task}}}" }
    resume: { role: worker, prompt: "Again: {{{$inputs.message}}}" }
  worker:
    bad: { role: $END, ending: broken, outcome: failure, prompt: "Broken: {{{note}}}" }
    done: { role: $END, prompt: "Finished: {{{note}}}" }
"""
BAD = "---\n$status: bad\nnote: it broke\n---\n"
DONE = "---\n$status: done\nnote: all good\n---\n"


@pytest.fixture
def page() -> Iterator[Any]:
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        yield context.new_page()
        context.close()


def test_a_completed_thread_without_a_resume_edge_offers_no_resume(
    tmp_path: Path, page: Any
) -> None:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    project.script(worker=[DONE])
    assert project.run("run", "loop", "owls").returncode == 0
    thread_id = project.threads()[0]["id"]
    with served(project.store, env=project.env()) as server:
        page.goto(server.at(f"threads/{thread_id}"))
        expect(page.locator(".facts [data-state]")).to_have_text("completed")
        expect(page.locator('[data-live="facts"]')).to_contain_text("1 step")  # not "1 steps"
        expect(page.locator('[data-live="facts"]')).not_to_contain_text("1 steps")
        expect(page.locator("form.resume")).to_have_count(0)
        expect(page.locator("form.cancel")).to_have_count(0)
        expect(page.locator('[data-resume="refused"]')).to_contain_text("`$START.resume` edge")


def test_a_thread_failed_at_an_ending_is_resumed_with_its_required_message(
    tmp_path: Path, page: Any
) -> None:
    project = Project(tmp_path)
    project.graph(VERDICT_GRAPH, "verdict")
    project.script(worker=[BAD, DONE])
    assert project.run("run", "verdict", "owls").returncode == 1
    thread_id = project.threads()[0]["id"]
    with served(project.store, env=project.env()) as server:
        page.goto(server.at(f"threads/{thread_id}"))
        expect(page.locator(".facts [data-state]")).to_have_text("failed")
        resume = page.locator("form.resume")
        expect(resume).to_have_count(1)
        message = resume.locator('textarea[name="message"]')
        expect(message).to_have_attribute("required", "")
        message.fill("try harder")
        resume.locator("button").click()
        expect(page.locator(".facts [data-state]")).to_have_text("completed", timeout=20_000)
        expect(page.locator("[data-ending] pre.final")).to_have_text("Finished: all good")
    info = get_thread(thread_id, store=project.store)
    assert info.state == "completed"
    assert info.steps[-1].prompt == "Again: try harder"
