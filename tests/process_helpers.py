"""Finding processes from outside a sandbox, whose PID namespace gives them PIDs of its own."""

from __future__ import annotations

import time
import uuid
from pathlib import Path


def marker() -> str:
    """A word to put on a command line so the process can be found from outside."""
    return "mark" + uuid.uuid4().hex[:12]


def live_with(word: str) -> list[int]:
    """Host PIDs of the live (not zombie) processes whose command line holds `word`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if word.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def wait_until(condition: object, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return bool(condition())  # type: ignore[operator]


# An orchestrator in a process of its own (for tests that kill it): it plays one step with a
# command actor whose argv is the Python interpreter and this script's own arguments.
COMMAND_ACTOR_STEP = (
    "import asyncio, sys\n"
    "from pathlib import Path\n"
    "from orchestrator.actors.command import CommandProcessActor\n"
    "from orchestrator.definition.models import Role\n"
    "from orchestrator.actors.base import ActRequest\n"
    "role = Role(description='d', goal='g', frontmatter={})\n"
    "agent = [sys.executable, *sys.argv[1:]]\n"
    "req = ActRequest(thread_id='T', step=1, role_name='r', role=role, prompt='p',"
    " workspace=Path('.'))\n"
    "asyncio.run(CommandProcessActor(agent, timeout=120).play(req))\n"
)
