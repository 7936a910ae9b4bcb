"""The eval's HTML report in the system's Chromium: the charts are drawn, and the page makes no
request, even when a run's output (written by a role) holds markup that would fetch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.eval_project import make_project
from tests.test_evals import cli
from tests.web_helpers import chromium

HOSTILE = '<img src="http://127.0.0.1:9/leak.png"><script>document.title="pwned"</script>'


def requests_of(browser: Any, url: str) -> tuple[list[str], Any]:
    page = browser.new_page()
    seen: list[str] = []
    page.on("request", lambda request: seen.append(request.url))
    page.goto(url)
    page.wait_for_load_state("load")
    return seen, page


def test_the_report_draws_its_charts_and_fetches_nothing(tmp_path: Path) -> None:
    project = tmp_path / "p"
    suite = make_project(project, ["hello", "level"])
    # A case whose command prints what the role wrote: markup that would load an image.
    suite.write_text(
        suite.read_text()
        + "  - id: hostile\n    inputs: { word: 'x' }\n"
        + "    expect: { command: 'printf %s \"$HOSTILE\"; exit 1' }\n".replace(
            "$HOSTILE", HOSTILE.replace('"', '\\"')
        )
    )
    report = tmp_path / "report.html"
    done = cli(
        [str(suite), "--graph", "a.yaml", "--graph", "b.yaml", "--report", str(report)], project
    )
    assert done.returncode == 1, done.stderr
    text = report.read_text()
    assert "&lt;img src=" in text  # the role's markup is in the page, as text
    with chromium() as browser:
        seen, page = requests_of(browser, report.as_uri())
        assert seen == [report.as_uri()]  # nothing but the file itself
        assert page.title() == "Eval report"  # no script ran
        charts = page.locator("svg[role=img]")
        assert charts.count() == 4
        bars = page.locator("rect.bar")
        assert bars.count() == 8  # a bar per variant in each chart
        widths = [bars.nth(i).bounding_box()["width"] for i in range(4)]  # pass rate, pass^k
        assert all(w > 0 for w in widths)
        assert widths[0] > widths[1]  # a: 100% of its runs pass, b: 2 of 3
        assert page.get_by_text("hello (differs)").count() == 1
        # Control: the same markup in a page without the report's escaping and policy does
        # fetch, so the test above would have seen a request.
        bare = tmp_path / "bare.html"
        bare.write_text(f"<!doctype html><title>bare</title><p>{HOSTILE}</p>")
        seen, page = requests_of(browser, bare.as_uri())
        assert any("127.0.0.1:9" in url for url in seen), seen
        assert page.title() == "pwned"


def test_the_report_is_written_by_a_rescore_too(tmp_path: Path) -> None:
    project = tmp_path / "p"
    suite = make_project(project, ["hello"])
    assert cli([str(suite), "--out", "o"], project).returncode == 0
    report = tmp_path / "again.html"
    done = cli([str(suite), "--rescore", "o", "--report", str(report)], project)
    assert done.returncode == 0, done.stderr
    assert "<svg" in report.read_text()
