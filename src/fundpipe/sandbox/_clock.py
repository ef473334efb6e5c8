"""The sandbox clock: an injectable base time plus an offset the control routes advance."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

_LATEST = datetime(9000, 1, 1, tzinfo=UTC)


def _system_now() -> datetime:
    return datetime.now(UTC)


class SandboxClock:
    """`now()` = base clock + offset. The offset only grows (the sandbox never goes back)."""

    def __init__(self, base: Callable[[], datetime] | None = None, offset_s: float = 0.0) -> None:
        """Use `base` (aware UTC) or the system clock, shifted by `offset_s` seconds."""
        self._base = base or _system_now
        self._offset = timedelta(seconds=offset_s)
        self._lock = threading.Lock()

    @property
    def offset_s(self) -> float:
        """Seconds the clock has been advanced past its base."""
        return self._offset.total_seconds()

    def now(self) -> datetime:
        """The current sandbox time (aware, UTC)."""
        base = self._base()
        if base.tzinfo is None:
            raise ValueError("the injected clock must return aware datetimes")
        return base.astimezone(UTC) + self._offset

    def advance(self, seconds: float) -> datetime:
        """Move the clock forward by `seconds` (≥ 0) and return the new now."""
        if seconds < 0:
            raise ValueError("the sandbox clock only moves forward")
        step = timedelta(seconds=seconds)
        if self.now() + step > _LATEST:  # OverflowError past year 9999 raises here too
            raise ValueError("the sandbox clock cannot pass the year 9000")
        with self._lock:
            self._offset += step
        return self.now()

    def set_offset(self, offset_s: float) -> None:
        """Restore an offset (used when reopening a durable database, and by reset)."""
        with self._lock:
            self._offset = timedelta(seconds=offset_s)
