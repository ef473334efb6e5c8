"""Client-side rate limit and concurrency bound, shared by every request of one client.

`RateGate` combines an `aiolimiter.AsyncLimiter` (a leaky bucket at the current rate with a
burst of about 20 ms of traffic, at least 2, that starts full so the first window gets no burst),
an `asyncio.Semaphore` (at most `max_concurrency`
requests in flight) and the client's reaction to a 429, which is shared by all its requests:

- `penalize(seconds)` sets a *resume-at* time that every request waits for before it is sent,
  not only the one that was refused;
- the same 429 slows the shared limiter by 5 % (once per pause, never below half the configured
  rate): a server's fixed window that our rate plus its small burst overran is then no longer
  overrun, instead of costing one pause per window;
- after `recovery_s` seconds without a 429 the rate climbs back by 1 % steps to the configured
  rate.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import stamina
from aiolimiter import AsyncLimiter

# Burst allowance of the leaky bucket, in seconds of traffic (at least 2 requests: a bucket of 1
# loses ~20 % of the rate to timer overshoot).
_BURST_S = 0.02
_SLOWDOWN = 0.95
_RECOVERY_STEP = 1.01
_FLOOR = 0.5


class RateGate:
    """Rate limit + concurrency bound + shared 429 back-off of one client."""

    def __init__(
        self,
        rate_per_s: float,
        max_concurrency: int,
        *,
        recovery_s: float = 10.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """Allow `rate_per_s` requests per second, `max_concurrency` at a time."""
        self.rate_per_s = rate_per_s
        self.max_concurrency = max_concurrency
        self._recovery_s = recovery_s
        self._monotonic = monotonic
        self._semaphore = asyncio.Semaphore(max_concurrency)
        self._resume_at = 0.0  # monotonic time before which nothing is sent
        self._changed_at = monotonic()
        self._rate = rate_per_s
        self._limiter = self._make_limiter(rate_per_s)
        self._primed = False

    @staticmethod
    def _make_limiter(rate: float) -> AsyncLimiter:
        burst = max(2.0, math.floor(rate * _BURST_S))
        return AsyncLimiter(burst, burst / rate)

    @property
    def current_rate(self) -> float:
        """The rate requests are sent at now (the configured rate unless a 429 slowed it)."""
        return self._rate

    @property
    def paused_for(self) -> float:
        """Seconds left before requests may be sent again (0 when not paused)."""
        return max(0.0, self._resume_at - self._monotonic())

    def _set_rate(self, rate: float) -> None:
        self._rate = rate
        self._limiter = self._make_limiter(rate)
        self._primed = False
        self._changed_at = self._monotonic()

    def penalize(self, seconds: float) -> None:
        """After a 429: hold every request for `seconds` and slow the shared rate once."""
        now = self._monotonic()
        if now >= self._resume_at:  # the first 429 of this pause (others are its echoes)
            self._set_rate(max(self.rate_per_s * _FLOOR, self._rate * _SLOWDOWN))
        self._resume_at = max(self._resume_at, now + max(0.0, seconds))

    def _maybe_recover(self) -> None:
        if (
            self._rate < self.rate_per_s
            and self._monotonic() - self._changed_at >= self._recovery_s
        ):
            self._set_rate(min(self.rate_per_s, self._rate * _RECOVERY_STEP))

    async def _wait_resume(self) -> None:
        # Retry waits are switched off in stamina's test mode; the shared pause follows suit.
        # A loop, not an Event: another 429 may push the resume time further while we sleep.
        while not stamina.is_testing() and (delay := self.paused_for) > 0:  # noqa: ASYNC110
            await asyncio.sleep(delay)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Wait for the shared pause, a concurrency slot and a rate token, then hold the slot."""
        await self._wait_resume()
        async with self._semaphore:
            await self._wait_resume()
            self._maybe_recover()
            limiter = self._limiter
            if not self._primed:
                # Start with a full bucket: no burst on top of the rate in the first window.
                self._primed = True
                await limiter.acquire(limiter.max_rate)
            await limiter.acquire()
            yield
