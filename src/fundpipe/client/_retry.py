"""The client's one retry policy, declared here and run by stamina.

Retried (every attempt of a mutating request carries the same Idempotency-Key, minted before the
first attempt, so a retry can never create twice):

- transport failures: connect errors and timeouts, read/write timeouts, pool timeouts, a
  connection dropped before the answer (`RemoteProtocolError`, `ReadError`, `WriteError`);
- answers 408, 409 `conflict`, 429, 500, 502, 503 and 504.

Never retried: 400, 401 (the auth flow already re-fetched the token once), 403, 404, 422, an
`idempotency_mismatch` of any status, and anything else.

Waits: exponential backoff with *full jitter* — uniform in [0, min(backoff_max_s,
backoff_initial_s * 2**(n-1))] before retry n — unless the answer carried `Retry-After` (seconds
or an HTTP date), which is honoured up to `retry_after_cap_s`. Attempts are bounded by
`max_attempts` and the whole call by `retry_deadline_s`: a wait that would end past the deadline
is not started. `stamina.set_testing(True)` turns every wait off in tests.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

from fundpipe.client._errors import FundServiceError

#: httpx errors after which the same request may safely be sent again.
RETRYABLE_TRANSPORT_ERRORS: tuple[type[httpx.TransportError], ...] = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.ReadTimeout,
    httpx.WriteTimeout,
    httpx.PoolTimeout,
    httpx.RemoteProtocolError,
    httpx.ReadError,
    httpx.WriteError,
)


def parse_retry_after(value: str | None, now: datetime) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or HTTP-date); None if absent.

    An HTTP date in the past gives 0; an unparsable value gives None.
    """
    if value is None:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # "-0000" dates: RFC 7231 dates are always GMT
            when = when.replace(tzinfo=UTC)
        return max(0.0, (when - now).total_seconds())
    if seconds != seconds or seconds in (float("inf"), float("-inf")):  # NaN / inf
        return None
    return max(0.0, seconds)


def is_retryable(exc: BaseException) -> bool:
    """Whether `exc` is a failure the policy retries."""
    if isinstance(exc, FundServiceError):
        return exc.retryable
    return isinstance(exc, RETRYABLE_TRANSPORT_ERRORS)


class RetryPolicy:
    """Backoff parameters plus a factory of per-call stamina hooks."""

    def __init__(
        self,
        *,
        max_attempts: int,
        deadline_s: float,
        backoff_initial_s: float,
        backoff_max_s: float,
        retry_after_cap_s: float,
        rng: random.Random | None = None,
    ) -> None:
        """Keep the limits; `rng` pins the jitter in tests."""
        self.max_attempts = max_attempts
        self.deadline_s = deadline_s
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.retry_after_cap_s = retry_after_cap_s
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography

    def jitter(self, retry_number: int) -> float:
        """Full-jitter backoff before retry `retry_number` (1-based)."""
        ceiling = min(self.backoff_max_s, self.backoff_initial_s * 2 ** (retry_number - 1))
        return self._rng.uniform(0.0, ceiling)

    def delay_for(self, exc: BaseException, retry_number: int) -> float:
        """The wait before retry `retry_number` after `exc`: Retry-After if given, else jitter."""
        retry_after = getattr(exc, "retry_after", None)
        if isinstance(retry_after, int | float):
            return min(float(retry_after), self.retry_after_cap_s)
        return self.jitter(retry_number)

    def hook(
        self, on_retry: Callable[[BaseException, int, float], None] | None = None
    ) -> Callable[[Exception], bool | float]:
        """A fresh stamina `on=` hook for one call: False to stop, else the wait in seconds.

        `on_retry(exc, retry_number, delay)` is called before each wait (for logging and the
        shared 429 pause).
        """
        started = time.monotonic()
        retries = 0

        def should_retry(exc: Exception) -> bool | float:
            """False to give up on `exc`, else the seconds to wait before the next attempt."""
            nonlocal retries
            if not is_retryable(exc):
                return False
            retries += 1
            if retries >= self.max_attempts:
                return False
            delay = self.delay_for(exc, retries)
            if time.monotonic() - started + delay > self.deadline_s:
                return False
            if on_retry is not None:
                on_retry(exc, retries, delay)
            return delay

        return should_retry
