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

__all__ = ["MAX_ENTRIES", "LoggedRequest", "RequestLog"]

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

    def as_dict(self) -> dict[str, Any]:
        """The answer of `GET /_sandbox/request_log`: every logged request, oldest first."""
        return {"requests": [asdict(e) for e in self.entries()]}

    def clear(self) -> None:
        """Forget every logged request."""
        with self._lock:
            self._entries.clear()
