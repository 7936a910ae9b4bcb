"""The Anthropic actor's connection pool: a batch wider than the SDK's 100 kept-alive connections
reuses its connections from one call to the next instead of closing and opening them again.

Two waves of WIDE concurrent calls through one actor, against the fake on 127.0.0.1; the fake
holds every request of a wave until all of them have arrived, so the wave really has WIDE
connections open at once (no timing involved). Between the waves every connection is idle. The
fake counts the connections it accepts: the second wave must open none. The control runs the
same waves with the SDK's default client (at most 100 idle connections kept) and sees the second
wave open new ones, so the count can see the difference.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import anthropic
import pytest

from orchestrator.actors import anthropic as anthropic_actor
from orchestrator.testing.fake_anthropic import FakeResponse
from orchestrator.testing.loopback import LoopbackHandler
from tests.anthropic_fixtures import READY, fake_server, fast_actor, make_request

WIDE = 110  # more than the SDK's default of 100 kept-alive connections


def _connections_per_wave(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    accepted = [0]
    setup = LoopbackHandler.setup

    def counting(self: LoopbackHandler) -> None:
        accepted[0] += 1
        setup(self)

    monkeypatch.setattr(LoopbackHandler, "setup", counting)
    gate = threading.Barrier(WIDE, timeout=60)

    def answer(body: dict[str, Any]) -> FakeResponse:
        gate.wait()  # every call of the wave is in flight, each on a connection of its own
        return FakeResponse.text(READY)

    waves: list[int] = []
    with fake_server(monkeypatch, handler=answer):
        actor = fast_actor(timeout=60)

        async def go() -> None:
            for _ in range(2):
                before = accepted[0]
                replies = await asyncio.gather(*(actor.play(make_request()) for _ in range(WIDE)))
                assert all("add a guard" in reply.text for reply in replies)
                waves.append(accepted[0] - before)
                gate.reset()
            await actor.aclose()

        asyncio.run(go())
    return waves


def test_a_wide_batch_reuses_every_connection_for_its_next_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, second = _connections_per_wave(monkeypatch)
    assert first == WIDE
    assert second == 0


def test_control_the_sdk_default_client_reopens_what_it_did_not_keep(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    default: Callable[[], Any] = anthropic.DefaultAsyncHttpxClient
    monkeypatch.setattr(anthropic_actor, "http_client", default)
    first, second = _connections_per_wave(monkeypatch)
    assert first == WIDE
    assert second >= WIDE - anthropic.DEFAULT_CONNECTION_LIMITS.max_keepalive_connections
