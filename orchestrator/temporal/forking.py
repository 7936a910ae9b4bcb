"""Forks of threads on Temporal: not available yet (a placeholder the contract needs).

`TemporalSession` has the contract's `fork` and `afork` (run/contract.py) from here; both
refuse clearly, naming what to do instead, until forks run on Temporal too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..definition.models import Graph
from ..run.errors import SessionError

NOT_YET = (
    "forking a thread on Temporal is not available yet: export it (`threads export`) and "
    "replay it locally, or fork a local thread"
)


class NoFork:
    def forks(self) -> dict[str, dict[str, Any]]:
        return {}  # no thread on Temporal is a fork yet

    def fork(
        self,
        thread_id: str,
        *,
        at: int | None = None,
        reply: str | None = None,
        status: str | None = None,
        set: Mapping[str, Any] | None = None,  # noqa: A002
        message: str | None = None,
        reuse: bool = False,
        title: str | None = None,
        graph: Graph | None = None,
    ) -> str:
        raise SessionError(NOT_YET, usage=False)

    async def afork(
        self,
        thread_id: str,
        *,
        at: int | None = None,
        reply: str | None = None,
        status: str | None = None,
        set: Mapping[str, Any] | None = None,  # noqa: A002
        message: str | None = None,
        reuse: bool = False,
        title: str | None = None,
        graph: Graph | None = None,
    ) -> str:
        raise SessionError(NOT_YET, usage=False)
