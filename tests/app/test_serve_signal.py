"""`fundpipe serve`'s SIGTERM: a stop lost in a finalizer is asked for again until it begins.

A KeyboardInterrupt raised while the main thread runs an object's ``__del__`` is printed as
"Exception ignored" and dropped; `fundpipe serve` then kept serving after `systemctl stop`
(seen in CI: "still running 30 s after SIGTERM"). The signal is delivered again until the
serve's contexts start unwinding, and not after."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator

import pytest

from fundpipe.app.prefect.server import SignalledStop


@pytest.fixture
def stop() -> Iterator[SignalledStop]:
    was, hook = signal.getsignal(signal.SIGTERM), sys.unraisablehook
    stop = SignalledStop(again_after_s=0.2)
    stop.install()
    try:
        yield stop
    finally:
        stop.begun()  # no delivery left to fire into another test
        time.sleep(0.5)
        signal.signal(signal.SIGTERM, was)
        sys.unraisablehook = hook


def _interrupted_within(seconds: float, *, send: bool = False) -> bool:
    try:
        if send:  # inside the try: the handler runs as soon as the kill returns
            os.kill(os.getpid(), signal.SIGTERM)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            time.sleep(0.01)
    except KeyboardInterrupt:
        return True
    return False


def test_a_lost_stop_is_asked_for_again_until_it_begins(stop: SignalledStop) -> None:
    assert _interrupted_within(1.0, send=True)  # the first delivery, which a finalizer may swallow
    assert _interrupted_within(1.0), "a stop whose first interrupt was lost is asked again"
    stop.begun()  # the serve's contexts unwind: its shutdown is left alone
    assert not _interrupted_within(0.8)


class _Dropped:
    """An object whose finalizer is where the signal lands (as an asyncio transport's did)."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # the handler runs here, inside the finalizer: Python drops its raise


def test_prefects_stop_lost_in_a_finalizer_is_one_line_and_asked_again(
    stop: SignalledStop, capsys: pytest.CaptureFixture[str]
) -> None:
    """Once Prefect's serve loop has its own SIGTERM handler (raising TerminationSignal), a
    stop lost in a finalizer printed a traceback and was lost; now it is one line and the
    signal comes again."""
    from prefect.exceptions import TerminationSignal

    def prefects(signum: int, frame: object) -> None:
        raise TerminationSignal(signal=signum)

    signal.signal(signal.SIGTERM, prefects)
    try:
        _Dropped()
    except TerminationSignal:
        pytest.fail("the finalizer's raise reached the caller: nothing was lost")
    said = capsys.readouterr().err
    assert "Traceback" not in said
    assert "the stop arrived while Python was tidying an object away" in said
    try:
        time.sleep(1.0)
    except TerminationSignal:
        pass
    else:
        pytest.fail("the lost stop was not asked for again")
