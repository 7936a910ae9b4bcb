"""Running the real `orchestrator` command in a temp project, as a user types it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

# An external agent (the `command` actor) whose behaviour the tests steer through files:
#   script.json  {"ROLE": ["reply text", ...]}  replies per role, by visit
#                {"ROLE": {"STEP": "reply"}}      or by step number
#   sleep.json   {"ROLE:STEP": seconds}          sleep before answering that step
#   fail.json    {"ROLE:STEP": "message"}        exit 1 with the message on stderr
AGENT = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path
    here = Path(__file__).parent  # the project: the script lives there
    sys.stdin.read()
    role, step = os.environ["ORCHESTRATOR_ROLE"], os.environ["ORCHESTRATOR_STEP"]
    def load(name):
        p = here / name
        return json.loads(p.read_text()) if p.exists() else {}
    key = f"{role}:{step}"
    if key in load("fail.json"):
        sys.stderr.write(load("fail.json")[key]); sys.exit(1)
    time.sleep(load("sleep.json").get(key, 0))
    counter = here / f"count-{role}"
    n = int(counter.read_text()) if counter.exists() else 0
    # Replaced whole, never seen half-written by an agent of another thread (or after a kill).
    fresh = here / f"count-{role}.{os.urandom(6).hex()}"  # (each sandbox has its own PIDs)
    fresh.write_text(str(n + 1))
    os.replace(fresh, counter)
    replies = load("script.json")[role]
    if isinstance(replies, dict):  # by step number: immune to answers lost in a crash
        sys.stdout.write(replies[step])
    else:
        sys.stdout.write(replies[min(n, len(replies) - 1)])
    """
)

LOOP_GRAPH = """
name: loop
description: A worker that loops until it is done.
limits: { max_steps: 40, max_visits: 40 }
roles:
  worker:
    description: Works in rounds
    goal: You work.
    actor: { command: [PYTHON, AGENT], timeout: 60 }
    frontmatter:
      type: object
      properties:
        $status: { enum: [again, done] }
        note: { type: string }
      required: [$status, note]
graph:
  $START:
    _: { role: worker, prompt: "Start {{{$inputs.task}}}" }
  worker:
    again: { role: worker, prompt: "Round after {{{note}}}" }
    done: { role: $END, prompt: "Finished: {{{note}}}" }
"""


class Project:
    """A temp directory with graphs/, an agent script, and a store; runs the real CLI."""

    def __init__(self, root: Path):
        self.root = root
        (root / "graphs").mkdir(parents=True, exist_ok=True)
        self.agent = root / "agent.py"
        self.agent.write_text(AGENT)
        self.store = root / "store"

    def graph(self, text: str, name: str) -> Path:
        text = text.replace("PYTHON", json.dumps(sys.executable)).replace(
            "AGENT", json.dumps(str(self.agent))
        )
        path = self.root / "graphs" / f"{name}.yaml"
        path.write_text(textwrap.dedent(text).lstrip())
        return path

    def script(self, **replies: list[str] | dict[str, str]) -> None:
        (self.root / "script.json").write_text(json.dumps(replies))

    def set(self, name: str, data: dict[str, Any]) -> None:
        (self.root / f"{name}.json").write_text(json.dumps(data))

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["AGENT_DIR"] = str(self.root)
        env["ORCHESTRATOR_HOME"] = str(self.store)
        env.pop("ANTHROPIC_BASE_URL", None)
        return env

    def cmd(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "orchestrator", *args]

    def run(
        self, *args: str, input: str | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.cmd(*args),
            cwd=self.root,
            env=self.env(),
            capture_output=True,
            text=True,
            input=input,
            timeout=timeout,
        )

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.cmd(*args),
            cwd=self.root,
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )

    def threads(self) -> list[dict[str, Any]]:
        out = self.run("threads", "list", "--json")
        assert out.returncode == 0, out.stderr
        return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]

    def events(self, thread_id: str) -> list[dict[str, Any]]:
        from orchestrator.store.sqlite import SqliteStore

        store = SqliteStore(self.store)
        try:
            return [{"seq": s.seq, **s.event.to_dict()} for s in store.events(thread_id)]
        finally:
            store.close()
