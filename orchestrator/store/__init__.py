"""Event stores: where threads' append-only event logs live."""

from .base import (
    EventStore,
    StoredEvent,
    StoreError,
    ThreadBusy,
    ThreadNotFound,
    ThreadRow,
    default_store_dir,
)
from .memory import MemoryStore

__all__ = [
    "EventStore",
    "MemoryStore",
    "StoreError",
    "StoredEvent",
    "ThreadBusy",
    "ThreadNotFound",
    "ThreadRow",
    "default_store_dir",
]
