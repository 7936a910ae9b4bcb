""" "Fork from here" on the thread page (docs/web.md), in a real Chromium, and its hostile posts.

A worker proposes and a person approves with a budget: the thread completed "Approved". On its
page, step 2 (the person's) offers "fork from here"; the fork's page shows the reply editor
built from the role's contract, one form per status, filled with this thread's reply; the "no"
form is filled and sent, and the browser lands on the new thread, which took the other edge
("Rejected: ..."), says where it was forked from, and is listed on the original's page among
its forks. The control: a step the moderator does not let the thread be forked at (a waiting
branch of a fan-out beyond the first, `allowed().fork_steps`) has no "fork from here".

Hostile posts to the fork's route are in tests/security/test_web_fork_posts.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.cli_helpers import Project
from tests.test_answer_cli import PROPOSAL
from tests.test_threads_cli import HUMAN_GRAPH
from tests.web_helpers import chromium, served

expect.set_options(timeout=20_000)

FAN = """
name: fan
description: A worker proposes, two people answer side by side.
roles:
  worker:
    description: Proposes
    goal: You propose.
    actor: { command: [PYTHON, AGENT] }
    frontmatter:
      type: object
      properties: { $status: { const: proposed }, proposal: { type: string } }
      required: [$status, proposal]
  boss:
    description: Sets the budget
    goal: You decide.
    actor: human
    frontmatter:
      type: object
      properties: { budget: { type: integer } }
      required: [budget]
  chief:
    description: Approves
    goal: You approve.
    actor: human
    frontmatter:
      type: object
      properties: { note: { type: string } }
      required: [note]
graph:
  $START: { _: { role: worker, prompt: "Propose for {{{$inputs.task}}}" } }
  worker:
    proposed:
      parallel:
        - { role: boss, prompt: "Budget for {{{proposal}}}?" }
        - { role: chief, prompt: "Approve {{{proposal}}}?" }
      join: { role: $END, prompt: "{{{$steps.chief.note}}} with {{{$steps.boss.budget}}}" }
"""


@pytest.fixture
def page() -> Iterator[Any]:
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        yield context.new_page()
        context.close()


def approved(tmp_path: Path) -> tuple[Project, str]:
    """A thread that completed: the worker proposed, the boss said yes with a budget."""
    project = Project(tmp_path)
    project.graph(HUMAN_GRAPH, "approve")
    project.script(worker=[PROPOSAL])
    assert project.run("run", "approve", "owls").returncode == 3
    thread_id = project.threads()[0]["id"]
    out = project.run("threads", "answer", thread_id, "--status", "yes", "--set", "budget=300")
    assert out.returncode == 0, out.stderr
    return project, thread_id


def test_fork_from_here_with_a_reply_from_the_contract_takes_the_other_edge(
    tmp_path: Path, page: Any
) -> None:
    project, original = approved(tmp_path)
    with served(project.store, env=project.env()) as server:
        page.goto(server.at(f"threads/{original}"))
        expect(page.locator("[data-ending] pre.final")).to_have_text("Approved with budget 300")
        step = page.locator('details.step[data-step="2"]')
        step.evaluate("card => { card.open = true; }")  # opened, as a person opens it
        step.locator("a.fork").click()

        expect(page.locator("h1")).to_contain_text("from step 2")
        forms = page.locator("form.answer[data-status]")
        expect(forms).to_have_count(2)  # one per status of the boss's contract
        yes = page.locator('form[data-status="yes"]')
        expect(yes.locator('input[name="field.budget"]')).to_have_value("300")  # this reply
        no = page.locator('form[data-status="no"]')
        no.locator('textarea[name="field.why"]').fill("too dear")
        no.locator("button").click()

        expect(page.locator(".facts [data-state]")).to_have_text("completed")
        expect(page.locator("[data-ending] pre.final")).to_have_text("Rejected: too dear")
        forked = page.url.rstrip("/").rsplit("/", 1)[-1]
        assert forked != original
        origin = page.locator(f'[data-forked-from="{original}"]')
        expect(origin).to_contain_text(f"forked from {original} at step 2")
        expect(page.locator('details.step[data-role="boss"]')).to_have_attribute(
            "data-status", "no"
        )
        origin.locator("a").click()
        expect(page.locator(f'[data-fork-thread="{forked}"]')).to_contain_text("at step 2")
        expect(page.locator("[data-ending] pre.final")).to_have_text("Approved with budget 300")


def test_control_no_fork_from_here_on_a_step_the_moderator_does_not_allow(
    tmp_path: Path, page: Any
) -> None:
    """Steps 2 and 3 wait in two branches; one step is committed, so a fork may be made at
    steps 1 and 2 (the fan-out runs again) and not at step 3, the second branch."""
    project = Project(tmp_path)
    project.graph(FAN, "fan")
    project.script(worker=[PROPOSAL])
    assert project.run("run", "fan", "owls").returncode == 3
    thread_id = project.threads()[0]["id"]
    with served(project.store, env=project.env()) as server:
        page.goto(server.at(f"threads/{thread_id}"))
        expect(page.locator("details.step")).to_have_count(3)
        expect(page.locator('details.step[data-step="1"] a.fork')).to_have_count(1)
        expect(page.locator('details.step[data-step="2"] a.fork')).to_have_count(1)
        expect(page.locator('details.step[data-step="3"] a.fork')).to_have_count(0)
        page.goto(server.at(f"threads/{thread_id}/fork?step=3"))
        expect(page.locator(".banner.error")).to_contain_text("no step 3 to fork at")
        expect(page.locator("form")).to_have_count(0)
