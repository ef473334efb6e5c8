"""The sandbox's request log: when each API request ran, for which organization, and what it did.

`GET /_sandbox/request_log` answers `{"requests": [{"started_s", "ended_s", "org_id",
"operation", "status"}, ...]}` in the order requests ended (`started_s`/`ended_s`: wall-clock
epoch seconds, not the sandbox clock, so they compare with other processes' times; `org_id`:
the request's `X-Organization-Id`, null without one; `operation`: method and path, e.g.
`POST /v1/distributions`). `DELETE /_sandbox/request_log` empties it. Only service requests
(`/v1/…`, `/oauth/…`) are logged, never the control routes; the newest `MAX_ENTRIES` are kept.
A test reads it to see which organizations talked to the service at the same time.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any

import orjson
from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response

__all__ = ["MAX_ENTRIES", "LoggedRequest", "RequestLog", "register"]

#: How many requests the log keeps (the oldest are dropped first).
MAX_ENTRIES = 200_000


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    """One served request."""

    started_s: float
    ended_s: float
    org_id: str | None
    operation: str
    status: int


class RequestLog:
    """A bounded, thread-safe list of served requests."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        """Keep at most `max_entries` requests."""
        self._entries: deque[LoggedRequest] = deque(maxlen=max_entries)
        self._lock = threading.Lock()

    @staticmethod
    def logs(path: str) -> bool:
        """True for the paths the log records (the service's, not the control routes)."""
        return not path.startswith("/_sandbox")

    def record(
        self, started_s: float, org_id: str | None, method: str, path: str, status: int
    ) -> None:
        """Add one request that started at `started_s` and ends now."""
        entry = LoggedRequest(started_s, time.time(), org_id, f"{method} {path}", status)
        with self._lock:
            self._entries.append(entry)

    def entries(self) -> list[LoggedRequest]:
        """Every logged request, oldest first."""
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        """Forget every logged request."""
        with self._lock:
            self._entries.clear()


def _log_of(request: Request) -> RequestLog:
    log: RequestLog = request.app.state.sandbox.request_log
    return log


def _answer(entries: list[LoggedRequest]) -> Response:
    body = orjson.dumps({"requests": [asdict(e) for e in entries]})
    return Response(body, 200, media_type="application/json")


async def get_request_log(request: Request) -> Response:
    """GET /_sandbox/request_log."""
    return _answer(_log_of(request).entries())


async def delete_request_log(request: Request) -> Response:
    """DELETE /_sandbox/request_log."""
    _log_of(request).clear()
    return _answer([])


def register(app: FastAPI) -> None:
    """Add the request-log control routes to `app`."""
    routes: dict[str, Any] = {"GET": get_request_log, "DELETE": delete_request_log}
    for method, endpoint in routes.items():
        app.add_api_route(
            "/_sandbox/request_log", endpoint, methods=[method], include_in_schema=False
        )
