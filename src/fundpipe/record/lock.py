"""One machine at a time runs an organization: a lock object in its durable record.

``lock.json`` in the organization's record is created with an exclusive create (``O_EXCL`` on a
shared folder, ``If-None-Match: *`` on S3 and the stores fsspec writes conditionally), so of two
machines starting the same organization's night only one creates it; the other is told who
holds it (exit 4). It names its holder and expires (``Settings.record_lock_expiry_s``): a lock
left by a machine that died is taken over once expired. The holder removes it when done.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Self

from fundpipe.errors import LockHeld
from fundpipe.record.store import Record, RecordError, RecordExistsError

__all__ = ["LOCK", "OrgLock", "RecordLockedError"]

#: The lock object's name in the organization's record.
LOCK = "lock.json"


class RecordLockedError(LockHeld):
    """Another machine runs this organization (it holds the lock in the durable record)."""


class OrgLock:
    """The organization's lock in ``record``, held for the span of a ``with`` block."""

    def __init__(
        self,
        record: Record,
        *,
        expiry_s: float,
        what: str = "night",
        wait_s: float = 0.0,
        clock: Callable[[], datetime] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Prepare the lock (nothing is taken yet); it expires ``expiry_s`` after it is taken;
        ``acquire`` waits up to ``wait_s`` for another holder (0: fail at once, as the inbox
        lock does: ``Settings.inbox_lock_wait_s``)."""
        self.record = record
        self.expiry_s = expiry_s
        self.what = what
        self.wait_s = wait_s
        self._clock = clock or (lambda: datetime.now(UTC))
        self._sleep = sleep
        self._token: str | None = None

    def _body(self, token: str) -> bytes:
        now = self._clock().astimezone(UTC)
        return json.dumps(
            {
                "token": token,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "what": self.what,
                "since": now.isoformat(timespec="seconds"),
                "expires": (now + timedelta(seconds=self.expiry_s)).isoformat(timespec="seconds"),
            }
        ).encode()

    def _holder(self) -> dict[str, str] | None:
        try:
            found = json.loads(self.record.read(LOCK))
        except RecordError:
            return None
        except ValueError:
            return {}  # unreadable: treated as expired
        return found if isinstance(found, dict) else {}

    def acquire(self) -> None:
        """Take the lock, waiting up to ``wait_s``; else RecordLockedError naming the holder."""
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                return self._try_acquire()
            except RecordLockedError:
                if time.monotonic() >= deadline:
                    raise
                self._sleep(min(2.0, max(deadline - time.monotonic(), 0.01)))

    def _try_acquire(self) -> None:
        token = secrets.token_hex(8)
        for _ in range(2):
            try:
                self.record.create(LOCK, self._body(token))
            except RecordExistsError:
                holder = self._holder()
                if holder is None:
                    continue  # released meanwhile: try again
                expires = holder.get("expires")
                if expires and datetime.fromisoformat(expires) > self._clock():
                    raise RecordLockedError(
                        f"{self.record.url(LOCK)}: {holder.get('what', 'a run')} of this "
                        f"organization runs on {holder.get('host')} (pid {holder.get('pid')}) "
                        f"since {holder.get('since')}; it expires at {expires}. Wait for it, "
                        "or delete the lock if that machine is gone"
                    ) from None
                # expired (a machine that died holding it): take it over, unless another did
                if self._holder() == holder:
                    self.record.remove(LOCK)
                continue
            self._token = token
            return
        raise RecordLockedError(f"{self.record.url(LOCK)} is being taken by another machine")

    def release(self) -> None:
        """Remove the lock if it is still ours."""
        if self._token is None:
            return
        holder = self._holder()
        if holder is not None and holder.get("token") == self._token:
            self.record.remove(LOCK)
        self._token = None

    def __enter__(self) -> Self:
        """Acquire on entry."""
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Release on exit."""
        self.release()
