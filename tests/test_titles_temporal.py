"""Titles and labels of threads on Temporal (docs/threads.md): they are in the thread's first
event, so the workflow's memo carries them; `threads list --temporal` and the client list a
thread by its labels and find it by a search of its title and inputs.

A real dev server and a worker process (tests/temporal_helpers.py), as tests/test_client_temporal.py.
"""

from __future__ import annotations

import json
import uuid

from tests.temporal_helpers import require_extra

require_extra()

from orchestrator import ThreadStatus  # noqa: E402  (after the check above)
from tests.temporal_helpers import temporal_address  # noqa: E402, F401  (a fixture, by name)
from tests.test_client_temporal import Place, place  # noqa: E402, F401  (a fixture, by name)


def test_a_thread_on_temporal_is_listed_and_found_by_its_title_and_labels(place: Place) -> None:  # noqa: F811
    root = place.project.root
    mine = uuid.uuid4().hex[:12]  # the dev server is shared: this test's threads only
    with place.client() as orch:
        t = orch.run(
            place.ask,
            {"task": "Fix the login bug\nin detail"},
            workspace=root,
            labels={"run": mine, "team": "auth"},
        )
        assert t.state == ThreadStatus.WAITING and t.title == "Fix the login bug"
        other = orch.run(
            place.ask, {"task": "go"}, workspace=root, title="Quarterly audit", labels={"run": mine}
        )
        listed = orch.list(labels={"run": mine})
        assert sorted(x.title for x in listed) == ["Fix the login bug", "Quarterly audit"]
        assert [x.id for x in orch.list(labels={"run": mine, "team": "auth"})] == [t.id]
        assert [x.id for x in orch.list(labels={"run": mine}, search="LOGIN")] == [t.id]
        assert [x.id for x in orch.list(labels={"run": mine}, search="detail")] == [t.id]
        assert [x.id for x in orch.list(labels={"run": mine}, search="quarterly")] == [other.id]
        assert orch.list(labels={"run": mine}, graph="fix") == []
        orch.cancel(other.id)
        assert [x.id for x in orch.list(labels={"run": mine}, state="cancelled")] == [other.id]

    out = place.project.run(
        "threads", "list", "--temporal", place.address, "--label", f"run={mine}",
        "--search", "login", "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(r["id"], r["title"], r["labels"]) for r in rows] == [
        (t.id, "Fix the login bug", {"run": mine, "team": "auth"})
    ]
