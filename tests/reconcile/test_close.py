"""Period close: December closed (prepared, then reviewed by another name) stays byte-identical
when a December payment changes at the service in January; January shows the after-close
adjustment, as a line of its own and as an exception."""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fundpipe.app.cli import app
from fundpipe.reconcile import ReconcileResult, reconcile
from fundpipe.reconcile.close import (
    CloseError,
    close_period,
    list_periods,
    reject_period,
    reopen_period,
    review_period,
    verify_period,
)
from fundpipe.reconcile.periods import PeriodState, period_state
from fundpipe.submit.ingest import ingest
from fundpipe.sync.pull import sync
from fundpipe.warehouse.file import Warehouse
from worlds.submit import World, write_sheet

#: Among the longest files: `make test` hands them out first (tests/conftest.py).
pytestmark = pytest.mark.slow


def _hashes(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


class Days:
    """The sandbox clock, a sync and the day's reconciliation, as the nightly runs them."""

    def __init__(self, world: World) -> None:
        self.world = world

    def now(self) -> dt.datetime:
        return dt.datetime.fromisoformat(self.world.control("GET", "clock")["now"])

    def night(self, at: dt.datetime) -> ReconcileResult:
        if at > self.now():
            self.world.control("POST", "clock/set", {"now": at.isoformat()})
        now = self.now()  # the sandbox's own clock, as the sync reads it
        sync(self.world.settings, transport=self.world.transport, clock=lambda: now)
        return reconcile(self.world.settings, clock=lambda: now)


def test_a_closed_month_is_never_rewritten_and_a_late_change_is_an_adjustment(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    days = Days(world)
    world.control("POST", "clock/set", {"now": "2026-12-01T12:00:00+00:00"})
    sheet = tmp_path / "dec.csv"
    write_sheet(sheet, [("D1", "veh_demo1", [100_000, 200_000])], date="2026-12-20 09:00")
    (world.inbox / "dec.csv").write_bytes(sheet.read_bytes())
    ingest(world.settings, transport=world.transport, settle_s=0)
    days.night(dt.datetime(2026, 12, 1, 12, tzinfo=dt.UTC))
    days.night(dt.datetime(2026, 12, 21, 12, tzinfo=dt.UTC))  # both payments disbursed
    january = dt.datetime(2027, 1, 2, 12, tzinfo=dt.UTC)
    days.night(january)  # reads the service's month-end balance
    january += dt.timedelta(hours=1)  # the close, after that night

    # a month cannot be closed before it ends, nor by nobody
    with pytest.raises(CloseError, match="has not ended"):
        close_period(world.settings, "2027-01", prepared_by="ana", clock=lambda: january)
    with pytest.raises(CloseError, match="YYYY-MM"):
        close_period(world.settings, "2026-13", prepared_by="ana", clock=lambda: january)

    closed = close_period(
        world.settings, "2026-12", prepared_by="ana", clock=lambda: january, user="u-ana"
    )
    assert closed.changed
    folder = closed.folder
    assert folder == world.settings.local.reports_folder / "closed" / "2026-12"
    manifest = json.loads((folder / "manifest.json").read_text())
    files = _hashes(folder)
    assert manifest["files"] == {k: v for k, v in files.items() if k != "manifest.json"}
    assert "reconciliation.xlsx" in manifest["files"]
    assert manifest["as_of"] == "2026-12-31"
    assert manifest["prepared_by"]["name"] == "ana"
    assert manifest["built_from_sync"]["sync_id"].startswith("sync_20270102T120000Z")
    assert manifest["open_exceptions"] == []
    assert manifest["closing_balances"]["provisional"] is False

    # the review is by another person; a second close or review changes nothing
    with pytest.raises(CloseError, match="another person"):
        review_period(
            world.settings, "2026-12", reviewed_by=" ANA ", clock=lambda: january, user="u-ben"
        )
    reviewed = review_period(
        world.settings, "2026-12", reviewed_by="ben", clock=lambda: january, user="u-ben"
    )
    assert (reviewed.changed, reviewed.state.reviewed_by) == (True, "ben")
    # the review is its own file beside the package (the package's folder is never written)
    assert reviewed.review == folder.parent / "2026-12.v1.review.json"
    assert not (folder / "review.json").exists()
    review = json.loads(reviewed.review.read_text())
    assert (review["decision"], review["by"], review["os_user"]) == ("reviewed", "ben", "u-ben")
    assert (
        review["manifest_sha256"]
        == hashlib.sha256((folder / "manifest.json").read_bytes()).hexdigest()
    )
    again = close_period(world.settings, "2026-12", prepared_by="carl", clock=lambda: january)
    assert not again.changed
    assert again.state.prepared_by == "ana"
    assert _hashes(folder) == files

    # in January a December payment is changed at the service
    payment = next(
        p
        for d, ps in world.distributions()
        for p in ps
        if d.external_reference == "D1" and p.amount == 100_000
    )
    world.control("PATCH", f"distribution_payments/{payment.id}", {"amount": 90_000})
    learned = days.night(dt.datetime(2027, 1, 3, 12, tzinfo=dt.UTC))

    assert _hashes(folder) == files  # byte-identical
    assert verify_period(world.settings, "2026-12").ok
    adjustments = learned.frame("after_close_adjustments")
    assert [
        (
            r.period,
            r.payment_id,
            r.closed_amount_cents,
            r.amount_cents,
            r.change_cents,
            r.learned_on,
        )
        for r in adjustments.itertuples()
    ] == [("2026-12", payment.id, 100_000, 90_000, -10_000, dt.date(2027, 1, 3))]
    exceptions = learned.frame("exceptions")
    adjustment = exceptions[exceptions.kind == "after_close_adjustment"]
    assert list(adjustment.object_id) == [payment.id]
    assert "after-close adjustment to 2026-12" in adjustment.what.iloc[0]
    assert learned.summary.period.state == "open"  # January
    assert learned.summary.period.period == "2027-01"

    # December re-run today: still the closed figures, and the Summary says it is closed
    dec = reconcile(
        world.settings,
        as_of=dt.date(2026, 12, 31),
        out_dir=tmp_path / "dec-again",
        clock=lambda: dt.datetime(2027, 1, 3, 13, tzinfo=dt.UTC),
    )
    amounts = {
        str(r.payment_id): int(r.service_amount_cents)
        for r in dec.frame("sheet_vs_service").itertuples()
    }
    assert amounts[payment.id] == 100_000
    # as known at the end of 31 December nobody had closed it: a past as-of shows it open
    assert not dec.summary.period.closed
    known = reconcile(
        world.settings,
        as_of=dt.date(2026, 12, 31),
        out_dir=tmp_path / "dec-known",
        clock=lambda: dt.datetime(2027, 1, 3, 13, tzinfo=dt.UTC),
        known_at=january,
    )
    assert known.summary.period.closed  # as known at the close, and reviewed by then
    assert known.summary.period.reviewed_by == "ben"

    # tampering is found
    monkeypatch.setenv("FUNDPIPE_DATA_DIR", str(world.settings.local.data_dir))
    runner = CliRunner()
    out = runner.invoke(app, ["close", "verify", "2026-12"])
    assert out.exit_code == 0, out.output
    assert "match the manifest" in out.output
    out = runner.invoke(app, ["close", "list"])
    assert out.exit_code == 0, out.output
    assert "2026-12  closed: prepared by ana on 2027-01-02, reviewed by ben on 2027-01-02" in (
        out.output
    )
    assert "2027-01  open" in out.output
    # the auditor's export: exception events, period events and syncs, Parquet and CSV
    out = runner.invoke(
        app,
        ["audit", "export", "--from", "2026-12-01", "--to", "2027-01-03", "--out", "audit"],
    )
    assert out.exit_code == 0, out.output
    assert "period_events: 2 row(s)" in out.output, out.output
    with (Path("audit") / "period_events.csv").open(encoding="utf-8") as handle:
        decisions = [(r["event"], r["by_name"]) for r in csv.DictReader(handle)]
    assert decisions == [("closed", "ana"), ("reviewed", "ben")]
    assert (Path("audit") / "syncs.parquet").is_file()
    assert "events/exception_events.csv" in manifest["files"]  # and in the closed package
    workbook = folder / "reconciliation.xlsx"
    workbook.chmod(0o644)
    workbook.write_bytes(workbook.read_bytes() + b"x")
    assert not verify_period(world.settings, "2026-12").ok
    out = runner.invoke(app, ["close", "verify", "2026-12"])
    assert out.exit_code == 1
    assert "v1: reconciliation.xlsx changed" in out.output


def test_closing_with_open_exceptions_needs_the_flag_and_lists_them(
    world: World, tmp_path: Path
) -> None:
    days = Days(world)
    world.control("POST", "clock/set", {"now": "2026-12-01T12:00:00+00:00"})
    bad = (
        "Distribution Name,Vehicle,External Reference,Payment Date,Timezone,Entity ID,"
        "Amount ($),Currency\nB,veh_demo2,B1,2026-12-20 09:00,America/New_York,ent_demo1,abc,USD\n"
    )
    (world.inbox / "bad.csv").write_text(bad, encoding="utf-8")
    ingest(world.settings, transport=world.transport, settle_s=0)
    first = days.night(dt.datetime(2026, 12, 1, 12, tzinfo=dt.UTC))
    january = dt.datetime(2027, 1, 1, 12, tzinfo=dt.UTC)
    days.night(january)
    with pytest.raises(CloseError, match="open exception") as refused:
        close_period(world.settings, "2026-12", prepared_by="ana", clock=lambda: january)
    exception_id = str(first.frame("exceptions").exception_id.iloc[0])
    assert exception_id in str(refused.value)
    assert not (world.settings.local.reports_folder / "closed" / "2026-12").exists()
    closed = close_period(
        world.settings,
        "2026-12",
        prepared_by="ana",
        with_open_exceptions=True,
        clock=lambda: january,
    )
    manifest = json.loads((closed.folder / "manifest.json").read_text())
    assert [e["id"] for e in manifest["open_exceptions"]] == [exception_id]
    assert [p.period for p in list_periods(world.settings, clock=lambda: january)] == [
        "2026-12",
        "2027-01",
    ]


def test_a_period_state_is_read_by_column_name(warehouse: Warehouse) -> None:
    """Each field of a closed period's state comes from its own column: prepared and reviewed
    are not swapped, and a select list in another order reads the same state."""
    closed_at = dt.datetime(2027, 1, 2, 9, tzinfo=dt.UTC)
    reviewed_at = dt.datetime(2027, 1, 3, 10, tzinfo=dt.UTC)
    with warehouse.write() as con:
        con.execute(
            "INSERT INTO period_events (period, event, event_at, by_name, manifest_sha256, "
            "sync_id, folder) VALUES ('2026-12', 'closed', ?, 'ana', 'abc123', 'sync_9', "
            "'closed/2026-12'), ('2026-12', 'reviewed', ?, 'ben', NULL, NULL, NULL)",
            [closed_at, reviewed_at],
        )
    with warehouse.read() as con:
        state = period_state(con, "2026-12")
    assert state == PeriodState(
        period="2026-12",
        state="closed",
        prepared_by="ana",
        prepared_at=closed_at,
        reviewed_by="ben",
        reviewed_at=reviewed_at,
        manifest_sha256="abc123",
        folder="closed/2026-12",
        sync_id="sync_9",
        version=1,
    )
    with warehouse.read() as con:
        assert period_state(con, "2026-12", before=reviewed_at).reviewed_by is None


def test_a_provisional_close_is_certified_by_the_sync_that_reads_the_month_end_and_two_people_sign(
    world: World, tmp_path: Path
) -> None:
    """Closed before any January sync: provisional, certified by the first one (January opens at
    the service's month-end, no item). The reviewer is another person — not the preparer's name
    in another case, spacing or Unicode form, not the same login (unless allowed) — a review is
    made once; a rejection, a reopening and a second close keep v1 byte-identical, both verify."""
    days = Days(world)
    world.control("POST", "clock/set", {"now": "2026-12-01T12:00:00+00:00"})
    sheet = tmp_path / "dec.csv"
    write_sheet(sheet, [("D1", "veh_demo1", [100_000, 200_000])], date="2026-12-20 09:00")
    (world.inbox / "dec.csv").write_bytes(sheet.read_bytes())
    ingest(world.settings, transport=world.transport, settle_s=0)
    days.night(dt.datetime(2026, 12, 1, 12, tzinfo=dt.UTC))
    days.night(dt.datetime(2026, 12, 21, 12, tzinfo=dt.UTC))
    settings = world.settings
    jan2 = dt.datetime(2027, 1, 2, 9, tzinfo=dt.UTC)

    first = close_period(settings, "2026-12", prepared_by="Ana Lima", clock=lambda: jan2, user="u1")
    v1 = first.folder
    manifest = json.loads((v1 / "manifest.json").read_text())
    assert manifest["closing_balances"]["provisional"] is True
    assert first.state.provisional
    assert first.state.certified_at is None
    assert "provisional" in first.state.describe()
    # the Summary names the folder the files are filed in, never a staging folder
    summary = _strings(v1 / "reconciliation.xlsx")
    assert str(v1) in summary
    assert not any(".staging-" in p for p in summary)
    assert "Ana Lima" in summary  # the sign-off block: who prepared it, and when
    assert "2027-01-02 09:00 UTC" in summary
    assert "events/period_events.parquet" in manifest["files"]

    jan = days.night(dt.datetime(2027, 1, 2, 12, tzinfo=dt.UTC))  # reads the month-end
    with Warehouse(settings.local.warehouse_file).read() as con:
        state = period_state(con, "2026-12")
    assert state.certified_at is not None
    assert state.certified_by_sync is not None
    listed = {p.period: p.describe() for p in list_periods(settings, clock=lambda: jan2)}
    assert "month-end balance certified by sync_20270102T120000Z" in listed["2026-12"]
    rollforward = jan.frame("rollforward").set_index("financial_account").loc["fa_demo1dep"]
    month_end = world.control("PATCH", "financial_accounts/fa_demo1dep", {})["balance"]
    assert rollforward.opening_cents == month_end["total_end_of_last_month"]
    assert rollforward.opening_source == "closed period 2026-12"
    assert (jan.frame("exceptions").kind == "unexplained_balance").sum() == 0

    # two different people: names normalized, logins different
    for twin in ("ana  LIMA", " Ａｎａ Lima", "ANA\tlima"):
        with pytest.raises(CloseError, match="another person"):
            review_period(settings, "2026-12", reviewed_by=twin, clock=lambda: jan2, user="u2")
    with pytest.raises(CloseError, match="operating-system user 'u1'"):
        review_period(settings, "2026-12", reviewed_by="Ben Ode", clock=lambda: jan2, user="u1")
    before = _hashes(v1)

    # the reviewer rejects it; a second decision is an error naming the first and the way out
    rejected = reject_period(
        settings,
        "2026-12",
        rejected_by="Ben Ode",
        reason="D1 missing",
        clock=lambda: jan2,
        user="u2",
    )
    assert rejected.state.rejected_by == "Ben Ode"
    with pytest.raises(CloseError, match=r"already rejected by Ben Ode .*close reopen 2026-12"):
        review_period(settings, "2026-12", reviewed_by="Carl", clock=lambda: jan2, user="u3")
    assert rejected.review is not None
    review = json.loads(rejected.review.read_text())
    assert (review["decision"], review["reason"]) == ("rejected", "D1 missing")

    reopened = reopen_period(
        settings, "2026-12", by="Ana Lima", reason="redo after D1", clock=lambda: jan2, user="u1"
    )
    assert not reopened.state.closed
    assert reopened.state.describe().startswith("open: reopened by Ana Lima")
    later = jan2 + dt.timedelta(hours=4)
    second = close_period(
        settings, "2026-12", prepared_by="Ana Lima", clock=lambda: later, user="u1"
    )
    assert second.folder == v1 / "v2"
    assert second.state.version == 2
    assert json.loads((second.folder / "manifest.json").read_text())["version"] == 2
    # read after the month-end sync: not provisional
    assert not json.loads((second.folder / "manifest.json").read_text())["closing_balances"][
        "provisional"
    ]
    assert {k: v for k, v in _hashes(v1).items() if not k.startswith("v2/")} == before
    reviewed = review_period(
        settings, "2026-12", reviewed_by="Ben Ode", clock=lambda: later, user="u2"
    )
    assert reviewed.state.reviewed_by == "Ben Ode"
    assert reviewed.state.version == 2
    same = review_period(settings, "2026-12", reviewed_by="ben ode", clock=lambda: later, user="u2")
    assert not same.changed
    with pytest.raises(CloseError, match=r"already reviewed by Ben Ode .*close reopen 2026-12"):
        review_period(settings, "2026-12", reviewed_by="Carl", clock=lambda: later, user="u3")
    checked = verify_period(settings, "2026-12")
    assert (checked.ok, checked.versions) == (True, 2), checked.problems
    closed = v1.parent
    assert (closed / "2026-12.v1.review.json").is_file()
    assert reviewed.review == closed / "2026-12.v2.review.json"
    assert not (v1 / "review.json").exists()
    assert not (second.folder / "review.json").exists()
    # a close reviewed before reviews moved out kept review.json in its folder: still read
    old = v1 / "review.json"
    v1.chmod(0o755)
    (closed / "2026-12.v1.review.json").rename(old)
    v1.chmod(0o555)
    assert verify_period(settings, "2026-12").ok
    text = old.read_text()
    old.chmod(0o644)
    old.write_text(text.replace("D1 missing", "all fine"))
    assert verify_period(settings, "2026-12").problems == [
        "v1: review.json differs from the one recorded at the review"
    ]
    old.write_text(text)

    # the organization may allow one person to do both: the record says so
    one = settings.updated(pipeline={"one_person_close": True})
    reopen_period(one, "2026-12", by="Ana Lima", reason="once more", clock=lambda: later, user="u1")
    close_period(one, "2026-12", prepared_by="Ana Lima", clock=lambda: later, user="u1")
    alone = review_period(one, "2026-12", reviewed_by="ana lima", clock=lambda: later, user="u1")
    assert alone.state.one_person
    assert alone.review is not None
    assert json.loads(alone.review.read_text())["one_person_close"] is True
    assert verify_period(settings, "2026-12").ok


def _strings(workbook: Path) -> list[str]:
    """Every text cell of a workbook's Summary sheet."""
    import openpyxl

    sheet = openpyxl.load_workbook(workbook, read_only=True)["Summary"]
    return [str(v) for row in sheet.iter_rows(values_only=True) for v in row if v is not None]
