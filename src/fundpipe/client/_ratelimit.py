"""Client-side rate limit and concurrency bound, shared by every request of one client.

`RateGate` schedules requests on absolute time (a virtual clock, as in GCRA): each request is
given the slot ``max(now, last_slot + interval)`` when it asks, then sleeps until that slot. A
request woken late by event-loop lag does not push the following ones back (their slots were
fixed from the previous *slot*, not from the late send), so lag costs no throughput: sustained
traffic runs at the configured rate, not below it. A second, hard guard counts what was
actually sent: at most ``n = ceil(rate)`` requests in any sliding window of ``n / rate`` (≥ 1)
seconds plus a 30 ms margin, so slots that lag bunched together can never add up to more than
the rate over a window the server measures — even when the requests reach the server's counter
up to ~60 ms apart from when they left (the margin costs under 3 % of the rate; a 429 costs
a pause of at least 1 s and a 5 % slowdown for tens of seconds). There is no
burst on top of the rate, at the start or after idle. The interval is the guard's window over
``n`` (``1/rate`` stretched by the margin), so in steady state the sends are evenly spaced and
the guard only has to act on what lag bunched together.

An `asyncio.Semaphore` bounds the requests in flight (`max_concurrency`), and the client's
reaction to a 429 is shared by all its requests:

- `penalize(seconds)` sets a *resume-at* time that every request waits for before it is sent,
  not only the one that was refused; a request whose slot fell inside the pause takes a new
  one after it (paced again, no burst when the pause ends);
- the same 429 slows the shared rate by 5 % (once per pause, never below half the configured
  rate): a server's window that our rate overran is then no longer overrun, instead of costing
  one pause per window;
- after `recovery_s` seconds without a 429 the rate climbs back by 1 % steps to the configured
  rate.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import stamina

# Added to the guard window: how far apart in time our send and the server's count of one
# request may be (event-loop lag on either side, a slow request ahead of it at the server).
GUARD_MARGIN_S = 0.03
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
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """Allow `rate_per_s` requests per second, `max_concurrency` at a time.

        `monotonic` and `sleep` are the clock and the wait (tests pass a virtual pair).
        """
        self.rate_per_s = rate_per_s
        self.max_concurrency = max_concurrency
        self._recovery_s = recovery_s
        self._monotonic = monotonic
        self._sleep = sleep
        self._semaphore = asyncio.Semaphore(max_concurrency)
        self._resume_at = 0.0  # monotonic time before which nothing is sent
        self._changed_at = monotonic()
        self._rate = rate_per_s
        self._next_slot = -math.inf  # the earliest slot the next request may be given
        self._sent: deque[float] = deque()  # monotonic send times within the guard window

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

    def _guard_window(self) -> tuple[int, float]:
        """At most ``n`` sends in any window of this many seconds."""
        n = max(1, math.ceil(self._rate))
        return n, n / self._rate + GUARD_MARGIN_S

    @property
    def interval(self) -> float:
        """Seconds between two consecutive slots (``1/rate`` stretched by the guard margin)."""
        n, window = self._guard_window()
        return window / n

    def take_slot(self) -> float:
        """Reserve the next send time: ``max(now, previous slot + interval)`` (monotonic)."""
        slot = max(self._monotonic(), self._next_slot)
        self._next_slot = slot + self.interval
        return slot

    def guard_delay(self) -> float:
        """Seconds to wait before one more send keeps every guard window within the rate."""
        n, window = self._guard_window()
        now = self._monotonic()
        while self._sent and self._sent[0] <= now - window:
            self._sent.popleft()
        if len(self._sent) < n:
            return 0.0
        return self._sent[-n] + window - now

    def record_send(self) -> None:
        """Count one request as sent now (for :meth:`guard_delay`)."""
        self._sent.append(self._monotonic())

    async def _wait_resume(self) -> None:
        # Retry waits are switched off in stamina's test mode; the shared pause follows suit.
        # A loop, not an Event: another 429 may push the resume time further while we sleep.
        while not stamina.is_testing() and (delay := self.paused_for) > 0:
            await self._sleep(delay)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Wait for the shared pause, a concurrency slot and a rate slot, then hold the slot."""
        await self._wait_resume()
        async with self._semaphore:
            while True:
                await self._wait_resume()
                self._maybe_recover()
                if (delay := self.take_slot() - self._monotonic()) > 0:
                    await self._sleep(delay)
                if stamina.is_testing() or self.paused_for <= 0:
                    break  # else a 429 arrived meanwhile: a new slot after the pause
            while (delay := self.guard_delay()) > 0:
                await self._sleep(delay)
            self.record_send()
            yield
