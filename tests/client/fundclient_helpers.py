"""Shared constants and builders of the client tests (imported by tests and conftest)."""

from __future__ import annotations

import asyncio
import heapq
import json
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from pydantic import SecretStr

from fundpipe.config import Settings, grouped

BASE_URL = "https://fund.test"
CLIENT_SECRET = "cs-Sup3rS3cretValue-9f8e7d"
TOKEN = "tok-AAAA1111bbbb2222CCCC"
TOKEN_2 = "tok-ZZZZ9999yyyy8888XXXX"
ACCOUNT_NUMBER = "000123456789"
ORG = "org_test"


class FakeClock:
    """An aware clock that only moves when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 11, 23, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class VirtualTime:
    """Monotonic time that moves only when every task waits, to the earliest wake-up.

    Pass `monotonic` and `sleep` to a `RateGate`; `run(*coroutines)` drives them: it lets every
    runnable task run, then wakes the earliest sleeper and sets the time to its wake-up — or
    later, where `lag(wake)` says the event loop was stalled then.
    """

    def __init__(self, start: float = 1000.0, lag: Callable[[float], float] | None = None) -> None:
        self.now = start
        self._lag = lag
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = 0

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + max(0.0, delay), self._seq, future))
        self._seq += 1
        await future

    async def run(self, *coroutines: Awaitable[object]) -> list[object]:
        tasks = [asyncio.ensure_future(c) for c in coroutines]
        while True:
            for _ in range(50):  # every runnable task runs until it waits on the clock
                await asyncio.sleep(0)
            if all(t.done() for t in tasks):
                return [t.result() for t in tasks]
            assert self._sleepers, "tasks wait on something the virtual clock does not drive"
            wake, _, future = heapq.heappop(self._sleepers)
            self.now = max(self.now, self._lag(wake) if self._lag else wake)
            future.set_result(None)


def make_settings(**overrides: Any) -> Settings:
    """Settings for a test service at BASE_URL (no .env, generous rate limit)."""
    values: dict[str, Any] = {
        "base_url": BASE_URL,
        "client_id": "fp-client",
        "client_secret": SecretStr(CLIENT_SECRET),
        "org_id": ORG,
        "rate_limit_per_s": 10_000.0,
        "max_concurrency": 8,
        "max_attempts": 4,
    }
    values.update(overrides)
    return Settings(**grouped(_env_file=None, **values))  # type: ignore[call-arg]


def token_response(token: str = TOKEN, expires_in: int = 3600) -> httpx.Response:
    return httpx.Response(
        200, json={"access_token": token, "token_type": "Bearer", "expires_in": expires_in}
    )


def error_body(
    status: int, type_: str, code: str, message: str = "nope", **extra: Any
) -> dict[str, Any]:
    return {
        "object": "error",
        "type": type_,
        "code": code,
        "message": message,
        "status": status,
        "request_id": f"req_{status}",
        **extra,
    }


def envelope(
    data: list[Any], next_page_url: str | None = None, url: str = "/v1/x"
) -> dict[str, Any]:
    return {
        "object": "list",
        "data": data,
        "next_page_url": next_page_url,
        "previous_page_url": None,
        "has_more": next_page_url is not None,
        "url": url,
    }


def sent_json(call: Any) -> Any:
    return json.loads(call.request.content)


#: Loggers a leak test captures at DEBUG.
LOGGERS = ("", "fundpipe", "fundpipe.client", "httpx", "httpcore", "stamina", "respx")


class Capture(logging.Handler):
    """Keeps every record's message and every attribute, as text."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        self.lines.append(repr(record.__dict__))
        if record.exc_info:
            self.lines.append(logging.Formatter().formatException(record.exc_info))
