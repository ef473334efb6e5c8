"""Killed at every step: a real night process of `org_demo` gets SIGKILL while it ingests, while it
syncs, while its reports are written and while its snapshot is taken, holding the organization's
lease. Each time the next night takes the lease over at once (its holder is gone), completes
well within the lease's time, creates nothing twice at the service, and `latest` points at a
complete report. Once with the record in a folder of the data directory, once on an
S3-compatible server (moto's, on loopback).

One sandbox and one data folder serve the four kills of a record: each round drops a sheet of
its own, so the service must end with exactly one distribution per reference dropped."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest

from fundpipe.config import Organization, Settings
from fundpipe.night import night
from fundpipe.record import Record, list_snapshots
from fundpipe.record.lock import LOCK
from fundpipe.sandbox import SandboxConfig, SandboxServer
from record.conftest import AWS, point_at_s3
from worlds.submit import write_sheet

pytestmark = pytest.mark.slow

STEPS = ("ingest", "sync", "reports", "snapshot")
DRIVER = Path(__file__).with_name("night_until_killed.py")
#: the lease of these nights (the default): the next night must complete well within it
LEASE_S = 300.0
#: the first round's as-of; each round reports one day later, so `latest` must move each time
FIRST_AS_OF = dt.date(2026, 12, 1)


@pytest.fixture(scope="module")
def pycache(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """A bytecode cache the night processes share when the environment forbids writing one
    (under PYTHONDONTWRITEBYTECODE each start compiles fundpipe and its libraries again)."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return None
    return tmp_path_factory.mktemp("pycache")


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[SandboxServer]:
    config = SandboxConfig(
        db_path=tmp_path / "sandbox.sqlite",
        seed="demo",
        rate_limit_requests=100_000,
        rate_limit_window_s=1,
    )
    with SandboxServer(config) as running:
        yield running


def _env(
    sandbox: SandboxServer, data_dir: Path, record_url: str | None, pycache: Path | None
) -> dict[str, str]:
    """The nights' environment: the loopback sandbox, quick retries, the inbox taken at once."""
    env = {
        "FUNDPIPE_BASE_URL": sandbox.base_url,
        "FUNDPIPE_CLIENT_ID": "demo-client",
        "FUNDPIPE_CLIENT_SECRET": "demo-secret",
        "FUNDPIPE_ORG_ID": "org_demo",
        "FUNDPIPE_DATA_DIR": str(data_dir),
        "FUNDPIPE_BACKOFF_INITIAL_S": "0.01",
        "FUNDPIPE_BACKOFF_MAX_S": "0.05",
        "FUNDPIPE_RATE_LIMIT_PER_S": "1000",
        "FUNDPIPE_INBOX_SETTLE_S": "0",
        "FUNDPIPE_RECORD_LOCK_EXPIRY_S": str(LEASE_S),
    }
    if record_url:
        env["FUNDPIPE_RECORD_URL"] = record_url
    if pycache is not None:
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def _service_references(db: Path) -> list[str]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
        rows = conn.execute("SELECT external_reference FROM distributions WHERE org = 'org_demo'")
        return sorted(str(r[0]) for r in rows)


def _kill_at(step: str, env: dict[str, str], as_of: dt.date, marker: Path) -> int:
    """Start a night that holds at ``step``; SIGKILL it there; its pid."""
    child_env = {  # the session's cache (its empty warehouse) is shared, nothing else of ours
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("FUNDPIPE_", "AWS_")) or k == "FUNDPIPE_CACHE_DIR"
    }
    if "PYTHONPYCACHEPREFIX" in env:
        child_env.pop("PYTHONDONTWRITEBYTECODE", None)
    child_env.update(env)
    child = subprocess.Popen(
        [sys.executable, str(DRIVER), step, str(marker), as_of.isoformat()],
        env=child_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), f"the night never reached {step}: {child.communicate()[0]}"
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    marker.unlink()
    return child.pid


