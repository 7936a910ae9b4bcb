"""The public client (docs/format.md section 10b, docs/api.md): `Orchestrator` (sync),
`AsyncOrchestrator` (awaitable), and `Thread`, the one value they return.

    thread.py   Thread: a thread's state, steps, cost, final, ending, path, question
    aio.py      AsyncOrchestrator: owns a session (run/contract.py) and every thread operation
    sync.py     Orchestrator: AsyncOrchestrator on a loop and thread of its own
"""

from .aio import AsyncOrchestrator
from .sync import Orchestrator
from .thread import Thread

__all__ = ["AsyncOrchestrator", "Orchestrator", "Thread"]
