"""Preconditions (docs/format.md section 13): what a graph or a role needs before it starts.

`requires:` on a graph is checked before a thread starts (nothing is created when one fails);
on a role, when a step of the role is about to start (the thread suspends with kind
`precondition`, and resume checks again). Checks read the machine, so they run here, never in
the moderator: a tool on PATH, a file or glob in the workspace, an environment variable set and
not empty, a command that exits 0 within 10 s in the workspace (with a child's allow-list
environment, and a role's `env:` names for a role's checks: `tools/scrub.py`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ..definition.models import Requirement
from ..tools.scrub import safe_environment

COMMAND_TIMEOUT = 10.0


def _holds(requirement: Requirement, workspace: Path, passed: Sequence[str]) -> bool:
    if requirement.tool is not None:
        return shutil.which(requirement.tool) is not None
    if requirement.env is not None:
        return bool(os.environ.get(requirement.env))
    if requirement.file is not None:
        try:
            return any(
                path.resolve().is_relative_to(workspace.resolve())
                for path in workspace.glob(requirement.file)
            )
        except (ValueError, OSError):  # an absolute or malformed pattern: nothing matches
            return False
    try:
        done = subprocess.run(
            requirement.command or [],
            cwd=workspace,
            env=safe_environment(passed=passed),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=COMMAND_TIMEOUT,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def failing(
    requirements: Sequence[Requirement], workspace: Path, passed: Sequence[str] = ()
) -> list[str]:
    """What does not hold, each as the requirement's message (or a sentence saying what).
    `passed`: the role's `env:` names, which its check commands get too."""
    return [
        r.message or f"it needs {r.describe()}"
        for r in requirements
        if not _holds(r, workspace, passed)
    ]


async def afailing(
    requirements: Sequence[Requirement], workspace: Path, passed: Sequence[str] = ()
) -> list[str]:
    """`failing` off the event loop: a command may take up to 10 s."""
    if not requirements:
        return []
    return await asyncio.to_thread(failing, requirements, workspace, passed)
