"""Event stores: where threads' append-only event logs live."""

from .base import EventStore, StoredEvent, ThreadBusy, ThreadNotFound, ThreadRow, default_store_dir
from .memory import MemoryStore

__all__ = [
    "EventStore",
    "MemoryStore",
    "StoredEvent",
    "ThreadBusy",
    "ThreadNotFound",
    "ThreadRow",
    "default_store_dir",
]
