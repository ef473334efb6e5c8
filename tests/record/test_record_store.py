"""The durable record's own rules, on a small warehouse: nothing rewritten, one machine at a time,
retention, damage found by its hash, and a restore as the record was at a time."""

from __future__ import annotations

import datetime as dt
import getpass
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fundpipe.app.cli import app
from fundpipe.config import Organization, Settings
from fundpipe.errors import ExitCode
from fundpipe.record import (
    OrgLock,
    Record,
    RecordError,
    RecordLockedError,
    catch_up,
    list_snapshots,
    read_decisions,
    record_decision,
    restore,
    take_snapshot,
    verify_record,
)
from fundpipe.record.store import RecordExistsError
from fundpipe.warehouse.file import Warehouse

runner = CliRunner()
T0 = dt.datetime(2026, 12, 1, 6, tzinfo=dt.UTC)


def _at(hours: float) -> dt.datetime:
    return T0 + dt.timedelta(hours=hours)


@pytest.fixture
def org(tmp_path: Path) -> Settings:
    """org_a's settings, its record in another folder, a warehouse with one exception event."""
    top = Settings(
        _env_file=None, local={"data_dir": tmp_path / "data", "record_url": str(tmp_path / "nas")}
    )  # type: ignore[call-arg]
    settings = top.for_org(Organization(id="org_a"), several=False)
    _event(settings, "EX-1", "opened", _at(0))
    return settings


def _event(settings: Settings, exception_id: str, event: str, at: dt.datetime) -> dict[str, object]:
    row = {
        "exception_id": exception_id,
        "event": event,
        "event_at": at,
        "as_of": at.date(),
        "by_name": "ana",
        "note": f"{event} at {at:%H:%M}",
    }
    with Warehouse(settings.local.warehouse_file).write() as con:
        con.execute(
            f"INSERT INTO exception_events ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
            list(row.values()),
        )
    return row


def _notes(settings: Settings) -> list[str]:
    with Warehouse(settings.local.warehouse_file).read() as con:
        rows = con.execute("SELECT note FROM exception_events ORDER BY seq").fetchall()
    return [str(n) for (n,) in rows]


def test_the_record_location_is_per_organization_under_data_by_default(tmp_path: Path) -> None:
    top = Settings(_env_file=None, local={"data_dir": tmp_path / "data"})  # type: ignore[call-arg]
    one = top.for_org(Organization(id="org_a"), several=True)
    assert one.local.record_location == str(tmp_path / "data" / "record" / "org_a")
    assert one.local.data_dir == tmp_path / "data" / "orgs" / "org_a"
    shared = top.updated(local={"record_url": "s3://bucket/fundpipe/"})
    assert shared.for_org(Organization(id="org_b"), several=True).local.record_location == (
        "s3://bucket/fundpipe/org_b"
    )


def test_an_object_in_the_record_is_never_rewritten(tmp_path: Path) -> None:
    record = Record(str(tmp_path / "record"))
    record.create("decisions/one.json", b"first")
    with pytest.raises(RecordExistsError, match="in the record already"):
        record.create("decisions/one.json", b"second")
    assert record.read("decisions/one.json") == b"first"


def test_each_decision_is_its_own_object_in_the_order_made(org: Settings) -> None:
    rows = {"exception_events": [{"exception_id": "EX-1", "event": "acknowledged"}]}
    first = record_decision(org, "acknowledged", rows, at=_at(1), clock=lambda: _at(1))
    second = record_decision(org, "acknowledged", rows, at=_at(1), clock=lambda: _at(1))
    assert first != second
    names = Record(org.local.record_location).names("decisions")
    assert [f"{org.local.record_location}/{n}" for n in names] == sorted([first, second])
    body = json.loads(Path(first).read_text())
    assert (body["decision"], body["at"]) == ("acknowledged", _at(1).isoformat())


def test_two_machines_never_hold_one_organization_and_a_dead_ones_lock_expires(
    org: Settings,
) -> None:
    record = Record(org.local.record_location)
    now = [_at(0)]
    a = OrgLock(record, expiry_s=3600, clock=lambda: now[0])
    b = OrgLock(record, expiry_s=3600, clock=lambda: now[0])
    a.acquire()
    with pytest.raises(RecordLockedError, match=r"pid \d+ on .* holds it until") as held:
        b.acquire()
    assert held.value.exit_code == ExitCode.LOCKED
    now[0] = _at(2)  # machine A died holding it: expired
    b.acquire()
    a.release()  # no longer A's: left alone
    assert record.exists("lock.json")
    b.release()
    assert not record.exists("lock.json")


def test_a_second_night_of_the_organization_waits_for_the_first_when_told_to(
    org: Settings,
) -> None:
    record = Record(org.local.record_location)
    first = OrgLock(record, expiry_s=3600)
    first.acquire()
    waited: list[float] = []

    def meanwhile(seconds: float) -> None:  # the first night ends while the second waits
        waited.append(seconds)
        first.release()

    second = OrgLock(record, expiry_s=3600, wait_s=60, sleep=meanwhile)
    second.acquire()
    assert len(waited) == 1
    second.release()


def test_retention_keeps_the_last_nights_and_the_snapshot_at_each_close(org: Settings) -> None:
    keep_two = org.updated(local={"record_keep_nights": 2})
    take_snapshot(keep_two, clock=lambda: _at(1))
    with Warehouse(org.local.warehouse_file).write() as con:
        con.execute(
            "INSERT INTO period_events (period, event, event_at, by_name) "
            "VALUES ('2026-11', 'closed', ?, 'ana')",
            [_at(2)],
        )
    take_snapshot(keep_two, clock=lambda: _at(2))  # the first holding November's close
    for hours in (3, 4, 5):
        take_snapshot(keep_two, clock=lambda h=hours: _at(h))  # type: ignore[misc]
    kept = [s.taken_at for s in list_snapshots(Record(org.local.record_location))]
    assert kept == [_at(2), _at(4), _at(5)]


