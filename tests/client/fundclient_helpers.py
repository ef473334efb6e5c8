"""Shared constants and builders of the client tests (imported by tests and conftest)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from pydantic import SecretStr

from fundpipe.config import Settings

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
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


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
