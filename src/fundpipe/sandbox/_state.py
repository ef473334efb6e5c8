"""The running state of one sandbox app: store, clock, settings, limiter, faults, request counts,
in-flight keys."""

from __future__ import annotations

import threading
from datetime import datetime

from fundpipe.sandbox._clock import SandboxClock
from fundpipe.sandbox._config import SandboxConfig
from fundpipe.sandbox._limits import Faults, RateLimiter, RequestCounter
from fundpipe.sandbox._modes import View
from fundpipe.sandbox._request_log import RequestLog
from fundpipe.sandbox._seed import apply_seed
from fundpipe.sandbox._store import Store, get_meta, set_meta, wipe


class Sandbox:
    """Everything one app instance holds; built by `create_app`, reached via `app.state`."""

    def __init__(self, config: SandboxConfig) -> None:
        """Open the store; seed a new database with `config.seed`; restore the clock offset."""
        self.config = config
        self.store = Store(config.db_path)
        self.clock = SandboxClock(config.clock)
        self.token_lifetime_s = config.token_lifetime_s
        self.limiter = RateLimiter(config.rate_limit_requests, config.rate_limit_window_s)
        self.faults = Faults()
        self.requests = RequestCounter()
        self.request_log = RequestLog()
        self.rate_limit_scope = config.rate_limit_scope
        self.legacy_pagination = config.legacy_pagination
        self._inflight: set[tuple[str, str, str]] = set()
        self._inflight_lock = threading.Lock()
        with self.store.write() as conn:
            seeded = get_meta(conn, "seed")
            if seeded is None:
                apply_seed(conn, config.seed, self.now_ts(), config.demo_orgs)
            offset = get_meta(conn, "clock_offset_s")
        if offset is not None:
            self.clock.set_offset(float(offset))

    def limit_key(self, client_id: str, org: str | None) -> str:
        """The rate limiter's key for a request of `client_id` naming `org` (see
        `SandboxConfig.rate_limit_scope`)."""
        if self.rate_limit_scope == "client_org":
            return f"{client_id}|{org or ''}"
        return client_id

    def now(self) -> datetime:
        """The sandbox time."""
        return self.clock.now()

    def now_ts(self) -> float:
        """The sandbox time in epoch seconds."""
        return self.clock.now().timestamp()

    def reset(self, seed: str) -> None:
        """Wipe all state, restart the clock offset, re-seed; faults and settings back to the config."""
        with self.store.write() as conn:
            wipe(conn)
            self.clock.set_offset(0.0)
            apply_seed(conn, seed, self.now_ts(), self.config.demo_orgs)
        self.limiter.configure(self.config.rate_limit_requests, self.config.rate_limit_window_s)
        self.faults.clear()
        self.requests.clear()
        self.request_log.clear()
        self.rate_limit_scope = self.config.rate_limit_scope
        self.token_lifetime_s = self.config.token_lifetime_s
        self.legacy_pagination = self.config.legacy_pagination

    @property
    def view(self) -> View:
        """The form records and lists are served in (see `fundpipe.sandbox._modes`)."""
        return View(
            strict=self.config.strict_interface,
            public=self.config.public_forms,
            reject_unknown=self.config.reject_unknown_fields,
            legacy_pages=self.legacy_pagination,
        )

    def save_clock(self) -> None:
        """Persist the clock offset (so a restarted sandbox keeps its time)."""
        with self.store.write() as conn:
            set_meta(conn, "clock_offset_s", repr(self.clock.offset_s))

    def claim(self, key: tuple[str, str, str]) -> bool:
        """Mark an idempotency key in flight; False when it already is."""
        with self._inflight_lock:
            if key in self._inflight:
                return False
            self._inflight.add(key)
            return True

    def release(self, key: tuple[str, str, str]) -> None:
        """Clear an in-flight idempotency key."""
        with self._inflight_lock:
            self._inflight.discard(key)

    def close(self) -> None:
        """Close the store."""
        self.store.close()
