"""A run waiting for a lock is never silent: the `fundpipe` command prints the locks' lines on
standard error even though `fundpipe run` quiets Prefect's console (its root handler shows only
CRITICAL lines)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from fundpipe.app.cli.process import LOCK_LOGGERS, say_lock_lines
from fundpipe.record import OrgLock, Record, RecordLockedError
from fundpipe.record.lock import LOCK


@pytest.fixture
def quiet_console() -> Iterator[None]:
    """The root logger as `fundpipe run` leaves it: a console handler showing CRITICAL only;
    the lock loggers as they were afterwards."""
    root = logging.getLogger()
    console = logging.StreamHandler()
    console.setLevel(logging.CRITICAL)
    root.addHandler(console)
    kept = {
        name: (logging.getLogger(name).handlers[:], logging.getLogger(name).propagate)
        for name in LOCK_LOGGERS
    }
    try:
        yield
    finally:
        root.removeHandler(console)
        for name, (handlers, propagate) in kept.items():
            logging.getLogger(name).handlers[:] = handlers
            logging.getLogger(name).propagate = propagate


def test_a_night_waiting_for_the_lease_prints_who_holds_it_until_when(
    tmp_path: Path, quiet_console: None, capsys: pytest.CaptureFixture[str]
) -> None:
    record = Record(str(tmp_path / "record"))
    record.create(
        LOCK,
        b'{"token": "t", "host": "vm-b", "pid": 7, "what": "night", '
        b'"since": "2026-12-01T05:58:00+00:00", "expires": "2999-01-01T00:00:00+00:00"}',
    )
    say_lock_lines()
    say_lock_lines()  # once is enough: no line twice
    with pytest.raises(RecordLockedError):
        OrgLock(record, expiry_s=300, wait_s=0.1, sleep=lambda _: None).acquire()
    assert capsys.readouterr().err.splitlines() == [
        f"{record.url(LOCK)}: the night of this organization, pid 7 on vm-b since "
        "2026-12-01T05:58:00+00:00 holds it until 2999-01-01T00:00:00+00:00 (renewed while it "
        "runs); waiting up to 0.1 s"
    ]
