"""The client's one retry policy: what is retried, how long to wait, when to give up.

Retried (every attempt of a mutating request carries the same Idempotency-Key, minted before the
first attempt, so a retry can never create twice):

- transport failures: connect errors and timeouts, read/write timeouts, pool timeouts, a
  connection dropped before the answer (`RemoteProtocolError`, `ReadError`, `WriteError`);
- answers 408, 409 `conflict`, 429, 500, 502, 503 and 504 — with or without `Retry-After`.

Never retried: 400, 401 (the auth flow already re-fetched the token once), 403, 404, 422, an
`idempotency_mismatch` of any status, and anything else.

Waits: exponential backoff with *full jitter* — uniform in [0, c] with the ceiling
c = min(backoff_max_s, backoff_initial_s * 2**(n-1)) before retry n, so the ceiling grows to
the cap (30 s by default) and clients do not retry in step — unless the answer carried
`Retry-After` (seconds or an HTTP date), which is honoured up to `retry_after_cap_s`.

Giving up: only when `retry_deadline_s` (FUNDPIPE_RETRY_DEADLINE_S, 120 s by default) has passed
since the first attempt — the last wait is shortened so that one attempt is made at the
deadline — or, when `max_attempts` is set, after that many attempts. A deadline outlasted
raises `ServiceOutageError`, whose message says for how long the service was unavailable and
that nothing was lost. An outage ridden out is an `Outage` on the client, for the run summary.

`Timer` measures and waits. The default one waits for real, except in stamina's test mode
(`stamina.set_testing(True)`, as the test suite runs): then no wait happens, but the skipped
seconds still count towards the deadline, so a test of an outage runs instantly and still ends
where a real one would.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TypeVar

import httpx
import stamina

from fundpipe.client._errors import (
    APIError,
    FundServiceError,
    RateLimitError,
    ServiceOutageError,
)
from fundpipe.clientpolicy import HttpPolicy

T = TypeVar("T")

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


class Timer:
    """The clock and the waits of the retry loop (monotonic seconds).

    Waits are real, except in stamina's test mode: there `sleep` returns at once and the
    skipped seconds are added to `now`, so the deadline is reached as it would be for real.
    Tests that move a sandbox's clock with the waits pass their own subclass.
    """

    def __init__(self) -> None:
        """Start with nothing skipped."""
        self._skipped = 0.0

    def now(self) -> float:
        """Monotonic seconds (including the waits skipped in test mode)."""
        return time.monotonic() + self._skipped

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds` (in test mode: only yield, and count them as passed)."""
        if stamina.is_testing():
            self._skipped += seconds
            await asyncio.sleep(0)
            return
        await asyncio.sleep(seconds)


@dataclass(frozen=True, slots=True)
class Outage:
    """A run of retried failures of one request: how long, how many attempts, what it got.

    `ended`: the request succeeded in the end (the outage was ridden out); otherwise the
    deadline passed and the request failed with `ServiceOutageError`.
    """

    method: str
    path: str
    seconds: float
    attempts: int
    reason: str
    ended: bool = False


