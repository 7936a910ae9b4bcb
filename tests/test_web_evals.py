"""The "evals" view of `orchestrator serve`: the evals kept beside the threads, each shown as its
report, behind the page's token, with no request leaving the page."""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path

from orchestrator.evals.api import evaluate
from tests.eval_project import make_project
from tests.web_helpers import chromium, served


def test_serve_lists_the_stores_evals_and_shows_each_report(tmp_path: Path) -> None:
    project = tmp_path / "p"
    suite = make_project(project, ["hello", "level"])
    store = tmp_path / "store"
    evaluate(suite, folder=store / "evals" / "greeting", graphs=[str(project / "a.yaml")])
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    with served(store, env=env) as server, chromium() as browser:
        page = browser.new_page()
        seen: list[str] = []
        page.on("request", lambda r: seen.append(r.url))
        page.goto(server.at("/evals"))
        assert page.get_by_text("a 100% of 2").count() == 1
        page.click("text=greeting")
        assert page.locator("svg[role=img]").count() == 4
        assert page.locator("rect.bar").count() == 4
        assert all(url.startswith(server.origin) for url in seen), seen
        # A name is a folder of the store's evals, never a path.
        for bad in ("/evals/..%2Fstore", "/evals/nothing"):
            request = urllib.request.Request(
                server.base.rstrip("/") + bad, headers=server.headers()
            )
            try:
                urllib.request.urlopen(request)
                raise AssertionError(f"{bad} was served")
            except urllib.error.HTTPError as exc:
                assert exc.code == 404
        # Control: the same report with the token is served (so the 404s above are refusals).
        good = urllib.request.Request(
            server.base.rstrip("/") + "/evals/greeting", headers=server.headers()
        )
        assert b"<svg" in urllib.request.urlopen(good).read()
        # Without the token, nothing.
        try:
            urllib.request.urlopen(server.base.rstrip("/") + "/evals/greeting")
            raise AssertionError("served without the token")
        except urllib.error.HTTPError as exc:
            assert exc.code in (401, 403)
