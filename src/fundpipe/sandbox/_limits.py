"""Per-client rate limiting, fault injection and request counting (in memory, per app instance)."""

from __future__ import annotations

import math
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class RateLimiter:
    """Fixed-window limiter: at most `requests` per `window_s` seconds per key.

    `check` returns None when the request may proceed, else the whole seconds (≥ 1) until the
    key's window resets — the `Retry-After` value.
    """

    def __init__(
        self, requests: int, window_s: float, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        """Limit to `requests` per `window_s` seconds, timed by `monotonic`."""
        self.requests = requests
        self.window_s = window_s
        self._monotonic = monotonic
        self._windows: dict[str, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def configure(self, requests: int, window_s: float) -> None:
        """Change the quota; every window restarts."""
        with self._lock:
            self.requests = requests
            self.window_s = window_s
            self._windows.clear()

    def reset(self) -> None:
        """Forget every window."""
        with self._lock:
            self._windows.clear()

    def check(self, key: str) -> int | None:
        """Count one request for `key`; None if allowed, else seconds until the window resets."""
        now = self._monotonic()
        with self._lock:
            start, count = self._windows.get(key, (now, 0))
            if now - start >= self.window_s:
                start, count = now, 0
            if count >= self.requests:
                return max(1, math.ceil(start + self.window_s - now))
            self._windows[key] = (start, count + 1)
            return None


FAULT_STATUSES = (500, 502, 503, 429)


@dataclass
class FaultSettings:
    """What `PUT /_sandbox/faults` sets (all off by default)."""

    error_rate: float = 0.0
    statuses: list[int] = field(default_factory=lambda: [500, 502, 503, 429])
    retry_after_s: int = 1
    latency_ms: int = 0
    drop_after_commit_rate: float = 0.0
    seed: int | None = None
    path_prefix: str = "/v1/"
    #: Only requests naming this organization (`X-Organization-Id`) are faulted; None: all.
    org_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The JSON form answered by the control route."""
        return {
            "error_rate": self.error_rate,
            "statuses": list(self.statuses),
            "retry_after_s": self.retry_after_s,
            "latency_ms": self.latency_ms,
            "drop_after_commit_rate": self.drop_after_commit_rate,
            "seed": self.seed,
            "path_prefix": self.path_prefix,
            "org_id": self.org_id,
        }


class Faults:
    """Decides, per request, whether to inject an error, latency or a dropped connection."""

    def __init__(self) -> None:
        """Start with every fault off."""
        self.settings = FaultSettings()
        self._rng = random.Random()
        self._lock = threading.Lock()

    def configure(self, settings: FaultSettings) -> None:
        """Replace the fault settings (seeding the sampler when a seed is given)."""
        with self._lock:
            self.settings = settings
            self._rng = random.Random(settings.seed)

    def clear(self) -> None:
        """Turn every fault off."""
        self.configure(FaultSettings())

    def applies(self, path: str, org: str | None = None) -> bool:
        """True when `path` (a request naming `org`) is subject to faults (never the control
        routes; with an `org_id` scope, only that organization's requests)."""
        scope = self.settings.org_id
        if scope is not None and org != scope:
            return False
        return not path.startswith("/_sandbox") and path.startswith(self.settings.path_prefix)

    def error_status(self, path: str, org: str | None = None) -> int | None:
        """A status to answer instead of running the request, or None."""
        current = self.settings
        if current.error_rate <= 0 or not current.statuses or not self.applies(path, org):
            return None
        with self._lock:
            if self._rng.random() >= current.error_rate:
                return None
            return self._rng.choice(current.statuses)

    def latency_s(self, path: str, org: str | None = None) -> float:
        """Seconds of added latency for `path`."""
        if self.settings.latency_ms <= 0 or not self.applies(path, org):
            return 0.0
        return self.settings.latency_ms / 1000

    def drop(self, path: str, org: str | None = None) -> bool:
        """True when this committed create should lose its response."""
        current = self.settings
        if current.drop_after_commit_rate <= 0 or not self.applies(path, org):
            return False
        with self._lock:
            return self._rng.random() < current.drop_after_commit_rate


#: A path segment that is an object id (`dst_…`, `ent_…`): counted as `{id}`.
_ID_SEGMENT = re.compile(r"^[a-z]{2,5}_[A-Za-z0-9]+$")


class RequestCounter:
    """Counts the requests answered outside `/_sandbox/`, by operation and by status.

    An operation is the method and the path with every id segment as `{id}`
    (`GET /v1/distributions/{id}/payments`); rate-limited answers (429) count too, as requests.
    """

    def __init__(self) -> None:
        """Start at zero."""
        self._operations: Counter[str] = Counter()
        self._statuses: Counter[int] = Counter()
        self._lock = threading.Lock()

    def count(self, method: str, path: str, status: int) -> None:
        """Count one answered request (control routes are not counted)."""
        if path.startswith("/_sandbox"):
            return
        shape = "/".join("{id}" if _ID_SEGMENT.match(s) else s for s in path.split("/"))
        with self._lock:
            self._operations[f"{method} {shape}"] += 1
            self._statuses[status] += 1

    def clear(self) -> None:
        """Back to zero."""
        with self._lock:
            self._operations.clear()
            self._statuses.clear()

    def as_dict(self) -> dict[str, Any]:
        """`{"total", "by_operation", "by_status"}` (statuses as strings, JSON keys)."""
        with self._lock:
            return {
                "total": sum(self._statuses.values()),
                "by_operation": dict(sorted(self._operations.items())),
                "by_status": {str(k): v for k, v in sorted(self._statuses.items())},
            }