def test_a_damaged_snapshot_is_named_and_nothing_local_is_touched(org: Settings) -> None:
    taken = take_snapshot(org, clock=lambda: _at(1))
    assert taken is not None
    assert verify_record(org).ok
    stored = Path(org.local.record_location) / taken.name / "warehouse.duckdb"
    data = bytearray(stored.read_bytes())
    data[5000:5010] = b"\xff" * 10
    stored.write_bytes(bytes(data))

    check = verify_record(org)
    assert not check.ok
    assert check.problems == [f"{taken.url}/warehouse.duckdb differs from its manifest (sha256)"]
    local = org.local.warehouse_file.read_bytes()
    with pytest.raises(RecordError, match=r"warehouse.duckdb does not match its manifest"):
        restore(org)
    assert org.local.warehouse_file.read_bytes() == local
    said = runner.invoke(
        app,
        ["backup", "--verify", "--org", "org_a", "--data-dir", str(org.local.data_dir.parents[1])],
        env={"FUNDPIPE_RECORD_URL": str(Path(org.local.record_location).parent)},
    )
    assert said.exit_code == 1, said.output
    assert "warehouse.duckdb differs from its manifest" in said.output


def test_a_restore_at_a_time_takes_the_record_as_it_was_then(org: Settings) -> None:
    take_snapshot(org, clock=lambda: _at(1))
    ack = _event(org, "EX-1", "acknowledged", _at(2))
    record_decision(
        org, "acknowledged", {"exception_events": [ack]}, at=_at(2), clock=lambda: _at(2)
    )
    assign = _event(org, "EX-1", "assigned", _at(3))
    record_decision(
        org, "assigned", {"exception_events": [assign]}, at=_at(3), clock=lambda: _at(3)
    )
    everything = _notes(org)

    back = restore(org, at=_at(2.5), clock=lambda: _at(4))
    assert back.decisions_replayed == 1
    assert _notes(org) == everything[:2]  # opened, acknowledged; not yet assigned
    assert [p.name for p in back.set_aside] == ["warehouse.duckdb.before-restore-20261201T100000Z"]

    now = restore(org, clock=lambda: _at(5))
    assert now.decisions_replayed == 2
    assert _notes(org) == everything
    assert restore(org, clock=lambda: _at(6)).decisions_replayed == 2  # from the snapshot again
    assert _notes(org) == everything  # nothing twice

    with pytest.raises(RecordError, match="holds no snapshot taken by"):
        restore(org, at=_at(0.5))


def test_an_acknowledgement_at_the_command_line_is_in_the_record_when_made(
    org: Settings,
) -> None:
    said = runner.invoke(
        app,
        ["exceptions", "ack", "EX-1", "--note", "paid by wire", "--by", "bo", "--org", "org_a"],
        env={
            "FUNDPIPE_DATA_DIR": str(org.local.data_dir.parents[1]),
            "FUNDPIPE_RECORD_URL": str(Path(org.local.record_location).parent),
        },
    )
    assert said.exit_code == 0, said.output
    (decision,) = read_decisions(Record(org.local.record_location))
    assert decision.decision == "acknowledged"
    (row,) = decision.rows["exception_events"]
    assert (row["exception_id"], row["note"]) == ("EX-1", "paid by wire")
    assert row["by_name"] == f"bo (typed at the CLI by OS user {getpass.getuser()})"


def test_a_night_s_start_restores_only_what_the_record_has_more_of(
    org: Settings, tmp_path: Path
) -> None:
    """`catch_up` (each night's start): nothing while the local state is the record's newest
    snapshot (nor for a ledger the record never had); everything once another machine took a
    newer one; the warehouse when it is empty; and a person's `restore --at` an earlier time
    stays as the person left it."""
    take_snapshot(org, clock=lambda: _at(1))
    assert catch_up(org) is None  # no ledger here, and none in the record: nothing to restore

    top = Settings(
        _env_file=None,
        local={"data_dir": tmp_path / "other", "record_url": str(tmp_path / "nas")},
    )  # type: ignore[call-arg]
    other = top.for_org(Organization(id="org_a"), several=False)
    first = catch_up(other, clock=lambda: _at(2))
    assert first is not None
    assert first.why == "this machine held no local state of the organization"
    _event(other, "EX-2", "opened", _at(2))
    take_snapshot(other, clock=lambda: _at(3))
    assert catch_up(other) is None

    behind = catch_up(org, clock=lambda: _at(4))
    assert behind is not None
    assert behind.files == ["warehouse.duckdb"]
    assert "older than the record's: another machine ran this organization since" in behind.why
    assert _notes(org) == ["opened at 06:00", "opened at 08:00"]  # the other machine's too
    assert catch_up(org) is None

    org.local.warehouse_file.unlink()
    Warehouse(org.local.warehouse_file).migrate()  # an empty warehouse, as a lost one rebuilt
    empty = catch_up(org, clock=lambda: _at(5))
    assert empty is not None
    assert empty.why == "the warehouse was empty"
    assert _notes(org) == ["opened at 06:00", "opened at 08:00"]

    restore(org, at=_at(1.5), clock=lambda: _at(6))  # a person goes back to the first snapshot
    assert _notes(org) == ["opened at 06:00"]
    assert catch_up(org) is None  # the next night keeps what the person chose
