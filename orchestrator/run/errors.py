"""The session's refusals: a request it cannot carry out, with nothing changed.

`SessionError` is defined with its family (`orchestrator.errors`) and imported from here too.
"""

from __future__ import annotations

from ..errors import SessionError

__all__ = ["SessionError"]
