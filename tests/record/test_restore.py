"""The record outlives the machine: after a short history, the organization's whole data folder is
lost; `fundpipe restore` rebuilds it from the durable record — a plain folder, or an S3-compatible
server on loopback — and every past as-of, every decision and the closed month are as they were;
the next night creates nothing at the service."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import fsspec
import pandas as pd
import pytest
from record_history import LATER, as_of_views, decisions_seen, org_settings, run_history, wipe
from typer.testing import CliRunner

from fundpipe.app.cli import app
from fundpipe.errors import ExitCode
from fundpipe.night import night
from fundpipe.reconcile.lifecycle import acknowledge, list_exceptions
from fundpipe.record import (
    OrgLock,
    Record,
    RecordLockedError,
    decision_sink,
    list_snapshots,
    read_decisions,
)
from fundpipe.warehouse.file import Warehouse
from record.conftest import point_at_s3
from worlds.submit import World, write_sheet

#: Among the longest files: `make test` hands them out first (tests/conftest.py).
pytestmark = pytest.mark.slow

runner = CliRunner()


@pytest.fixture
def s3_record(s3_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A bucket of the S3-compatible server, as FUNDPIPE_RECORD_URL names it."""
    point_at_s3(s3_endpoint, monkeypatch)
    bucket = f"record-{tmp_path.name.lower().replace('_', '-')[-40:]}"
    fsspec.filesystem("s3", skip_instance_cache=True).mkdir(bucket)
    return f"s3://{bucket}/fundpipe"


def _requests(world: World) -> list[str]:
    return [r["operation"] for r in world.control("GET", "request_log")["requests"]]


