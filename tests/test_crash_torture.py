"""Crash torture: `orchestrator run` killed with SIGKILL at 20 random moments of one thread.

After each kill, `threads resume` continues the thread (and may itself be killed); at the end the
thread completes and every committed step appears exactly once, in order.
"""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

from tests.cli_helpers import LOOP_GRAPH, Project

STEPS = 12
KILLS = 20


def reply(status: str, note: str) -> str:
    return f"---\n$status: {status}\nnote: {note}\n---\n"


def test_twenty_random_kills_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    replies = {str(i): reply("again", f"r{i}") for i in range(1, STEPS)}
    project.script(worker={**replies, str(STEPS): reply("done", "end")})
    # Each answer takes a little while, so kills land before, during and after steps.
    project.set("sleep", {f"worker:{n}": 0.15 for n in range(1, STEPS + 1)})
    rng = random.Random(20261122)

    proc = project.popen("run", "loop", "torture")
    thread_id = None
    kills = 0
    while kills < KILLS:
        time.sleep(rng.uniform(0.05, 0.6))
        if proc.poll() is not None:  # finished (or suspended) before we struck
            break
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        kills += 1
        if thread_id is None:
            rows = project.threads()
            if not rows:  # killed before the thread was even created: start again
                proc = project.popen("run", "loop", "torture")
                continue
            thread_id = rows[0]["id"]
        proc = project.popen("threads", "resume", thread_id)
    proc.communicate(timeout=120)

    rows = project.threads()
    assert len(rows) == 1
    thread_id = rows[0]["id"]
    if rows[0]["state"] != "completed":
        out = project.run("threads", "resume", thread_id, timeout=300)
        assert out.returncode == 0, out.stderr
    events = project.events(thread_id)
    committed = [e["step"] for e in events if e["type"] == "StepCommitted"]
    assert committed == list(range(1, STEPS + 1))
    notes = [e["frontmatter"]["note"] for e in events if e["type"] == "StepCommitted"]
    assert notes == [f"r{i}" for i in range(1, STEPS)] + ["end"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["type"] == "ThreadCompleted"
    assert kills >= 5  # the thread really was killed many times
