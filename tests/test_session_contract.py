"""One session contract (run/contract.py): the local and the Temporal session implement
`ThreadSession` with the same signatures, and the faces hold the protocol, never a concrete
class (no `Session | TemporalSession` union, no `isinstance` switch on which one they have)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from orchestrator.run.contract import ThreadSession
from orchestrator.run.session import Session
from orchestrator.store.memory import MemoryStore
from tests.temporal_helpers import require_extra

REPO = Path(__file__).resolve().parents[1]
FACES = [
    *sorted((REPO / "orchestrator" / "cli").glob("*.py")),
    *sorted((REPO / "orchestrator" / "web").glob("*.py")),
    *sorted((REPO / "orchestrator" / "mcp_server").glob("*.py")),
    *sorted((REPO / "orchestrator" / "client").glob("*.py")),
    REPO / "orchestrator" / "run" / "batch.py",
]
CONCRETE = r"(?:Session|TemporalSession)"
SWITCHES = [
    re.compile(rf"isinstance\([^)]*\b{CONCRETE}\b\)"),  # isinstance(x, Session)
    re.compile(rf"\b{CONCRETE}\s*\|\s*{CONCRETE}\b"),  # Session | TemporalSession
    re.compile(rf"(?:->|\w:)\s*{CONCRETE}\b(?!\()"),  # held as a concrete class
]


def members() -> list[str]:
    return [
        name
        for name, value in vars(ThreadSession).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, property))
    ]


def temporal_class() -> type:
    require_extra()
    from orchestrator.temporal.session import TemporalSession

    return TemporalSession


@pytest.mark.parametrize("name", members())
def test_both_sessions_have_each_member_with_the_protocols_signature(name: str) -> None:
    expected = getattr(ThreadSession, name)
    for cls in (Session, temporal_class()):
        found = getattr(cls, name)
        if isinstance(expected, property):
            assert not callable(found), (cls.__name__, name)
            continue
        want = inspect.signature(expected).parameters
        got = inspect.signature(found).parameters
        assert [(p.name, p.kind) for p in got.values()] == [
            (p.name, p.kind) for p in want.values()
        ], (cls.__name__, name)
        assert inspect.iscoroutinefunction(found) == inspect.iscoroutinefunction(expected), name


def test_both_sessions_are_thread_sessions_at_run_time() -> None:
    local = Session(MemoryStore())
    remote = temporal_class()("127.0.0.1:1")  # connects on first use only
    try:
        assert isinstance(local, ThreadSession) and isinstance(remote, ThreadSession)
        assert (local.blocking, remote.blocking) == (False, True)
    finally:
        local.close()
        remote.close()
    assert not isinstance(MemoryStore(), ThreadSession)  # a store is not a session (batch.py)


@pytest.mark.parametrize("path", FACES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_faces_hold_the_protocol_never_a_concrete_session(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for pattern in SWITCHES:
        assert not pattern.search(text), f"{path.name}: {pattern.search(text)}"


def test_control_the_check_sees_the_old_switches() -> None:
    old = [
        "AnySession = Session | TemporalSession",
        "if isinstance(session, Session):  # a local run's own connection",
        "def session(self) -> Session:",
    ]
    for line in old:
        assert any(p.search(line) for p in SWITCHES), line
