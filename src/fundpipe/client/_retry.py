"""The client's one retry policy: what is retried, how long to wait, when to give up.

Retried (every attempt of a mutating request carries the same Idempotency-Key, minted before the
first attempt, so a retry can never create twice):

- transport failures: connect errors and timeouts, read/write timeouts, pool timeouts, a
  connection dropped before the answer (`RemoteProtocolError`, `ReadError`, `WriteError`);
- answers 408, 409 `conflict`, 429, 500, 502, 503 and 504 — with or without `Retry-After`.

Never retried: 400, 401 (the auth flow already re-fetched the token once), 403, 404, 422, an
`idempotency_mismatch` of any status, and anything else.

The loop is stamina's (`stamina.retry_context`): it counts the attempts, waits, and stops at
`max_attempts` or at its total deadline (`timeout=retry_deadline_s`). What to wait is said by its
backoff hook (`on=`), which returns the delay for every failure it retries, so stamina's own
exponential backoff is never used:

Waits: exponential backoff with *full jitter* — uniform in [0, c] with the ceiling
c = min(backoff_max_s, backoff_initial_s * 2**(n-1)) before retry n, so the ceiling grows to
the cap (30 s by default) and clients do not retry in step — unless the answer carried
`Retry-After` (seconds or an HTTP date), which is honoured up to `retry_after_cap_s`.

Giving up: only when `retry_deadline_s` (FUNDPIPE_RETRY_DEADLINE_S, 120 s by default) has passed
since the first attempt — the last wait is shortened so that one attempt is made at the
deadline — or, when `max_attempts` is set, after that many attempts. A deadline outlasted
raises `ServiceOutageError`, whose message says for how long the service was unavailable and
that nothing was lost. An outage ridden out is an `Outage` on the client, for the run summary.

`Timer` is the clock the hook measures the deadline on. In stamina's test mode
(`stamina.set_testing(True)`, as the test suite runs) stamina neither waits nor keeps its
deadline, and caps the attempts (with `cap=True`, at `max_attempts` when that is lower): the
hook keeps the deadline on the `Timer`, which counts the skipped waits, so a test of an outage
runs instantly and still ends where a real one would.
"""

from __future__ import annotations

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
    """The clock of the retry deadline (monotonic seconds), told of each wait stamina made.

    stamina waits for real, except in its test mode: there it skips the wait, and `waited`
    adds the skipped seconds to `now`, so the deadline is reached as it would be for real.
    Tests that move a sandbox's clock with the waits pass their own subclass.
    """

    def __init__(self) -> None:
        """Start with nothing skipped."""
        self._skipped = 0.0

    def now(self) -> float:
        """Monotonic seconds (including the waits skipped in test mode)."""
        return time.monotonic() + self._skipped

    def waited(self, seconds: float) -> None:
        """The backoff of `seconds` before a retry is over (in test mode: count it as passed)."""
        if stamina.is_testing():
            self._skipped += seconds


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


class _Attempts:
    """One request's attempts as the outage bookkeeping sees them; `backoff` is stamina's hook.

    stamina calls `backoff` with each failure: it records when and why the request fails,
    decides with the `RetryPolicy` (on the `Timer`) whether to retry, logs the retry through
    `on_retry` and returns the wait for stamina to make. `begin` is called as each attempt starts.
    """

    def __init__(
        self,
        policy: RetryPolicy,
        timer: Timer,
        on_retry: Callable[[BaseException, int, float], None],
    ) -> None:
        """Start the clock of the deadline."""
        self.policy = policy
        self.timer = timer
        self.on_retry = on_retry
        self.started = timer.now()
        #: The attempt running or the last one made (1-based).
        self.number = 0
        #: When the last attempt failed (`Timer.now()`).
        self.failed_at = self.started
        #: When the run of retried failures began (429s aside: a pace, not an outage).
        self.failing_since: float | None = None
        #: What the last retried failure other than a 429 got (`reason_of`).
        self.reason = ""
        self._wait = 0.0

    def begin(self, number: int) -> None:
        """Attempt `number` starts: the wait before it (if any) is over."""
        if number > 1:
            self.timer.waited(self._wait)
        self.number = number

    def backoff(self, exc: BaseException) -> bool | float:
        """stamina's backoff hook: False to give up on `exc`, else the seconds to wait."""
        now = self.timer.now()
        self.failed_at = now
        if not isinstance(exc, FundServiceError) or not exc.retryable:
            return False
        if not isinstance(exc, RateLimitError):
            self.reason = reason_of(exc)
            if self.failing_since is None:
                self.failing_since = now
        delay = self.policy.next_delay(exc, self.number, elapsed_s=now - self.started)
        if delay is None:
            return False
        self.on_retry(exc, self.number, delay)
        self._wait = delay
        return delay


async def retrying(
    attempt: Callable[[int], Awaitable[T]],
    policy: RetryPolicy,
    timer: Timer,
    outages: list[Outage],
    *,
    what: tuple[str, str],
    on_retry: Callable[[BaseException, int, float], None],
) -> T:
    """Run `attempt(1)`, `attempt(2)`, … in stamina's retry loop until one succeeds or `policy`
    (or stamina's attempt bound or deadline) gives up.

    `what` is (method, path) for the outage records; `on_retry(exc, attempt, delay)` is called
    before each wait. A run of retried failures (429s aside: a pace, not an outage) is appended
    to `outages`: `ended` when a later attempt succeeded; otherwise the error raised is
    `outage_error`'s.
    """
    method, path = what
    attempts = _Attempts(policy, timer, on_retry)
    try:
        async for trial in stamina.retry_context(
            on=attempts.backoff, attempts=policy.max_attempts, timeout=policy.deadline_s
        ):
            with trial:
                attempts.begin(trial.num)
                result = await attempt(trial.num)
                break
        else:  # pragma: no cover - stamina yields until an attempt succeeds or raises
            raise AssertionError("stamina's retry loop ended without an answer or an error")
    except FundServiceError as exc:
        if not exc.retryable:
            raise
        now = attempts.failed_at
        since = attempts.failing_since if attempts.failing_since is not None else attempts.started
        outage = Outage(method, path, now - since, attempts.number, reason_of(exc))
        outages.append(outage)
        final = outage_error(outage, exc, policy, elapsed_s=now - attempts.started)
        if final is exc:
            raise
        raise final from exc
    if attempts.failing_since is not None:
        outages.append(
            Outage(
                method,
                path,
                timer.now() - attempts.failing_since,
                attempts.number,
                attempts.reason,
                ended=True,
            )
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