def _kill_at_every_step(
    sandbox: SandboxServer,
    env: dict[str, str],
    settings: Settings,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    record = Record(settings.local.record_location)
    reports = settings.local.reports_folder
    dropped: list[str] = []
    for round_, step in enumerate(STEPS):
        as_of = FIRST_AS_OF + dt.timedelta(days=round_)
        refs = [f"K{round_}A", f"K{round_}B"]
        settings.local.data_dir.joinpath("inbox").mkdir(parents=True, exist_ok=True)
        write_sheet(
            settings.local.data_dir / "inbox" / f"round{round_}.csv",
            [(ref, "veh_demo1", [1_000_00 + round_, 2_000_00]) for ref in refs],
        )
        dropped += refs

        killed = _kill_at(step, env, as_of, tmp_path / f"at-{step}")
        lease = json.loads(record.read(LOCK))  # the crash left the lease behind
        assert lease["pid"] == killed

        caplog.clear()
        started = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="fundpipe.record.lock"):
            done = night(settings, as_of=as_of)
        took = time.monotonic() - started
        assert took < LEASE_S / 5, f"after a kill at {step} the next night took {took:.0f} s"
        assert [r.getMessage() for r in caplog.records] == [
            f"{record.url(LOCK)}: took over the lock of the night of this organization, "
            f"pid {killed} on {socket.gethostname()} since {lease['since']}: its process is "
            f"gone (pid {killed} on {socket.gethostname()})"
        ], step
        assert not record.exists(LOCK)  # released

        # nothing created twice: one distribution per reference dropped, none lost
        assert _service_references(sandbox.config.db_path) == sorted(dropped), step
        assert done.files_rejected == 0
        assert not list((settings.local.data_dir / "processing").glob("*.csv")), step
        assert (settings.local.data_dir / "processed" / f"round{round_}.csv").exists()
        # latest: tonight's report, complete
        latest = (reports / "latest").resolve()
        assert latest == done.reports_dir.resolve(), step
        assert latest.parent.name == as_of.isoformat()
        assert {"reconciliation.xlsx", "report.json"} <= {p.name for p in latest.iterdir()}
        assert json.loads((latest / "report.json").read_text())  # whole JSON, not cut short
        assert list_snapshots(record)[-1].manifest["as_of"] == as_of.isoformat()


def _settings(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The organization's settings as the night process builds them, from the same environment."""
    for name, value in env.items():
        if name.startswith(("FUNDPIPE_", "AWS_")):
            monkeypatch.setenv(name, value)
    return Settings(_env_file=None).for_org(Organization(id="org_demo"), several=False)  # type: ignore[call-arg]


def test_a_night_killed_at_any_step_never_blocks_the_next(
    sandbox: SandboxServer,
    pycache: Path | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The record in its default place, a folder of the data directory."""
    env = _env(sandbox, tmp_path / "data", None, pycache)
    _kill_at_every_step(sandbox, env, _settings(env, monkeypatch), caplog, tmp_path)


def test_on_s3_a_night_killed_at_any_step_never_blocks_the_next(
    sandbox: SandboxServer,
    pycache: Path | None,
    s3_endpoint: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The lease held in the record on an S3-compatible server."""
    # the night process: FSSPEC_S3_ENDPOINT_URL, as an operator sets it; this one: fsspec's config
    point_at_s3(s3_endpoint, monkeypatch)
    bucket = f"killed-{tmp_path.name.lower().replace('_', '-')[-40:]}"
    fsspec.filesystem("s3", skip_instance_cache=True).mkdir(bucket)
    env = {
        **_env(sandbox, tmp_path / "data", f"s3://{bucket}/fundpipe", pycache),
        **AWS,
        "FSSPEC_S3_ENDPOINT_URL": s3_endpoint,
    }
    settings = _settings(env, monkeypatch)
    assert settings.local.record_location.startswith("s3://")
    _kill_at_every_step(sandbox, env, settings, caplog, tmp_path)
