"""The batch's adaptive limiter: at most `limit` threads at once, first come first served,
shrunk by rate limits and grown back, and no slot lost to a waiting thread cancelled."""

from __future__ import annotations

import asyncio

from orchestrator.run.batch import AdaptiveLimiter


async def _run(limiter: AdaptiveLimiter, n: int, hold: asyncio.Event) -> tuple[list[int], int]:
    order: list[int] = []
    peak = 0

    async def one(i: int) -> None:
        nonlocal peak
        async with limiter:
            order.append(i)
            peak = max(peak, limiter.active)
            await hold.wait()

    tasks = [asyncio.ensure_future(one(i)) for i in range(n)]
    await asyncio.sleep(0)
    hold.set()
    await asyncio.gather(*tasks)
    return order, peak


def test_at_most_limit_at_once_in_the_order_they_came() -> None:
    order, peak = asyncio.run(_run(AdaptiveLimiter(3), 10, asyncio.Event()))
    assert order == list(range(10))
    assert peak == 3


def test_backoff_shrinks_and_recover_grows_the_limit() -> None:
    async def main() -> tuple[int, int, int]:
        limiter = AdaptiveLimiter(4)
        await limiter.backoff()
        await limiter.backoff()
        _, peak_low = await _run(limiter, 8, asyncio.Event())
        for _ in range(5):
            await limiter.recover()
        _, peak_back = await _run(limiter, 8, asyncio.Event())
        return limiter.limit, peak_low, peak_back

    assert asyncio.run(main()) == (4, 1, 4)


def test_recover_lets_a_waiting_thread_in_at_once() -> None:
    async def main() -> bool:
        limiter = AdaptiveLimiter(2)
        await limiter.backoff()  # limit 1
        await limiter.__aenter__()
        waiter = asyncio.ensure_future(limiter.__aenter__())
        await asyncio.sleep(0)
        assert not waiter.done()  # the control: it waits while the limit is 1
        await limiter.recover()  # limit 2: its turn
        await asyncio.sleep(0)
        return waiter.done() and limiter.active == 2

    assert asyncio.run(main())


def test_a_cancelled_waiter_loses_no_slot() -> None:
    async def main() -> int:
        limiter = AdaptiveLimiter(1)
        await limiter.__aenter__()
        first = asyncio.ensure_future(limiter.__aenter__())
        second = asyncio.ensure_future(limiter.__aenter__())
        await asyncio.sleep(0)
        await limiter.__aexit__()  # the slot is handed to `first`...
        first.cancel()  # ...which is cancelled before it runs: the slot goes to `second`
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert first.cancelled() and second.done()
        await limiter.__aexit__()
        waiting = asyncio.ensure_future(limiter.__aenter__())
        waiting.cancel()  # cancelled while still waiting its turn
        await asyncio.sleep(0)
        async with limiter:
            return limiter.active

    assert asyncio.run(main()) == 1
