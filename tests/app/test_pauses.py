"""Who paused a fundpipe deployment, as `fundpipe serve` decides it on start, and what it says."""

from __future__ import annotations

import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fundpipe.app.prefect.pauses import PausedDeployment, paused_by_serve, saying

POLLED = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("after_last_poll", "by_serve"),
    [
        # an older serve paused everything right after its last poll, as it stopped
        (timedelta(seconds=1), True),
        (timedelta(seconds=45), True),
        # a person paused it while serve ran: serve polled on after the pause
        (timedelta(seconds=-2), False),
        (timedelta(hours=-3), False),
        # a person paused it while nothing served it
        (timedelta(minutes=5), False),
        (timedelta(days=2), False),
    ],
)
def test_only_a_pause_right_after_the_last_poll_is_a_stopping_serves(
    after_last_poll: timedelta, by_serve: bool
) -> None:
    assert paused_by_serve(POLLED + after_last_poll, POLLED) is by_serve


def test_a_pause_nobody_can_date_is_kept_as_a_persons() -> None:
    # the server no longer holds the pause's event, or the deployment was never polled
    assert paused_by_serve(None, POLLED) is False
    assert paused_by_serve(POLLED, None) is False


def test_a_kept_pause_says_which_deployment_and_where_to_resume_it() -> None:
    kept = PausedDeployment("inbox/inbox", "d-1", POLLED + timedelta(hours=1), by_serve=False)
    line = saying(kept, "http://127.0.0.1:4200")
    assert line == (
        "deployment inbox/inbox is paused (not by fundpipe serve at 2026-11-28 10:00:00 UTC): "
        "it stays paused and none of its runs is scheduled; resume it with the toggle on "
        "http://127.0.0.1:4200/deployments/deployment/d-1"
    )
    unknown = saying(PausedDeployment("nightly/nightly", "d-2", None, False), "http://ui")
    assert "(by whom the server no longer says)" in unknown
    assert unknown.endswith("http://ui/deployments/deployment/d-2")


def test_an_older_serves_pause_says_it_was_resumed() -> None:
    ours = PausedDeployment("nightly/nightly", "d-3", POLLED + timedelta(seconds=2), True)
    assert saying(ours, "http://ui") == (
        "deployment nightly/nightly was paused at 2026-11-28 09:00:02 UTC by an older "
        "`fundpipe serve` as it stopped: resumed"
    )


def test_serve_against_a_prefect_server_that_does_not_answer_says_so_in_one_line(
    tmp_path: Path,
) -> None:
    port = free_port()  # nothing listens there
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PREFECT_HOME": str(tmp_path / "prefect"),
        "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
        "FUNDPIPE_DATA_DIR": str(tmp_path / "data"),
    }
    done = subprocess.run(
        [str(Path(sys.executable).with_name("fundpipe")), "serve"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert (
        f"error: the Prefect server at http://127.0.0.1:{port}/api (PREFECT_API_URL) does not "
        "answer (ConnectError): start it, or unset PREFECT_API_URL for `fundpipe serve` to start "
        "one of its own"
    ) in done.stderr