def describe_seconds(seconds: float) -> str:
    """`95` → `1 min 35 s`; `4.2` → `4 s`."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, rest = divmod(whole, 60)
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"


class RetryPolicy:
    """Backoff parameters and the decision, after each failure, to wait or to give up."""

    def __init__(
        self,
        *,
        max_attempts: int | None,
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

    @classmethod
    def of(cls, policy: HttpPolicy) -> RetryPolicy:
        """The retry part of a client's `HttpPolicy`."""
        return cls(
            max_attempts=policy.max_attempts,
            deadline_s=policy.retry_deadline_s,
            backoff_initial_s=policy.backoff_initial_s,
            backoff_max_s=policy.backoff_max_s,
            retry_after_cap_s=policy.retry_after_cap_s,
        )

    def jitter(self, retry_number: int) -> float:
        """Full-jitter backoff before retry `retry_number` (1-based): in [0, ceiling]."""
        exponent = min(retry_number - 1, 64)  # no float overflow on very long outages
        ceiling = min(self.backoff_max_s, self.backoff_initial_s * 2.0**exponent)
        return self._rng.uniform(0.0, ceiling)

    def delay_for(self, exc: BaseException, retry_number: int) -> float:
        """The wait before retry `retry_number` after `exc`: Retry-After if given, else jitter."""
        retry_after = getattr(exc, "retry_after", None)
        if isinstance(retry_after, int | float):
            return min(float(retry_after), self.retry_after_cap_s)
        return self.jitter(retry_number)

    def next_delay(self, exc: BaseException, attempt: int, *, elapsed_s: float) -> float | None:
        """After attempt number `attempt` failed with `exc`, `elapsed_s` seconds after the
        first attempt: the seconds to wait before the next one, or None to give up.

        Gives up on a failure the policy does not retry, once the deadline has passed, after
        `max_attempts`, or when a `Retry-After` asks for a wait past the deadline; a backoff
        wait that would end past the deadline is shortened to end at it (one last attempt).
        """
        if not is_retryable(exc):
            return None
        if self.max_attempts is not None and attempt >= self.max_attempts:
            return None
        remaining = self.deadline_s - elapsed_s
        if remaining <= 0:
            return None
        retry_after = getattr(exc, "retry_after", None)
        if isinstance(retry_after, int | float) and min(retry_after, self.retry_after_cap_s) > (
            remaining
        ):
            return None  # the service said it is not back before the deadline: no wait started
        return min(self.delay_for(exc, attempt), remaining)


def reason_of(exc: BaseException) -> str:
    """What a failed attempt got, in a few words: `503 internal_error`, `ConnectTimeout`."""
    if isinstance(exc, APIError):
        return f"{exc.status} {exc.code or ''}".strip()
    return type(exc.__cause__ or exc).__name__


async def retrying(
    attempt: Callable[[int], Awaitable[T]],
    policy: RetryPolicy,
    timer: Timer,
    outages: list[Outage],
    *,
    what: tuple[str, str],
    on_retry: Callable[[BaseException, int, float], None],
) -> T:
    """Run `attempt(1)`, `attempt(2)`, … until one succeeds or `policy` gives up.

    `what` is (method, path) for the outage records; `on_retry(exc, attempt, delay)` is called
    before each wait. A run of retried failures (429s aside: a pace, not an outage) is appended
    to `outages`: `ended` when a later attempt succeeded; otherwise the error raised is
    `outage_error`'s.
    """
    method, path = what
    started = timer.now()
    failing_since: float | None = None
    reason = ""
    number = 0
    while True:
        number += 1
        try:
            result = await attempt(number)
        except FundServiceError as exc:
            now = timer.now()
            if not exc.retryable:
                raise
            if not isinstance(exc, RateLimitError):
                reason = reason_of(exc)
                if failing_since is None:
                    failing_since = now
            delay = policy.next_delay(exc, number, elapsed_s=now - started)
            if delay is None:
                outage = Outage(
                    method, path, now - (failing_since or started), number, reason_of(exc)
                )
                outages.append(outage)
                final = outage_error(outage, exc, policy, elapsed_s=now - started)
                if final is exc:
                    raise
                raise final from exc
            on_retry(exc, number, delay)
            await timer.sleep(delay)
            continue
        if failing_since is not None:
            outages.append(
                Outage(method, path, timer.now() - failing_since, number, reason, ended=True)
            )
        return result


def outage_error(
    outage: Outage, last: BaseException, policy: RetryPolicy, *, elapsed_s: float
) -> FundServiceError:
    """The error that ends a request the policy gave up on after retrying.

    Past the deadline: a `ServiceOutageError` in plain words. Before it (after `max_attempts`,
    or a `Retry-After` past the deadline): the last failure itself.
    """
    if elapsed_s < policy.deadline_s and isinstance(last, FundServiceError):
        return last
    return ServiceOutageError(
        f"the service was unavailable for {describe_seconds(outage.seconds)} "
        f"({outage.reason} on {outage.method} {outage.path}, {outage.attempts} attempts), "
        f"longer than the retry deadline of {describe_seconds(policy.deadline_s)} "
        "(FUNDPIPE_RETRY_DEADLINE_S); nothing was lost: what was not confirmed is resent "
        "with the same Idempotency-Key or looked up by the next run",
        seconds=outage.seconds,
        attempts=outage.attempts,
        reason=outage.reason,
    )
