"""The web page's accessibility, measured by axe-core in the system's Chromium.

axe-core (the npm package, `tests/web_vendor/package.json` with its lock file; `.ci/run`
installs it with `npm ci`) is injected into each page and run with the WCAG 2.0/2.1/2.2 A and
AA rules. A serious or critical violation fails the test, on the threads page and on thread
pages (one with steps, one waiting for a person's answer, one suspended) and a fork's form
("fork from here" on a person's step: its reply editor), in the light and the
dark colour scheme. The control checks that axe sees a violation where one is planted, so a
test that finds nothing has looked.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator import run_thread
from tests.cli_helpers import LOOP_GRAPH, Project
from tests.solve_issue_scenario import RECORDING, SAMPLE
from tests.test_answer_cli import GRAPH as HUMAN_GRAPH
from tests.test_answer_cli import PROPOSAL
from tests.web_helpers import Served, chromium, in_thread, served

AXE = Path(__file__).parent / "web_vendor" / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
SCHEMES = ("light", "dark")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, dict[str, str]]]:
    """One store with a replayed thread (steps), a thread waiting for a person and a suspended
    one; `orchestrator serve` on it."""
    project = Project(tmp_path_factory.mktemp("a11y"))
    project.graph(HUMAN_GRAPH, "approve")
    project.graph(LOOP_GRAPH, "loop")
    project.script(worker=[PROPOSAL])
    assert project.run("run", "approve", "owls").returncode == 3
    waiting = project.threads()[0]["id"]
    project.set("fail", {"worker:1": "the agent crashed"})
    project.script(worker=["---\n$status: done\nnote: n\n---\n"])
    project.run("run", "loop", "owls")
    loop = next(t for t in project.threads() if t["graph"] == "loop")
    assert loop["state"] == "suspended", loop
    suspended = loop["id"]
    replayed = in_thread(
        run_thread,
        "solve-issue",
        workspace=SAMPLE,
        store=project.store,
        replay=RECORDING,
        inputs={"issue": (SAMPLE / "ISSUE.md").read_text()},
    ).thread_id
    threads = {"steps": replayed, "waiting": waiting, "suspended": suspended}
    with served(project.store, env=project.env()) as server:
        yield server, threads


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    assert AXE.exists(), f"no axe-core at {AXE}: `npm ci --prefix tests/web_vendor` (as .ci/run)"
    with chromium() as found:
        yield found


def serious(browser: Any, url: str, scheme: str, *, plant: str = "") -> list[str]:
    """The serious and critical axe-core violations of the page at `url`, one line each."""
    # The page's Content-Security-Policy allows only its own scripts: axe comes from the test.
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, bypass_csp=True)
    try:
        page = context.new_page()
        page.emulate_media(color_scheme=scheme)
        page.goto(url)
        page.wait_for_selector("#live.on")
        if plant:
            page.evaluate(plant)
        page.add_script_tag(path=str(AXE))
        result = page.evaluate(
            "tags => axe.run(document, {runOnly: {type: 'tag', values: tags}})", TAGS
        )
    finally:
        context.close()
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at "
        + "; ".join(" ".join(n["target"]) for n in v["nodes"][:4])
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("which", ["list", "steps", "waiting", "suspended", "fork"])
def test_no_serious_accessibility_violation(
    site: tuple[Served, dict[str, str]], browser: Any, which: str, scheme: str
) -> None:
    server, threads = site
    if which == "list":
        url = server.url
    elif which == "fork":  # "fork from here" on the person's step: the reply editor, options
        url = server.at(f"threads/{threads['waiting']}/fork?step=2")
    else:
        url = server.at(f"threads/{threads[which]}")
    found = serious(browser, url, scheme)
    assert found == [], f"{which} page, {scheme} scheme:\n" + "\n".join(found)


def test_control_axe_sees_a_planted_violation(
    site: tuple[Served, dict[str, str]], browser: Any
) -> None:
    """Grey on grey text and an unlabelled field: axe must report them, or it did not look."""
    server, _ = site
    plant = (
        "const p = document.createElement('p'); p.textContent = 'faint';"
        "p.style.color = '#aaa'; p.style.background = '#bbb'; document.body.append(p);"
        "const i = document.createElement('input'); i.type = 'text';"
        "document.querySelector('main').append(i);"
    )
    found = serious(browser, server.url, "light", plant=plant)
    assert any(line.startswith("color-contrast") for line in found), found
    assert any(line.startswith("label") for line in found), found
