"""One machine at a time runs an organization: a lease in its durable record.

``lock.json`` in the organization's record is created with an exclusive create (``O_EXCL`` on a
folder, ``If-None-Match: *`` on S3 and the stores fsspec writes conditionally), so of two
nights of the same organization only one creates it. It is a **lease**: it names its holder
(:class:`Holder`: host, pid and the process's start time) and expires
``Settings.record_lock_expiry_s`` (minutes) after it was last renewed. The holder renews it from
a thread of its own every third of that time for as long as it holds it, so a step that runs
longer than the lease (a large drop, a slow service) never loses it, and a holder that dies —
SIGKILL, OOM, power loss, a pod evicted — stops renewing with it.

Another night finding the lease:

- takes it over at once when its holder is gone: on the same host (the same boot and process
  namespace) when its pid is not alive or is now another process (its start time differs: a
  reused pid);
- takes it over when the lease has expired (the holder on another host stopped renewing);
- else waits up to ``wait_s``, telling who holds it and until when (each time that changes),
  then raises :class:`RecordLockedError` (exit 4) with that sentence.

Each takeover and each wait is one line told to ``tell`` (by default a WARNING of this module's
logger). The holder removes the lease when done.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from fundpipe.errors import LockHeld
from fundpipe.record.store import Record, RecordError, RecordExistsError

__all__ = ["LOCK", "Holder", "OrgLock", "RecordLockedError", "process_start", "this_host"]

#: The lock object's name in the organization's record.
LOCK = "lock.json"

log = logging.getLogger(__name__)

_PROC = Path("/proc")


class RecordLockedError(LockHeld):
    """Another machine runs this organization (it holds the lock in the durable record)."""

    def __init__(self, message: str, *, held: str = "") -> None:
        """The message; ``held``: who holds the lease until when (the waiting line's words)."""
        super().__init__(message)
        self.held = held or message


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None


def this_host() -> str:
    """Where pids mean the same thing: the boot (``/proc/sys/kernel/random/boot_id``) and the
    pid namespace of this process; empty where ``/proc`` does not tell (then only the lease's
    expiry frees a holder's lock)."""
    boot = _read(_PROC / "sys/kernel/random/boot_id")
    try:
        namespace = (_PROC / "self/ns/pid").stat().st_ino
    except OSError:
        return ""
    return f"{boot}/{namespace}" if boot else ""


def process_start(pid: int) -> str | None:
    """When process ``pid`` started, in clock ticks since boot (``/proc/PID/stat`` field 22),
    or None when there is no such process (or ``/proc`` does not tell)."""
    stat = _read(_PROC / str(pid) / "stat")
    if stat is None:
        return None
    fields = stat.rpartition(")")[2].split()  # the name, in parentheses, may hold spaces
    return fields[19] if len(fields) > 19 else None


def _whole_second_after(at: datetime) -> str:
    """``at`` to the second, rounded up (a lease never lapses before its time)."""
    whole = at.replace(microsecond=0)
    return (whole if whole == at else whole + timedelta(seconds=1)).isoformat()


@dataclass(frozen=True)
class Holder:
    """Who holds the lease, as ``lock.json`` names them."""

    token: str
    host: str
    pid: int
    #: the process's start (`process_start`): a pid reused by another process differs here
    started: str | None
    #: `this_host()` of the holder: the same value means its pid can be checked from here
    boot: str
    what: str
    since: str
    expires: str

    @classmethod
    def of(cls, data: dict[str, Any]) -> Holder | None:
        """The holder ``lock.json`` names, or None when it cannot be read (taken over)."""
        try:
            return cls(
                token=str(data["token"]),
                host=str(data.get("host") or "?"),
                pid=int(data.get("pid") or 0),
                started=str(data["started"]) if data.get("started") else None,
                boot=str(data.get("boot") or ""),
                what=str(data.get("what") or "a run"),
                since=str(data.get("since") or "?"),
                expires=str(data["expires"]),
            )
        except (KeyError, TypeError, ValueError):
            return None

    @property
    def expiry(self) -> datetime | None:
        """When the lease lapses unless renewed (None: unreadable, so lapsed)."""
        try:
            found = datetime.fromisoformat(self.expires)
        except ValueError:
            return None
        return found if found.tzinfo else found.replace(tzinfo=UTC)

    def gone(self) -> bool:
        """Whether this holder is a process of this host that no longer runs: its pid is not
        alive, or is another process now (a different start time)."""
        here = this_host()
        if self.pid <= 0 or not here:
            return False
        # a lock.json of an older fundpipe names no boot: its host name alone says "here"
        if self.boot != here and (self.boot or self.host != socket.gethostname()):
            return False
        started = process_start(self.pid)
        if started is None:
            return True
        return self.started is not None and started != self.started

    def words(self) -> str:
        """Who: ``the night of this organization, pid 123 on host-a since …``."""
        return f"the {self.what} of this organization, pid {self.pid} on {self.host} since {self.since}"


class OrgLock:
    """The organization's lease in ``record``, held (and renewed) for a ``with`` block."""

    def __init__(
        self,
        record: Record,
        *,
        expiry_s: float,
        what: str = "night",
        wait_s: float = 0.0,
        clock: Callable[[], datetime] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        tell: Callable[[str], None] | None = None,
        renew: bool = True,
    ) -> None:
        """Prepare the lease (nothing is taken yet): it lapses ``expiry_s`` after it is taken
        or last renewed; ``acquire`` waits up to ``wait_s`` for a live holder (0: fail at once,
        as the inbox lock does: ``Settings.inbox_lock_wait_s``); ``tell`` receives the one
        line of a takeover or a wait (default: a WARNING of this module's logger); with
        ``renew`` a thread renews it every ``expiry_s / 3`` while it is held."""
        self.record = record
        self.expiry_s = expiry_s
        self.what = what
        self.wait_s = wait_s
        self._clock = clock or (lambda: datetime.now(UTC))
        self._sleep = sleep
        self._tell = tell or log.warning
        self._renew = renew
        self._token: str | None = None
        self._since: datetime | None = None
        self._renewer: threading.Thread | None = None
        self._wake = self._renewer_reads = -1  # the pipe that stops the renewal
        #: the lines told while taking the lease (a takeover, the waits), in order
        self.told: list[str] = []

    def _say(self, line: str) -> None:
        self.told.append(line)
        self._tell(line)

    def _body(self, token: str) -> bytes:
        now = self._clock().astimezone(UTC)
        since = self._since or now
        return json.dumps(
            asdict(
                Holder(
                    token=token,
                    host=socket.gethostname(),
                    pid=os.getpid(),
                    started=process_start(os.getpid()),
                    boot=this_host(),
                    what=self.what,
                    since=since.isoformat(timespec="seconds"),
                    expires=_whole_second_after(now + timedelta(seconds=self.expiry_s)),
                )
            )
        ).encode()

    def _raw(self) -> dict[str, Any] | None:
        """``lock.json`` as read (None: there is none; ``{}``: unreadable)."""
        try:
            found = json.loads(self.record.read(LOCK))
        except RecordError:
            return None
        except ValueError:
            return {}
        return found if isinstance(found, dict) else {}

    def _held(self, holder: Holder) -> str:
        return (
            f"{self.record.url(LOCK)}: {holder.words()} holds it until {holder.expires} "
            "(renewed while it runs)"
        )

    def acquire(self) -> None:
        """Take the lease, waiting up to ``wait_s`` for a live holder (telling who holds it
        and until when); else RecordLockedError with that sentence."""
        deadline = time.monotonic() + self.wait_s
        told = ""
        while True:
            try:
                self._try_acquire()
            except RecordLockedError as held:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise
                if held.held != told:  # once, and again when the holder or its lease changes
                    self._say(f"{held.held}; waiting up to {self.wait_s:g} s")
                    told = held.held
                self._sleep(min(2.0, max(left, 0.01)))
                continue
            self._start_renewing()
            return

    def _try_acquire(self) -> None:
        token = secrets.token_hex(8)
        for _ in range(3):
            self._since = self._clock().astimezone(UTC)
            try:
                self.record.create(LOCK, self._body(token))
            except RecordExistsError:
                raw = self._raw()
                if raw is None:
                    continue  # released meanwhile: try again
                holder = Holder.of(raw)
                expiry = holder.expiry if holder else None
                if holder is not None and holder.gone():
                    why = f"its process is gone (pid {holder.pid} on {holder.host})"
                elif holder is not None and expiry is not None and expiry > self._clock():
                    raise RecordLockedError(
                        f"{self._held(holder)}. Wait for it, or delete the lock if that "
                        "machine is gone",
                        held=self._held(holder),
                    ) from None
                elif holder is not None:
                    why = (
                        f"its lease expired at {holder.expires} (pid {holder.pid} on {holder.host})"
                    )
                else:
                    why = "it could not be read"
                # a holder that died: take it over, unless another night did meanwhile
                if self._raw() == raw:
                    self.record.remove(LOCK)
                    what = holder.words() if holder else "an earlier run"
                    self._say(f"{self.record.url(LOCK)}: took over the lock of {what}: {why}")
                continue
            self._token = token
            return
        raise RecordLockedError(f"{self.record.url(LOCK)} is being taken by another machine")

    def renew(self) -> bool:
        """Push the lease's expiry ``expiry_s`` on from now, if it is still ours; False when
        another night holds it now (ours lapsed) or there is none."""
        if self._token is None:
            return False
        holder = Holder.of(self._raw() or {})
        if holder is None or holder.token != self._token:
            return False
        self.record.replace(LOCK, self._body(self._token))
        return True

    def _renewing(self, wake: int) -> None:
        period = self.expiry_s / 3
        # a relative wait on a pipe `release` writes to (a condition's timed wait is an
        # absolute deadline, which a process under libfaketime never reaches)
        while not select.select([wake], [], [], period)[0]:
            try:
                if not self.renew():
                    self._tell(
                        f"{self.record.url(LOCK)}: the lease of this {self.what} lapsed and "
                        "another run holds it now"
                    )
                    return
            except Exception as error:  # the store unreachable (any driver's error): try again
                self._tell(f"{self.record.url(LOCK)}: could not renew the lease ({error})")

    def _start_renewing(self) -> None:
        if not self._renew:
            return
        wake, self._wake = os.pipe()
        self._renewer = threading.Thread(
            target=self._renewing, args=(wake,), name=f"fundpipe-lease-{self.what}", daemon=True
        )
        self._renewer.start()
        self._renewer_reads = wake

    def release(self) -> None:
        """Stop renewing and remove the lease if it is still ours."""
        if self._renewer is not None:
            os.write(self._wake, b"x")
            self._renewer.join()
            os.close(self._wake)
            os.close(self._renewer_reads)
            self._renewer = None
        if self._token is None:
            return
        holder = Holder.of(self._raw() or {})
        if holder is not None and holder.token == self._token:
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
