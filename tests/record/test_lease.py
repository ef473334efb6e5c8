"""The organization's lock is a lease a crash cannot leave behind: it names its holder (host, pid,
the process's start), is renewed while held, and the next night takes over a holder that is gone
— at once on this host, once the lease lapsed from another — saying so in one line; a live
holder is waited for, telling who holds it until when, then exit 4 with that sentence."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fundpipe.errors import ExitCode
from fundpipe.record import OrgLock, Record, RecordLockedError
from fundpipe.record.lock import LOCK, process_start, this_host

T0 = dt.datetime(2026, 12, 1, 6, tzinfo=dt.UTC)


@pytest.fixture
def record(tmp_path: Path) -> Record:
    return Record(str(tmp_path / "record" / "org_a"))


def _left(record: Record, **holder: object) -> dict[str, object]:
    """A lock.json left by a holder that never released it."""
    body: dict[str, object] = {
        "token": "0123456789abcdef",
        "host": "vm-a",
        "pid": 4242,
        "started": "1000",
        "boot": "another-boot/1",
        "what": "night",
        "since": "2026-12-01T05:58:00+00:00",
        "expires": "2026-12-01T06:03:00+00:00",
        **holder,
    }
    record.create(LOCK, json.dumps(body).encode())
    return body


def _dead_pid() -> tuple[int, str]:
    """The pid and start of a process of this host that has ended."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=-1)
    started = process_start(child.pid)
    assert started is not None
    child.kill()
    child.wait()
    return child.pid, started


def _holder(record: Record) -> dict[str, object]:
    found: dict[str, object] = json.loads(record.read(LOCK))
    return found


def test_a_lease_names_its_holder_and_lapses_in_minutes(record: Record) -> None:
    with OrgLock(record, expiry_s=300, clock=lambda: T0):
        holder = _holder(record)
    assert holder["pid"] == os.getpid()
    assert holder["started"] == process_start(os.getpid())
    assert holder["boot"] == this_host()
    assert (holder["since"], holder["expires"]) == (
        "2026-12-01T06:00:00+00:00",
        "2026-12-01T06:05:00+00:00",
    )
    assert not record.exists(LOCK)


def test_the_lease_of_a_dead_process_on_this_host_is_taken_over_at_once(record: Record) -> None:
    pid, started = _dead_pid()
    _left(record, pid=pid, started=started, boot=this_host(), expires="2026-12-01T12:00:00+00:00")
    told: list[str] = []
    with OrgLock(record, expiry_s=300, clock=lambda: T0, tell=told.append):
        assert _holder(record)["pid"] == os.getpid()
    assert told == [
        f"{record.url(LOCK)}: took over the lock of the night of this organization, pid {pid} "
        f"on vm-a since 2026-12-01T05:58:00+00:00: its process is gone (pid {pid} on vm-a)"
    ]


def test_a_reused_pid_is_not_the_holder_its_start_time_differs(record: Record) -> None:
    """The pid is alive (this very process) but started at another time than the holder's."""
    _left(record, pid=os.getpid(), started="1", boot=this_host(), expires="2026-12-01T12:00:00")
    lock = OrgLock(record, expiry_s=300, clock=lambda: T0, tell=lambda _: None)
    with lock:
        assert _holder(record)["started"] == process_start(os.getpid())
    assert len(lock.told) == 1
    assert "its process is gone" in lock.told[0]


def test_a_live_holder_is_waited_for_and_named_then_exit_4(record: Record) -> None:
    """Another host's lease, still renewed: the wait says who holds it until when (once per
    change), and after the bounded wait the error is that sentence."""
    _left(record, host="vm-b", expires="2026-12-01T06:04:00+00:00")
    slept: list[float] = []
    lock = OrgLock(
        record, expiry_s=300, wait_s=0.2, clock=lambda: T0, tell=lambda _: None,
        sleep=lambda s: (slept.append(s), time.sleep(0.05)),
    )  # fmt: skip
    with pytest.raises(RecordLockedError) as held:
        lock.acquire()
    assert held.value.exit_code == ExitCode.LOCKED
    sentence = (
        f"{record.url(LOCK)}: the night of this organization, pid 4242 on vm-b since "
        "2026-12-01T05:58:00+00:00 holds it until 2026-12-01T06:04:00+00:00"
    )
    assert str(held.value).startswith(sentence)
    assert len(slept) >= 2
    assert lock.told == [f"{sentence} (renewed while it runs); waiting up to 0.2 s"]
    assert _holder(record)["host"] == "vm-b"  # left alone


