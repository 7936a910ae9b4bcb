"""The web page's list of threads with titles and labels (docs/web.md), in the system's Chromium:
the filter form's label and search fields show only the matching rows, titles are shown, and a
hostile title (markup, a terminal escape, a bidi override) is shown as inert text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from orchestrator.definition.loader import load_graph
from orchestrator.run.session import Session
from orchestrator.store.sqlite import SqliteStore
from tests.test_titles import ASK
from tests.web_helpers import chromium, served

HOSTILE = '<img src=x onerror="document.title=1">\x1b[31mred\u202eevil'
expect.set_options(timeout=15_000)  # a loaded machine serves slowly; nothing measures time


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as found:
        yield found


def store_with_threads(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    path = tmp_path / "review.yaml"
    path.write_text(ASK.replace("NAME", "review"))
    graph = load_graph(path)
    store = tmp_path / "store"
    session = Session(SqliteStore(store))
    made = {}
    for task, title, labels in [
        ("Fix the login bug", None, {"team": "auth"}),
        ("Roll out the login service", None, {"team": "ops"}),
        ("Tidy the README", None, {"team": "auth"}),
        ("x", HOSTILE, {"team": "h"}),
    ]:
        started = session.start(graph, {"task": task}, folder=tmp_path, title=title, labels=labels)
        made[task] = started.thread_id
    session.store.close()
    return store, made


def test_the_list_filters_by_label_and_search_and_shows_titles(
    tmp_path: Path, browser: Any
) -> None:
    store, made = store_with_threads(tmp_path)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        with served(store) as server:
            page.goto(server.url)
            rows = page.locator("tr[data-thread]")
            expect(rows).to_have_count(4)
            login = page.locator(f'tr[data-thread="{made["Fix the login bug"]}"] td.title')
            expect(login).to_have_text("Fix the login bug")

            page.fill('input[name="label"]', "team=auth")
            page.click('button[type="submit"]')
            expect(rows).to_have_count(2)
            assert "label=team%3Dauth" in page.url
            shown = {rows.nth(i).get_attribute("data-thread") for i in range(2)}
            assert shown == {made["Fix the login bug"], made["Tidy the README"]}

            page.fill('input[name="q"]', "login")
            page.click('button[type="submit"]')
            expect(rows).to_have_count(1)
            expect(rows.first).to_have_attribute("data-thread", made["Fix the login bug"])
            expect(page.locator('input[name="q"]')).to_have_value("login")

            page.fill('input[name="label"]', "")
            page.fill('input[name="q"]', '" login* (')  # query syntax is only text
            page.click('button[type="submit"]')
            expect(rows).to_have_count(2)

            page.goto(server.at("?label=bad key=1"))
            expect(page.locator("body")).to_contain_text("is not a name")

            # The hostile title: text in its cell, no element made, no escape or override kept.
            page.goto(server.url)
            cell = page.locator(f'tr[data-thread="{made["x"]}"] td.title')
            expect(cell).to_contain_text("<img src=x")
            assert cell.locator("img").count() == 0
            assert page.title() != "1"
            text = cell.inner_text()
            assert "\x1b" not in text and "\u202e" not in text and "red" in text
            # Control: the same title put in as markup does make an element, so the check above
            # would see one.
            cell.evaluate("(el, html) => { el.innerHTML = html }", HOSTILE)
            assert cell.locator("img").count() == 1
    finally:
        context.close()
