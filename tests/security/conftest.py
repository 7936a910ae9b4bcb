"""What the attack suite shares: each sandbox test runs under both mechanisms."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from orchestrator.tools import sandbox as sandboxing


@pytest.fixture(autouse=True)
def _fresh_probe() -> Iterator[None]:
    """What works here is probed anew for each test (they force a mechanism)."""
    sandboxing.reset()
    yield
    sandboxing.reset()


@pytest.fixture(params=["bwrap", "unshare"])
def mechanism(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The sandbox this test runs under (in this process, and named for a child process's
    `ORCHESTRATOR_SANDBOX_WITH`); it must work here: CI never skips either."""
    monkeypatch.setenv(sandboxing.FORCE_VARIABLE, request.param)
    assert sandboxing.mechanism() == request.param, f"{request.param} cannot make a sandbox here"
    return str(request.param)
