"""`orchestrator serve` in a real headless Chromium, as a person uses it.

The server runs as its own process (`python -m orchestrator serve --port 0`); threads are made
the way a person makes them: the README's replay of the recorded solve-issue run, a thread of
command and human roles run by the CLI, a thread of Claude roles against the fake Messages API.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from orchestrator import get_thread, run_thread
from orchestrator.run.session import Session, SessionError, open_store
from orchestrator.store.base import StoreError
from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse
from tests.anthropic_fixtures import fake_server
from tests.cli_helpers import Project
from tests.solve_issue_scenario import RECORDING, SAMPLE
from tests.test_answer_cli import GRAPH as HUMAN_GRAPH
from tests.test_answer_cli import PROPOSAL
from tests.web_helpers import chromium, in_thread, served

# A loaded CI machine (2 cores, the whole suite) may take seconds to serve a page; the live
# updates' own waits below are longer still. Nothing here measures time.
expect.set_options(timeout=15_000)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as found:
        yield found


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        yield context.new_page()
    finally:
        context.close()


def replayed(store: Path) -> str:
    """The README's quick start, replayed into `store`; the thread's id."""
    result = in_thread(
        run_thread,
        "solve-issue",
        workspace=SAMPLE,
        store=store,
        replay=RECORDING,
        inputs={"issue": (SAMPLE / "ISSUE.md").read_text()},
    )
    assert result.state == "completed"
    return result.thread_id


def test_the_list_shows_a_replayed_thread_and_filters(tmp_path: Path, page: Any) -> None:
    store = tmp_path / "store"
    thread_id = replayed(store)
    with served(store) as server:
        page.goto(server.url)
        row = page.locator(f'tr[data-thread="{thread_id}"]')
        expect(row).to_have_count(1)
        expect(row.locator("[data-state]")).to_have_text("completed")
        expect(row).to_contain_text("solve-issue")
        expect(row.locator("td.num").first).to_have_text("6")

        page.select_option('select[name="state"]', "waiting")  # submits the filter
        expect(page).to_have_url(server.base + "?state=waiting&graph=&label=&q=")
        expect(page.locator("tr[data-thread]")).to_have_count(0)
        expect(page.locator("p.empty")).to_contain_text("no threads waiting")

        page.goto(server.base + "?graph=solve-issue&state=completed")
        expect(page.locator(f'tr[data-thread="{thread_id}"]')).to_have_count(1)
        page.locator(f'a[href="/threads/{thread_id}"]').click()
        expect(page.locator("h1")).to_contain_text(thread_id)


def test_a_thread_page_shows_every_step_and_draws_the_path(tmp_path: Path, page: Any) -> None:
    store = tmp_path / "store"
    thread_id = replayed(store)
    with served(store) as server:
        page.goto(server.at(f"threads/{thread_id}"))
        steps = page.locator("details.step")
        roles = ["planner", "developer", "reviewer", "developer", "reviewer", "tester"]
        statuses = ["ready", "done", "rejected", "done", "approved", "passed"]
        expect(steps).to_have_count(6)
        for i, (role, status) in enumerate(zip(roles, statuses, strict=True)):
            step = steps.nth(i)
            expect(step).to_have_attribute("data-role", role)
            expect(step).to_have_attribute("data-status", status)
            expect(step.locator(":scope > summary")).to_contain_text(f"#{i + 1} {role} → {status}")
            expect(step.locator(":scope > summary .facts")).to_contain_text("tok")
        review = steps.nth(2)
        review.locator(":scope > summary").click()  # opens the step: its fields and prompt
        expect(review.locator('tr[data-field="comments"]')).to_contain_text("Decimal")
        expect(review.locator("pre.prompt")).to_have_count(1)

        graph = page.locator("svg.graph")
        expect(graph).to_be_visible()
        taken = {
            "$START|_|planner": "1",
            "planner|ready|developer": "1",
            "developer|done|reviewer": "2",
            "reviewer|rejected|developer": "1",
            "reviewer|approved|tester": "1",
            "tester|passed|$END": "1",
        }
        for edge, count in taken.items():
            expect(graph.locator(f'[data-edge="{edge}"]')).to_have_attribute("data-taken", count)
        expect(graph.locator('[data-edge="developer|blocked|planner"]')).to_have_attribute(
            "data-taken", "0"
        )
        expect(graph.locator('[data-edge="developer|done|reviewer"] text')).to_have_text("done ×2")
        expect(graph.locator('[data-node="developer"]')).to_have_attribute("data-visits", "2")
        expect(graph.locator('[data-node="developer"] text')).to_have_text("developer ×2")
        expect(graph.locator('[data-node="requester"]')).not_to_have_class("node visited")

        ending = page.locator("[data-ending]")
        expect(ending).to_have_attribute("data-ending", "done")
        expect(ending.locator("pre.final")).to_contain_text("median()")
        expect(page.locator("#live")).to_have_text("live")  # the live feed is connected


def test_a_running_thread_updates_without_a_reload(
    tmp_path: Path, page: Any, monkeypatch: pytest.MonkeyPatch, write_graph: Any
) -> None:
    """Each model call waits until the test lets it answer: the page is watched meanwhile."""
    path = write_graph(TWO_CLAUDE_STEPS)
    store = tmp_path / "store"
    gates = [threading.Event(), threading.Event()]
    calls: list[int] = []

    def handler(body: dict[str, Any]) -> FakeResponse:
        n = len(calls)
        calls.append(n)
        gates[min(n, 1)].wait(60)
        text = "---\n$status: drafted\ndraft: a first draft\n---\n" if n == 0 else APPROVED
        return FakeResponse.text(text)

    with fake_server(monkeypatch, handler=handler):
        results: list[Any] = []
        runner = threading.Thread(
            target=lambda: results.append(run_thread(path, {"task": "owls"}, store=store))
        )
        runner.start()
        try:
            thread_id = _first_thread(store)
            with served(store) as server:
                page.goto(server.at(f"threads/{thread_id}"))
                expect(page.locator("#live")).to_have_text("live")
                page.evaluate("window.notReloaded = true")
                expect(page.locator(".facts [data-state]")).to_have_text("running")
                expect(page.locator("details.step")).to_have_count(1)
                expect(page.locator("details.step .status")).to_have_text("in progress")

                gates[0].set()  # the writer answers; the reviewer's call waits
                expect(page.locator("details.step")).to_have_count(2, timeout=20_000)
                first = page.locator('details.step[data-step="1"]')
                expect(first).to_have_attribute("data-status", "drafted")
                expect(page.locator('details.step[data-step="2"] .status')).to_have_text(
                    "in progress"
                )
                graph = page.locator("svg.graph")
                expect(graph.locator('[data-node="reviewer"]')).to_have_class(
                    "node visited current"
                )

                gates[1].set()
                expect(page.locator(".facts [data-state]")).to_have_text(
                    "completed", timeout=20_000
                )
                expect(page.locator('details.step[data-step="2"]')).to_have_attribute(
                    "data-status", "approved"
                )
                expect(page.locator("[data-ending] pre.final")).to_contain_text("a first draft")
                expect(graph.locator('[data-edge="reviewer|approved|$END"]')).to_have_attribute(
                    "data-taken", "1"
                )
                assert page.evaluate("window.notReloaded") is True
                assert int(page.locator("body").get_attribute("data-updates")) >= 2
        finally:
            for gate in gates:
                gate.set()
            runner.join(60)
    assert results and results[0].state == "completed"


def _first_thread(store: Path) -> str:
    for _ in range(400):
        try:
            session = Session(open_store(store, readonly=True))
        except SessionError:  # not made yet
            session = None
        if session is not None:
            try:
                rows = session.threads()
                if rows and session.view(rows[0].id).steps:
                    return rows[0].id
            except (SessionError, StoreError):  # being made
                pass
            finally:
                session.store.close()
        threading.Event().wait(0.05)
    raise AssertionError("the thread did not start")


def test_a_person_answers_through_the_form_and_the_thread_completes(
    tmp_path: Path, page: Any
) -> None:
    project = Project(tmp_path)
    project.graph(HUMAN_GRAPH.replace("type: integer,", "type: integer, minimum: 1,"), "approve")
    project.script(worker=[PROPOSAL])
    assert project.run("run", "approve", "owls").returncode == 3
    thread_id = project.threads()[0]["id"]
    with served(project.store, env=project.env()) as server:
        page.goto(server.url)
        page.locator(f'tr[data-thread="{thread_id}"] a').click()
        question = page.locator(".question")
        expect(question.locator("pre.prompt")).to_have_text("Approve? buy owls")
        yes = question.locator('form[data-status="yes"]')
        no = question.locator('form[data-status="no"]')
        expect(no.locator('textarea[name="field.why"]')).to_have_count(1)
        budget = yes.locator('input[name="field.budget"]')
        expect(budget).to_have_attribute("type", "number")
        expect(yes).to_contain_text("in dollars")  # the field's description is its hint

        budget.fill("0")  # the contract says at least 1: refused, nothing recorded
        yes.locator('textarea[name="field.note"]').fill("spend wisely")
        yes.locator("button").click()
        expect(page.locator(".banner.error")).to_contain_text("does not fit the role's contract")
        refused = page.locator('.question form[data-status="yes"]')
        expect(refused.locator("ul.errors")).to_contain_text("budget")
        expect(refused.locator('input[name="field.budget"]')).to_have_value("0")
        expect(refused.locator('textarea[name="field.note"]')).to_have_value("spend wisely")
        assert get_thread(thread_id, store=project.store).state == "waiting"

        refused.locator('input[name="field.budget"]').fill("300")
        refused.locator("button").click()
        expect(page.locator(".facts [data-state]")).to_have_text("completed", timeout=20_000)
        expect(page.locator("[data-ending] pre.final")).to_have_text("Approved with budget 300")
        answered = page.locator('details.step[data-role="boss"]')
        expect(answered).to_have_attribute("data-status", "yes")
    info = get_thread(thread_id, store=project.store)
    assert info.state == "completed"
    assert info.steps[-1].frontmatter == {"$status": "yes", "budget": 300, "note": "spend wisely"}


def test_resume_and_cancel_buttons(
    tmp_path: Path, page: Any, monkeypatch: pytest.MonkeyPatch, write_graph: Any
) -> None:
    path = write_graph(TWO_CLAUDE_STEPS)
    store = tmp_path / "store"
    with fake_server(monkeypatch) as fake:
        fake.fail(400, message="the request was refused today")
        result = in_thread(run_thread, path, {"task": "owls"}, store=store)
        assert result.state == "suspended"
        fake.reply_text("---\n$status: drafted\ndraft: second try\n---\n")
        fake.reply_text(APPROVED)
        with served(store, env=_env_of(fake)) as server:
            page.goto(server.at(f"threads/{result.thread_id}"))
            expect(page.locator(".banner.stopped")).to_contain_text("refused today")
            page.locator('form.resume textarea[name="message"]').fill("try again")
            page.locator("form.resume button").click()
            expect(page.locator(".facts [data-state]")).to_have_text("completed", timeout=20_000)
            expect(page.locator("details.step")).to_have_count(2)
        assert "try again" in json.dumps(fake.message_requests[1]["messages"][-1])

    project = Project(tmp_path / "human")
    project.graph(HUMAN_GRAPH, "approve")
    project.script(worker=[PROPOSAL])
    assert project.run("run", "approve", "owls").returncode == 3
    thread_id = project.threads()[0]["id"]
    with served(project.store, env=project.env()) as server:
        page.goto(server.at(f"threads/{thread_id}"))
        page.once("dialog", lambda dialog: dialog.accept())
        page.locator("form.cancel button").click()
        expect(page.locator(".facts [data-state]")).to_have_text("cancelled")
        expect(page.locator("form.cancel")).to_have_count(0)
        expect(page.locator("form.resume")).to_have_count(0)
    assert get_thread(thread_id, store=project.store).state == "cancelled"


def _env_of(fake: FakeAnthropic) -> dict[str, str]:
    import os  # deferred: a test helper's own

    return {**os.environ, "ANTHROPIC_BASE_URL": fake.url}


def test_a_non_loopback_bind_refuses_requests_without_the_token(tmp_path: Path, page: Any) -> None:
    store = tmp_path / "store"
    thread_id = replayed(store)
    with served(store, "--host", "0.0.0.0") as server:
        assert "?token=" in server.url
        assert any("needs this token" in line for line in server.lines)
        port = server.base.rsplit(":", 1)[1].rstrip("/")
        local = f"http://127.0.0.1:{port}/"
        token = server.token

        response = page.goto(local)
        assert response.status == 401
        expect(page.locator("body")).to_contain_text("a token is needed")
        assert page.goto(f"{local}threads/{thread_id}").status == 401
        assert page.goto(f"{local}static/app.js").status == 401
        assert page.goto(f"{local}?token=not-{token}").status == 401

        assert page.goto(f"{local}?token={token}&state=completed").status == 200
        assert page.url == f"{local}?state=completed"  # the token is not left in the address
        expect(page.locator(f'tr[data-thread="{thread_id}"]')).to_have_count(1)
        page.locator(f'a[href="/threads/{thread_id}"]').click()  # the cookie carries it on
        expect(page.locator("details.step")).to_have_count(6)
        expect(page.locator("#live")).to_have_text("live")

        for headers, status in (
            ({}, 401),
            ({"Authorization": f"Bearer {token}"}, 200),
            ({"Authorization": f"token {token}"}, 200),
        ):
            assert _status(f"{local}threads/{thread_id}/events", headers) == status
        assert _status(f"{local}threads/{thread_id}/cancel", {}, post=True) == 401
    assert get_thread(thread_id, store=store).state == "completed"


def test_a_loopback_bind_answers_only_loopback_host_names(tmp_path: Path) -> None:
    store = tmp_path / "store"
    replayed(store)
    with served(store) as server:
        assert "?token=" in server.url  # on loopback too
        assert _status(server.base, {}) == 401
        assert _status(server.base, server.headers()) == 200
        assert _status(server.base, server.headers(Host="attacker.example")) == 403
        foreign = server.headers(Origin="http://attacker.example")
        assert _status(f"{server.base}threads/x/cancel", foreign, post=True) == 403


def _status(url: str, headers: dict[str, str], *, post: bool = False) -> int:
    request = urllib.request.Request(url, headers=headers, method="POST" if post else "GET")
    if post:
        request.data = b""
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


TWO_CLAUDE_STEPS = """
name: draft-review
description: Claude drafts, Claude reviews.
roles:
  writer:
    description: Drafts
    goal: You draft.
    frontmatter:
      type: object
      properties: { $status: { const: drafted }, draft: { type: string } }
      required: [$status, draft]
  reviewer:
    description: Reviews
    goal: You review.
    frontmatter:
      type: object
      properties: { $status: { const: approved } }
      required: [$status]
graph:
  $START: { _: { role: writer, prompt: "Draft about {{{$inputs.task}}}" } }
  writer: { drafted: { role: reviewer, prompt: "Review: {{{draft}}}" } }
  reviewer: { approved: { role: $END, prompt: "Final: {{{$steps.writer.draft}}}" } }
"""
APPROVED = "---\n$status: approved\n---\nFine."
