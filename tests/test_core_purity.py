"""The moderator does no I/O: importing it loads no module that could do any.

Run in a fresh interpreter, so what other tests imported does not count.
"""

from __future__ import annotations

import json
import subprocess
import sys

FORBIDDEN_TOP = ("sqlite3", "subprocess", "asyncio", "anthropic", "httpx", "httpx2")
FORBIDDEN_OURS = (
    "orchestrator.actors",
    "orchestrator.store",
    "orchestrator.tools",
    "orchestrator.run",
    "orchestrator.cli",
    "orchestrator.session",
    "orchestrator.runner",
    "orchestrator.vcs.worktrees",
)


def test_importing_the_moderator_loads_no_io_module() -> None:
    code = (
        "import json, sys\n"
        "import orchestrator.core.engine, orchestrator.core.steps, orchestrator.core.context\n"
        "import orchestrator.core.allowed\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    assert "orchestrator.core.engine" in loaded  # the check looked at the right interpreter
    io = [m for m in loaded if m.split(".")[0] in FORBIDDEN_TOP]
    ours = [m for m in loaded if m.startswith(FORBIDDEN_OURS)]
    assert io == [] and ours == [], f"the moderator pulls in {io + ours}"
