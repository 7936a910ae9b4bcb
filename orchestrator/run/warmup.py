"""Import the Anthropic SDK in the background while a thread is being set up.

`anthropic` takes about a second to import (seconds on a cold disk). It is imported lazily so
that commands which never call a model stay fast, but then the first model step of a process
paid for it, and its recorded duration was mostly import. Once the preflight has decided that a
thread will run and that a role asks Claude, a daemon thread imports the SDK while the thread's
worktree, store and lease are set up; the first step waits for the rest of it (`sdk_imported`,
off the event loop) before its clock starts, and never imports it twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import sys
import threading

from ..definition.models import Graph

SDK = "anthropic"


def needs_sdk(graph: Graph) -> bool:
    return any(role.is_model for role in graph.roles.values())


_importing: threading.Thread | None = None


def import_sdk_in_background(graph: Graph) -> threading.Thread | None:
    """Start importing the SDK if a role needs it and it is not imported yet; the thread."""
    global _importing
    if not needs_sdk(graph) or SDK in sys.modules:
        return None
    if _importing is not None and _importing.is_alive():
        return _importing
    _importing = threading.Thread(target=_import, name="orchestrator-sdk-import", daemon=True)
    _importing.start()
    return _importing


async def sdk_imported() -> None:
    """Wait, without blocking the event loop, for a background import of the SDK to end.

    A step awaits this before its clock starts, so its recorded time is the step's own and
    not what remains of the import."""
    thread = _importing
    if thread is not None and thread.is_alive():
        await asyncio.to_thread(thread.join)


def _import() -> None:
    # A failure here is not reported: the first step imports the SDK again and says why.
    with contextlib.suppress(Exception):
        importlib.import_module(SDK)
