"""One error family, worded once for every face (docs/format.md section 10, "Errors").

`OrchestratorError` and its subclasses (`family.py`) carry `.message`, `.hint`, `.code` and
`.usage_error`; `word()` (`wording.py`) turns any exception into the text the command line, the web
page and the MCP server all show. This package imports nothing else of orchestrator, so every
other package may raise its classes.
"""

from .family import (
    GraphError,
    InputError,
    OrchestratorError,
    ProviderError,
    Refused,
    SessionError,
    StoreError,
    ThreadBusy,
    ThreadNotFound,
    WorkspaceError,
)
from .wording import Wording, clean, word

__all__ = [
    "GraphError",
    "InputError",
    "OrchestratorError",
    "ProviderError",
    "Refused",
    "SessionError",
    "StoreError",
    "ThreadBusy",
    "ThreadNotFound",
    "WorkspaceError",
    "Wording",
    "clean",
    "word",
]
