"""`fundpipe serve` stops on SIGTERM — what systemd and container runtimes send — idle, and
with a run in progress, within seconds, taking the Prefect server it started down with it.

Each serve is started as a person would (no `PREFECT_API_URL`: it starts its own server on
loopback), with the embedded sandbox; the SIGTERM goes to the `fundpipe serve` process alone,
as `systemctl stop` / `docker stop` send it.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from prefect_processes import (
    FUNDPIPE,
    PREFECT,
    PrefectApi,
    base_env,
    free_port,
    healthy,
    processes,
    run_cli,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.timeout(600)]

#: "Within seconds": the serve loop stops, the run is cancelled, the server is stopped.
STOPS_WITHIN_S = 30


def _stops_on_sigterm(process: subprocess.Popen[bytes]) -> float:
    """Send SIGTERM to the process alone; how long it took to exit (fails past the bound)."""
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=STOPS_WITHIN_S)
    except subprocess.TimeoutExpired:
        message = f"fundpipe serve still running {STOPS_WITHIN_S} s after SIGTERM"
        raise AssertionError(message) from None
    return time.monotonic() - sent


def _serving(log: Path) -> bool:
    return log.exists() and "being served" in log.read_text(errors="replace")


def test_fundpipe_serve_stops_on_sigterm_idle_and_with_a_run_in_progress(tmp_path: Path) -> None:
    port = free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    env = base_env(tmp_path / "prefect-home", None, tmp_path / "data")
    env["FUNDPIPE_PREFECT_PORT"] = str(port)
    logs = tmp_path / "logs"
    with processes(logs) as procs:
        # idle: serving, nothing running
        idle = procs.start("serve-idle", [FUNDPIPE, "serve"], env)
        wait_for("fundpipe serve to serve", lambda: _serving(logs / "serve-idle.log"), 240)
        took = _stops_on_sigterm(idle)
        assert not healthy(api_url), "the Prefect server it started still answers"
        print(f"idle: stopped {took:.1f} s after SIGTERM")

        # a run in progress (the nightly over the embedded sandbox), after one it served
        busy = procs.start("serve-busy", [FUNDPIPE, "serve"], env)
        wait_for("fundpipe serve to serve", lambda: _serving(logs / "serve-busy.log"), 240)
        api = PrefectApi(api_url)
        remote = {**env, "PREFECT_API_URL": api_url}

        def in_state(*kinds: str) -> dict[str, Any] | None:
            runs = api.flow_runs("nightly/nightly")
            found = [r for r in runs if (r.get("state") or {}).get("type") in kinds]
            return found[0] if found else None

        # after it served a run (where SIGTERM used to be ignored), and with the next running
        run_cli([PREFECT, "deployment", "run", "nightly/nightly"], remote)
        wait_for("the first nightly run to end", lambda: in_state("COMPLETED", "FAILED"), 180)
        run_cli([PREFECT, "deployment", "run", "nightly/nightly"], remote)
        run = wait_for("the next nightly run to be running", lambda: in_state("RUNNING"), 120, 0.2)
        took = _stops_on_sigterm(busy)
        assert not healthy(api_url), "the Prefect server it started still answers"
        print(f"with run {run['name']} in progress: stopped {took:.1f} s after SIGTERM")
        log = (logs / "serve-busy.log").read_text(errors="replace")
        assert "Traceback" not in log.split("being served", 1)[1], log[-3000:]