def test_another_hosts_lease_is_taken_over_once_it_lapsed(record: Record) -> None:
    _left(record, host="vm-b", expires="2026-12-01T06:04:00+00:00")
    now = [T0]
    waiting = OrgLock(record, expiry_s=300, clock=lambda: now[0], tell=lambda _: None)
    with pytest.raises(RecordLockedError):
        waiting.acquire()
    now[0] = T0 + dt.timedelta(minutes=4, seconds=1)  # vm-b stopped renewing four minutes ago
    waiting.acquire()
    waiting.release()
    assert waiting.told == [
        f"{record.url(LOCK)}: took over the lock of the night of this organization, pid 4242 on "
        "vm-b since 2026-12-01T05:58:00+00:00: its lease expired at 2026-12-01T06:04:00+00:00 "
        "(pid 4242 on vm-b)"
    ]


def test_the_holder_renews_its_lease_while_it_runs(record: Record) -> None:
    """A lease of 0.3 s held for longer: renewed every 0.1 s, never taken by a second night."""
    began = time.monotonic()

    def clock() -> dt.datetime:  # the test's clock, running from T0
        return T0 + dt.timedelta(seconds=time.monotonic() - began)

    with OrgLock(record, expiry_s=0.3, clock=clock):
        first = _holder(record)["expires"]
        second = OrgLock(record, expiry_s=0.3, clock=clock, tell=lambda _: None)
        deadline = time.monotonic() + 10
        while _holder(record)["expires"] == first and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _holder(record)["expires"] > first  # type: ignore[operator]
        assert _holder(record)["since"] == json.loads(record.read(LOCK))["since"]
        time.sleep(0.5)  # longer than the lease: still renewed
        with pytest.raises(RecordLockedError):
            second.acquire()
    assert not record.exists(LOCK)


def test_a_killed_holder_leaves_a_lease_the_next_night_takes_at_once(
    record: Record, tmp_path: Path
) -> None:
    """A real process takes the lease and is SIGKILLed holding it: the next night on this host
    takes it over without waiting for its expiry (an hour here)."""
    taken = tmp_path / "taken"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import pathlib, sys, time\n"
            "from fundpipe.record import OrgLock, Record\n"
            f"OrgLock(Record({record.location!r}), expiry_s=3600).acquire()\n"
            f"pathlib.Path({str(taken)!r}).touch()\n"
            "time.sleep(600)\n",
        ]
    )
    try:
        deadline = time.monotonic() + 60
        while not taken.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert taken.exists()
    finally:
        holder.kill()
        holder.wait()
    assert _holder(record)["pid"] == holder.pid
    started = time.monotonic()
    lock = OrgLock(record, expiry_s=3600, wait_s=60, tell=lambda _: None)
    with lock:
        assert _holder(record)["pid"] == os.getpid()
    assert time.monotonic() - started < 5
    assert [f"its process is gone (pid {holder.pid}" in line for line in lock.told] == [True]


def test_on_s3_the_lease_is_renewed_in_place_and_removed_at_the_end(
    s3_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fsspec

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setitem(fsspec.config.conf, "s3", {"endpoint_url": s3_endpoint})
    bucket = f"lease-{tmp_path.name.lower().replace('_', '-')[-40:]}"
    fsspec.filesystem("s3", skip_instance_cache=True).mkdir(bucket)
    record = Record(f"s3://{bucket}/fundpipe/org_a")
    now = [T0]
    lock = OrgLock(record, expiry_s=300, clock=lambda: now[0], renew=False)
    with lock:
        now[0] = T0 + dt.timedelta(minutes=2)
        assert lock.renew()
        assert _holder(record)["expires"] == "2026-12-01T06:07:00+00:00"
        assert _holder(record)["since"] == "2026-12-01T06:00:00+00:00"
    assert not record.exists(LOCK)
    assert not lock.renew()  # released: nothing to renew