def _restore(world: World, record_url: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """`fundpipe restore --org org_demo` with FUNDPIPE_RECORD_URL=record_url, as JSON."""
    monkeypatch.setenv("FUNDPIPE_RECORD_URL", record_url)
    data = ["--data-dir", str(world.settings.local.data_dir)]
    restored = runner.invoke(app, ["restore", "--org", "org_demo", *data, "--json"])
    assert restored.exit_code == 0, restored.output
    said: dict[str, Any] = json.loads(restored.output)
    return said


def _verified(world: World) -> None:
    """`close verify 2026-12` and `backup --verify` pass."""
    data = ["--data-dir", str(world.settings.local.data_dir), "--org", "org_demo"]
    verified = runner.invoke(app, ["close", "verify", "2026-12", *data])
    assert verified.exit_code == 0, verified.output
    checked = runner.invoke(app, ["backup", "--verify", *data])
    assert checked.exit_code == 0, checked.output
    assert "match their SHA-256" in checked.output


def _files(folder: Path) -> dict[str, bytes]:
    """Every file below `folder` (a closed package carries its month's events in `events/`)."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def test_a_lost_data_folder_is_restored_from_the_record_whole(
    world: World, s3_record: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The history is recorded on an S3-compatible server; restored from there, then from a
    copy of the record in a plain folder."""
    settings = org_settings(world, s3_record)
    done = run_history(world, settings, tmp_path)
    days = sorted(done.issued)
    seen = decisions_seen(settings)
    assert seen["december"].reviewed_by == "ben"
    closed = settings.local.reports_folder / "closed" / "2026-12"
    package = _files(closed)
    review = closed.parent / "2026-12.v1.review.json"  # the review, beside the package
    reviewed = review.read_bytes()
    record = Record(settings.local.record_location)
    decided = [d.decision for d in read_decisions(record)]
    assert decided[:2] == ["acknowledged", "assigned"]
    assert decided[-2:] == ["closed", "reviewed"]
    assert set(decided[2:-2]) == {"acknowledged"}
    assert len(list_snapshots(record)) == len(days)

    # the disk is lost: the organization's state and reports, all of data/
    wipe(world.settings.local.data_dir)
    said = _restore(world, s3_record, monkeypatch)
    assert said["files"] == ["ledger.binding.json", "ledger.duckdb", "warehouse.duckdb"]
    # the January acknowledgements, the close and the review came after the last snapshot:
    # replayed from their decisions, with the closed month's files; the earlier ones were in it
    assert said["decisions_replayed"] == len(decided) - 2
    assert said["files_put_back"] == len(package) + 1

    # every past day's as-of is the report issued that day
    for day in days:
        after = as_of_views(settings, day, tmp_path / "after" / str(day))
        assert after.keys() == done.issued[day].keys()
        for name, frame in after.items():
            pd.testing.assert_frame_equal(frame, done.issued[day][name], obj=f"{name} of {day}")
    # every acknowledgement, the assignment, the close and its review
    assert decisions_seen(settings) == seen
    assert _files(closed) == package
    assert review.read_bytes() == reviewed
    assert closed.stat().st_mode & 0o777 == 0o554  # the package read-only, as filed
    assert closed.parent.stat().st_mode & 0o200  # closed/ stays writable: the next review
    _verified(world)

    # the same record copied to a plain folder on other storage restores the same
    folder = tmp_path / "other-disk" / "record"
    fsspec.filesystem("s3").get(s3_record.removeprefix("s3://") + "/", str(folder), recursive=True)
    wipe(world.settings.local.data_dir)
    _restore(world, str(folder), monkeypatch)
    settings = org_settings(world, str(folder))
    assert decisions_seen(settings) == seen
    last = as_of_views(settings, days[-1], tmp_path / "from-folder")
    for name, frame in last.items():
        pd.testing.assert_frame_equal(frame, done.issued[days[-1]][name], obj=name)
    _verified(world)

    # the next night creates nothing at the service
    world.control("DELETE", "request_log")
    again = night(settings, transport=world.transport, as_of=LATER.date())
    assert again.distributions_created == 0
    assert [op for op in _requests(world) if op.startswith("POST /v1")] == []
    assert decisions_seen(settings)["december"] == seen["december"]


def test_any_machine_runs_the_organization_from_the_shared_record_one_at_a_time(
    world: World, tmp_path: Path
) -> None:
    """Two machines, each its own data folder, one shared record: machine A runs the first
    night and an analyst acknowledges on it; machine B, holding nothing of the organization,
    runs the next night — restored from the record first, nothing created twice, the
    acknowledgement there. While one machine holds the organization the other does nothing."""
    shared = str(tmp_path / "shared" / "record")
    machine_a = org_settings(world, shared)
    top_b = world.settings.updated(local={"data_dir": tmp_path / "machine-b"})
    machine_b = org_settings(World(top_b, world.transport), shared)
    assert machine_b.local.data_dir != machine_a.local.data_dir
    (machine_a.local.data_dir / "inbox").mkdir(parents=True)
    write_sheet(machine_a.local.data_dir / "inbox" / "dec.csv", [("S1", "veh_demo3", [80_000_000])])
    first = night(machine_a, transport=world.transport, as_of=dt.date(2026, 12, 1))
    assert first.distributions_created == 1
    short = [e for e in first.exceptions if e.kind == "shortfall"]
    assert short
    acknowledge(
        Warehouse(machine_a.local.warehouse_file), short[0].id, note="capital call", by="ana",
        now=dt.datetime(2026, 12, 1, 15, tzinfo=dt.UTC), record=decision_sink(machine_a),
    )  # fmt: skip

    # while machine A holds the organization, machine B's night does nothing
    world.control("DELETE", "request_log")
    record = Record(machine_b.local.record_location)
    with OrgLock(record, expiry_s=3600), pytest.raises(RecordLockedError) as held:
        night(machine_b, transport=world.transport, as_of=dt.date(2026, 12, 2))
    assert held.value.exit_code == ExitCode.LOCKED
    assert _requests(world) == []
    assert not machine_b.local.warehouse_file.exists()

    second = night(machine_b, transport=world.transport, as_of=dt.date(2026, 12, 2))
    assert [op for op in _requests(world) if op.startswith("POST /v1")] == []
    assert world.references().keys() == {"S1"}  # once
    assert second.exceptions_open == 0
    on_b = {e.id: e for e in list_exceptions(Warehouse(machine_b.local.warehouse_file))}
    assert (on_b[short[0].id].state, on_b[short[0].id].acknowledged_by) == ("acknowledged", "ana")
    assert len(list_snapshots(record)) == 2
    assert not record.exists("lock.json")  # released


def test_on_s3_one_machine_at_a_time_holds_the_organization(s3_record: str) -> None:
    """The lock is S3's own conditional write (If-None-Match: *): the second machine is told
    who holds it; once released, it takes it."""
    record = Record(f"{s3_record}/org_demo")
    first = OrgLock(record, expiry_s=3600)
    second = OrgLock(record, expiry_s=3600)
    held = pytest.raises(
        RecordLockedError,
        match=r"lock.json: the night of this organization, pid \d+ on .* holds it until",
    )
    with first, held:
        second.acquire()
    with second:
        assert record.exists("lock.json")
    assert not record.exists("lock.json")
