"""What an SQLite error means for the person: the store's file, the cause and what to do."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .base import StoreError


def store_error(exc: sqlite3.Error, path: Path, doing: str) -> StoreError:
    """What an SQLite error means for the person: the file, the cause, what to do."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF  # the primary result code
    detail = str(exc)
    if code == sqlite3.SQLITE_FULL:
        return StoreError(
            f"the disk holding the thread store {path} is full: {doing} failed ({detail}). "
            "Free some space and try again; everything saved before is kept",
            "full",
        )
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return StoreError(
            f"the thread store {path} is damaged: {doing} failed ({detail}). To keep what "
            f"can still be read: `sqlite3 {path} .recover | sqlite3 recovered.db`, then put "
            "recovered.db in its place as threads.db (or move the store folder aside to start "
            "afresh)",
            "damaged",
        )
    if code in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM):
        return StoreError(
            f"the thread store {path} cannot be written: {doing} failed ({detail}). Its "
            "folder or file system is read-only or not accessible. Reading commands (threads "
            "list, show, export) still work; to run or continue threads use a writable --store "
            "DIR",
            "unwritable",
        )
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return StoreError(
            f"the thread store {path} stayed locked by another process: {doing} failed "
            f"({detail}). Try again",
            "busy",
        )
    if code == sqlite3.SQLITE_IOERR:
        return StoreError(
            f"the thread store {path} could not be read or written: {doing} failed "
            f"({detail}). The disk may be full, failing or gone; try again once it is fixed",
            "io",
        )
    return StoreError(f"the thread store {path} failed: {doing} failed ({detail})")
