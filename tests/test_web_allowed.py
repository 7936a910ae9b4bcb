"""The thread page's forms and buttons are those `allowed()` lists, in a real Chromium.

Two people wait in the branches of one fan-out: the page shows one answer card per waiting
step (the moderator takes an answer for either), no Resume (a waiting thread is answered,
J15), and Cancel. The second branch is answered first through its own form; the page then
offers the first branch's form alone, and answering it completes the thread.

A thread waits for a role its graph no longer has (the file was edited): the moderator refuses
any answer for it (J8) and takes a resume, which decides the step again (J17). The page used to
send the person to `threads answer --file`, which is refused; it now says why no answer can be
given and offers Resume, which continues the thread under the changed graph.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from orchestrator.core.events import StepCommitted
from orchestrator.run.session import Session, open_store
from tests.cli_helpers import Project
from tests.test_answer_cli import PROPOSAL, TWO_PEOPLE
from tests.test_threads_cli import HUMAN_GRAPH
from tests.web_helpers import chromium, served

expect.set_options(timeout=15_000)


@pytest.fixture
def page() -> Iterator[Any]:
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        yield context.new_page()
        context.close()


def test_each_waiting_branch_has_its_own_form_and_either_may_go_first(
    tmp_path: Path, page: Any
) -> None:
    project = Project(tmp_path)
    project.graph(TWO_PEOPLE, "two")
    assert project.run("run", "two", "owls").returncode == 3
    thread_id = project.threads()[0]["id"]
    with served(project.store, env=project.env()) as server:
        page.goto(server.at(f"threads/{thread_id}"))
        expect(page.locator(".facts [data-state]")).to_have_text("waiting")
        cards = page.locator(".question")
        expect(cards).to_have_count(2)
        expect(page.locator('.question[data-step="1"] pre.prompt')).to_have_text("Budget for owls?")
        chief = page.locator('.question[data-step="2"]')
        expect(chief.locator("pre.prompt")).to_have_text("Approve owls?")
        expect(chief.locator('input[name="step"]')).to_have_value("2")
        expect(page.locator("form.resume")).to_have_count(0)  # answer it: no resume (J15)
        expect(page.locator("form.cancel")).to_have_count(1)

        chief.locator('textarea[name="field.note"]').fill("go")
        chief.locator("button").click()
        expect(page.locator('details.step[data-role="chief"]')).to_have_attribute(
            "data-status", "yes"
        )
        expect(page.locator(".question")).to_have_count(1)
        boss = page.locator('.question[data-step="1"]')
        boss.locator('input[name="field.budget"]').fill("5")
        boss.locator("button").click()
        expect(page.locator(".facts [data-state]")).to_have_text("completed", timeout=20_000)
        expect(page.locator("[data-ending] pre.final")).to_have_text("go with 5")
    session = Session(open_store(project.store, readonly=True))
    commits = [s.event for s in session.events(thread_id) if isinstance(s.event, StepCommitted)]
    assert [(c.step, c.role) for c in commits] == [(2, "chief"), (1, "boss")]  # the second first


def test_a_thread_waiting_for_a_role_the_graph_lost_offers_resume_not_an_answer(
    tmp_path: Path, page: Any
) -> None:
    project = Project(tmp_path)
    path = project.graph(HUMAN_GRAPH, "approve")
    project.script(worker=[PROPOSAL])
    assert project.run("run", "approve", "owls").returncode == 3
    thread_id = project.threads()[0]["id"]
    path.write_text(path.read_text().replace("boss", "chief"))  # the role is renamed
    with served(project.store, env=project.env()) as server:
        page.goto(server.at(f"threads/{thread_id}"))
        expect(page.locator(".facts [data-state]")).to_have_text("waiting")
        expect(page.locator(".question")).to_have_count(0)
        expect(page.locator("body")).not_to_contain_text("--file")
        expect(page.locator('[data-answer="none"]')).to_contain_text(
            "no longer has role 'boss', which step 2 waits for"
        )
        resume = page.locator("form.resume")
        expect(resume).to_have_count(1)
        resume.locator("button").click()
        question = page.locator('.question[data-step="2"]')
        expect(question).to_contain_text("as chief")
        expect(question.locator("pre.prompt")).to_have_text("Approve? buy owls")


def test_a_hostile_step_in_an_answer_post_is_no_server_error(tmp_path: Path) -> None:
    """The answer form's hidden `step` comes from the browser: a non-ASCII digit or a number
    too long for int() is read as no step (the first waiting one, checked by the moderator),
    never a 500; a step that does not wait is refused with the page's notice (409)."""
    import urllib.error  # why: only this test posts without a browser
    import urllib.parse
    import urllib.request

    project = Project(tmp_path)
    project.graph(TWO_PEOPLE, "two")
    assert project.run("run", "two", "owls").returncode == 3
    thread_id = project.threads()[0]["id"]

    def post(step: str) -> tuple[int, str]:
        body = urllib.parse.urlencode({"step": step, "status": "_", "field.budget": "x"})
        request = urllib.request.Request(
            server.at(f"threads/{thread_id}/answer").split("?")[0],
            data=body.encode(),
            headers=server.headers(**{"Content-Type": "application/x-www-form-urlencoded"}),
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    with served(project.store, env=project.env()) as server:
        for hostile in ("²", "9" * 5000):
            status, page = post(hostile)
            assert status == 422, (status, page[:300])  # read as the first step: budget refused
            assert "does not fit the role" in page
        status, page = post("7")  # control: a step that does not wait
        assert status == 409 and "no longer waits for this answer" in page
