"""SIGKILL while two branches are in flight (Claude through the real SDK against the slow fake
Messages API), then `threads resume`: every committed branch once, only the unfinished ones run
again."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse
from tests.cli_helpers import Project

GRAPH = """
name: fan
description: Three branches at once.
roles:
  planner:
    description: plans
    goal: You are the planner.
    frontmatter:
      properties: { $status: { const: ready }, plan: { type: string } }
      required: [$status, plan]
  front:
    description: f
    goal: You are the front.
    frontmatter: { properties: { summary: { type: string } }, required: [summary] }
  back:
    description: b
    goal: You are the back.
    frontmatter: { properties: { summary: { type: string } }, required: [summary] }
  side:
    description: s
    goal: You are the side.
    frontmatter: { properties: { summary: { type: string } }, required: [summary] }
graph:
  $START:
    _: { role: planner, prompt: "Plan {{{$inputs.task}}}" }
  planner:
    ready:
      parallel:
        - { role: front, prompt: "Front for {{{plan}}}" }
        - { role: back, prompt: "Back for {{{plan}}}" }
        - { role: side, prompt: "Side for {{{plan}}}" }
      join:
        role: $END
        prompt: "{{#$branches}}{{{role}}}={{{summary}}} {{/$branches}}"
"""

REPLIES = {
    "planner": "---\n$status: ready\nplan: P\n---\n",
    "front": "---\nsummary: F\n---\n",
    "back": "---\nsummary: B\n---\n",
    "side": "---\nsummary: S\n---\n",
}


class Claude:
    """Answers by role; `back` and `side` are slow until told otherwise."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.slow = 60.0
        self.lock = threading.Lock()
        self.fake = FakeAnthropic(handler=self.answer)

    def answer(self, body: dict[str, Any]) -> FakeResponse:
        system = json.dumps(body.get("system", ""))
        role = next(r for r in REPLIES if f"You are the {r}." in system)
        with self.lock:
            self.calls[role] += 1
            delay = self.slow if role in ("back", "side") else 0.0
        return FakeResponse.text(REPLIES[role], delay=delay)


class ClaudeProject(Project):
    def __init__(self, root: Path, url: str):
        super().__init__(root)
        self.url = url

    def env(self) -> dict[str, str]:
        env = super().env()
        env["ANTHROPIC_BASE_URL"] = self.url
        env["ANTHROPIC_API_KEY"] = "sk-test-not-a-secret"
        return env


def test_sigkill_with_two_branches_in_flight_then_resume_runs_only_those(tmp_path: Path) -> None:
    claude = Claude()
    claude.fake.start()
    try:
        project = ClaudeProject(tmp_path, claude.fake.url)
        project.graph(GRAPH, "fan")
        proc = project.popen("run", "fan", "go")
        deadline = time.monotonic() + 60
        thread_id = None
        while time.monotonic() < deadline:  # until front committed and back, side are asked
            time.sleep(0.1)
            rows = project.threads() if thread_id is None else [{"id": thread_id}]
            if not rows:
                continue
            thread_id = rows[0]["id"]
            events = project.events(thread_id)
            committed = {e["role"] for e in events if e["type"] == "StepCommitted"}
            if "front" in committed and claude.calls["back"] and claude.calls["side"]:
                break
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert thread_id is not None
        assert project.threads()[0]["state"] == "running"  # as the dead process left it

        claude.slow = 0.0
        out = project.run("threads", "resume", thread_id, "--json", timeout=120)
        assert out.returncode == 0, out.stderr
        result = json.loads(out.stdout.strip().splitlines()[-1])
        assert result["state"] == "completed"
        assert result["final"] == "front=F back=B side=S "

        events = project.events(thread_id)
        committed = [(e["step"], e["role"]) for e in events if e["type"] == "StepCommitted"]
        assert sorted(committed) == [(1, "planner"), (2, "front"), (3, "back"), (4, "side")]
        started = Counter(e["step"] for e in events if e["type"] == "StepStarted")
        assert started == {1: 1, 2: 1, 3: 2, 4: 2}  # only the unfinished branches ran again
        assert claude.calls == {"planner": 1, "front": 1, "back": 2, "side": 2}
        assert any(e["type"] == "ThreadResumed" and e["interrupted"] for e in events)
    finally:
        claude.fake.stop()
