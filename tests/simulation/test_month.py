"""Thirty simulated days against the in-process sandbox: the reconciliation stays true.

The test keeps its own ground truth — the service's payments as the client lists them, and the
exceptions a person would expect from what happened — written without reading the views, and
after every day checks: each service payment once in `sheet_vs_service`; the Summary's counts
and obligations equal the service's; the current exceptions are exactly the expected ones, with
ids stable across days; resolved ones resolve on the day their condition went away.

The month then crosses its end (issue 29): a distribution executes on 31 December after that
day's sync, a person acknowledges every open exception on 1 January and December is closed on
2 January. The closed report shows the payment disbursed and the items acknowledged, its
balances are the service's month-end; January opens at that figure with no item and no
after-close adjustment; a past as-of before the close shows December open, and the report of
31 December as known when it was issued is reproduced exactly.

At the month's end (issue 21) past days are re-run: each Summary figure and each payment's
status equal that day's report, and the exception events are unchanged by the re-runs; an
exception acknowledged twice keeps both acknowledgements, and an acknowledged one that worsens
reopens. The days re-run are a sample drawn from the month's own event calendar (each day's
kinds of event: the calendar's, plus exceptions opened or resolved and payments disbursed that
its report shows): the first and last past day, every day of an acknowledgement or a worsening,
and the first day of every other kind — the test asserts the sample covers every kind.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from fundpipe.keys import file_hash
from fundpipe.reconcile import reconcile
from fundpipe.reconcile.close import close_period
from fundpipe.reconcile.lifecycle import acknowledge
from fundpipe.reconcile.lifecycle import history as event_history
from fundpipe.submit.ingest import ingest
from fundpipe.sync.pull import sync
from fundpipe.warehouse.file import Warehouse
from worlds.submit import DEMO_STATE, World, write_sheet
from worlds.summary import assert_summary_is_its_tabs

#: Among the longest files: `make test` hands them out first (tests/conftest.py).
pytestmark = pytest.mark.slow

START = dt.datetime(2026, 12, 1, 12, tzinfo=dt.UTC)
FINAL = ("disbursed", "failed", "cancelled")

Key = tuple[str, str]  # (kind, object): what the test expects, in its own words


class Month:
    """The simulation's state: the world, the files dropped, and the test's expectations."""

    def __init__(self, world: World, tmp: Path) -> None:
        self.world = world
        self.tmp = tmp
        self.files: dict[str, str] = {}  # label → content hash
        self.ids: dict[Key, str] = {}  # expected problem → its exception id (stable)
        self.gone: dict[Key, int] = {}  # problem → the day it must resolve
        self.day = 0

    def drop(
        self,
        label: str,
        name: str,
        distributions: list[tuple[str, str, list[int]]],
        *,
        date: str,
        crlf: bool = False,
        raw: str | None = None,
        require_funds: bool = False,
    ) -> str:
        staged = self.tmp / f"{label}-{name}"
        if raw is not None:
            staged.write_text(raw, encoding="utf-8")
        else:
            write_sheet(staged, distributions, date=date)
        if crlf:
            staged.write_bytes(
                staged.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n") + b"\r\n"
            )
        self.files[label] = file_hash(staged)
        (self.world.inbox / name).write_bytes(staged.read_bytes())
        result = ingest(
            self.world.settings,
            transport=self.world.transport,
            settle_s=0,
            require_funds=require_funds,
        )
        return str(result.files[0].state)

    def payments(self) -> list[tuple[Any, Any]]:
        return [(d, p) for d, ps in self.world.distributions() for p in ps]

    def payment(self, ref: str, amount: int) -> Any:
        return next(
            p for d, p in self.payments() if d.external_reference == ref and p.amount == amount
        )


def _expected(month: Month, problems: set[Key]) -> set[Key]:
    """The problems a person expects: the test's file/payment events plus the service's truth."""
    out = set(problems)
    open_by_vehicle: dict[str, int] = {}
    paid_by_vehicle: dict[str, int] = {}
    for d, p in month.payments():
        if p.status in ("failed", "cancelled"):
            out.add(("status_mismatch", p.id))
        # owed: staged payments, and failed ones not cancelled (none is paid again here)
        if p.status not in FINAL or (p.status == "failed" and d.status != "cancelled"):
            open_by_vehicle[d.vehicle] = open_by_vehicle.get(d.vehicle, 0) + p.amount
        if p.status == "disbursed":
            paid_by_vehicle[d.vehicle] = paid_by_vehicle.get(d.vehicle, 0) + p.amount
    for vehicle, owed in open_by_vehicle.items():
        available = DEMO_STATE.available_cents[vehicle] - paid_by_vehicle.get(vehicle, 0)
        if owed > available:
            out.add(("shortfall", vehicle))
    return out


def test_thirty_days_of_drops_fixes_and_service_changes_stay_reconciled(
    world: World, tmp_path: Path
) -> None:
    month = Month(world, tmp_path)
    world.control("POST", "clock/set", {"now": START.isoformat()})
    later = "2026-12-20 09:00"
    problems: set[Key] = set()  # file and amount problems the test itself caused, still standing
    wh = Warehouse(world.settings.local.warehouse_file)

    def a_payments() -> list[Any]:
        return sorted(
            (p for d, p in month.payments() if d.external_reference == "A1"), key=lambda p: p.amount
        )

    # the month's event calendar: what happens on a day, and the kinds of event it brings
    events: dict[int, Callable[[], None]] = {}
    calendar: dict[int, tuple[str, ...]] = {}

    def on(day: int, *kinds: str) -> Callable[[Callable[[], None]], Callable[[], None]]:
        def register(event: Callable[[], None]) -> Callable[[], None]:
            events[day], calendar[day] = event, kinds
            return event

        return register

    @on(1, "file_processed")
    def day1() -> None:
        assert (
            month.drop("A", "A.csv", [("A1", "veh_demo1", [100_000, 200_000, 300_000])], date=later)
            == "processed"
        )

    @on(2, "file_rejected")
    def day2() -> None:
        bad = "Distribution Name,Vehicle,External Reference,Payment Date,Timezone,Entity ID,Amount ($),Currency\nB,veh_demo2,B1,2026-12-20 09:00,America/New_York,ent_demo1,abc,USD\n"
        assert month.drop("bad", "bad.csv", [], date=later, raw=bad) == "rejected"
        problems.add(("file_rejected", month.files["bad"]))

    @on(3, "file_processed")
    def day3() -> None:
        # more than veh_demo3's $750,000 available: a warning only, the vehicle is short
        assert (
            month.drop(
                "under",
                "under.csv",
                [("U1", "veh_demo3", [700_000_00, 60_000_00])],
                date="2026-12-27 09:00",
            )
            == "processed"
        )

    def day5_ack() -> None:  # the $10,000 shortfall is acknowledged at that amount
        key = ("shortfall", "veh_demo3")
        acknowledge(wh, month.ids[key], note="top-up promised", by="ana", now=month.now)
        month.acked.add(key)  # type: ignore[attr-defined]

    @on(4, "file_fixed")
    def day4() -> None:
        assert (
            month.drop("bad2", "bad.csv", [("B1", "veh_demo2", [50_000, 60_000])], date=later)
            == "processed"
        )
        problems.discard(("file_rejected", month.files["bad"]))
        month.gone[("file_rejected", month.files["bad"])] = 4

    @on(5, "acknowledged", "file_refused")
    def day5() -> None:
        day5_ack()
        state = month.drop(
            "big", "big.csv", [("G1", "veh_demo2", [2_600_000_00])], date=later, require_funds=True
        )
        assert state == "refused"
        problems.add(("file_rejected", month.files["big"]))

    @on(6, "file_fixed")
    def day6() -> None:
        assert (
            month.drop(
                "big2", "big.csv", [("G1", "veh_demo2", [1_000_00])], date=later, require_funds=True
            )
            == "processed"
        )
        problems.discard(("file_rejected", month.files["big"]))
        month.gone[("file_rejected", month.files["big"])] = 6

    @on(7, "file_copy")
    def day7() -> None:  # the same content saved again: other bytes, linked, never counted twice
        assert (
            month.drop(
                "A-copy",
                "A copy.csv",
                [("A1", "veh_demo1", [100_000, 200_000, 300_000])],
                date=later,
                crlf=True,
            )
            == "processed"
        )

    @on(8, "file_conflict")
    def day8() -> None:  # an edited copy: a conflict, never fixed, stays open and ages
        assert (
            month.drop(
                "A-edit",
                "A edited.csv",
                [("A1", "veh_demo1", [100_000, 250_000, 300_000])],
                date=later,
            )
            == "conflict"
        )
        problems.add(("file_conflict", month.files["A-edit"]))

    @on(10, "service_amount_changed")
    def day10() -> None:  # a payment changed at the service, changed back on day 12
        p = a_payments()[2]
        world.control("PATCH", f"distribution_payments/{p.id}", {"amount": 310_000})
        problems.add(("amount_mismatch", p.id))
        month.changed = p.id  # type: ignore[attr-defined]
        # issue 22: and A1 no longer ties out (sheet $6,000 vs service $6,100)
        month.a1 = next(d.id for d, _ in month.payments() if d.external_reference == "A1")  # type: ignore[attr-defined]
        problems.add(("distribution_tie_out", month.a1))  # type: ignore[attr-defined]

    @on(11, "service_cancelled")
    def day11() -> None:  # a cancelled distribution
        d = next(d for d, _ in month.payments() if d.external_reference == "B1")
        world.control("POST", f"distributions/{d.id}/cancel", {})

    @on(12, "service_amount_changed")
    def day12() -> None:
        pid = month.changed  # type: ignore[attr-defined]
        world.control("PATCH", f"distribution_payments/{pid}", {"amount": 300_000})
        problems.discard(("amount_mismatch", pid))
        month.gone[("amount_mismatch", pid)] = 12
        problems.discard(("distribution_tie_out", month.a1))  # type: ignore[attr-defined]
        month.gone[("distribution_tie_out", month.a1)] = 12  # type: ignore[attr-defined]

    @on(13, "acknowledged")
    def day13() -> None:  # a person acknowledges the cancellations
        for d, p in month.payments():
            if d.external_reference == "B1":
                acknowledge(
                    wh,
                    month.ids[("status_mismatch", p.id)],
                    note="cancelled on purpose",
                    by="ana",
                    now=month.now,
                )
                month.acked.add(("status_mismatch", p.id))  # type: ignore[attr-defined]

    @on(14, "service_failed")
    def day14() -> None:  # a failed payment
        p = a_payments()[0]
        world.control("PATCH", f"distribution_payments/{p.id}", {"status": "failed"})

    @on(15, "acknowledged")
    def day15() -> None:  # a second acknowledgement of the same cancellation: a second event
        p = next(p for d, p in month.payments() if d.external_reference == "B1")
        month.twice = month.ids[("status_mismatch", p.id)]  # type: ignore[attr-defined]
        acknowledge(wh, month.twice, note="confirmed with the investor", by="ben", now=month.now)  # type: ignore[attr-defined]

    @on(17, "file_processed")
    def day17() -> None:  # pays on 31 December at 18:00 UTC, after that day's noon sync
        assert (
            month.drop(
                "late", "late.csv", [("L1", "veh_demo1", [7_512_550])], date="2026-12-31 13:00"
            )
            == "processed"
        )

    @on(16, "file_processed", "worsened")
    def day16() -> None:  # veh_demo3 owes $50,000 more: its acknowledged shortfall worsens
        assert (
            month.drop(
                "under2", "under2.csv", [("U2", "veh_demo3", [50_000_00])], date="2026-12-27 09:00"
            )
            == "processed"
        )
        month.acked.discard(("shortfall", "veh_demo3"))  # type: ignore[attr-defined]

    month.acked = set()  # type: ignore[attr-defined]
    days: dict[int, tuple[dt.datetime, tuple[Any, ...], dict[str, str]]] = {}
    kinds: dict[int, set[str]] = {}  # day → the kinds of event it saw (calendar and results)

    history: dict[Key, str] = {}
    for day in range(1, 31):
        month.day = day
        world.control("POST", "clock/advance", {"seconds": 86_400})
        # a person's acknowledgement today is stamped with today's clock (before the run)
        month.now = dt.datetime.fromisoformat(world.control("GET", "clock")["now"])  # type: ignore[attr-defined]
        if day in events:
            events[day]()
        now = dt.datetime.fromisoformat(world.control("GET", "clock")["now"])
        sync(world.settings, transport=world.transport, clock=lambda now=now: now)
        result = reconcile(
            world.settings,
            as_of=now.date(),
            out_dir=tmp_path / "reports" / str(day),
            clock=lambda now=now: now,
        )
        service = month.payments()
        assert_summary_is_its_tabs(result)  # every Summary figure is its tab's total

        # each service payment once, and nothing else
        con = duckdb.connect()
        ids = [
            r[0]
            for r in con.execute(
                f"SELECT payment_id FROM read_parquet('{result.parquet['sheet_vs_service']}')"
            ).fetchall()
        ]
        con.close()
        assert sorted(ids) == sorted(p.id for _, p in service), day

        # the Summary's counts and totals are the service's
        s = result.summary
        assert s.service_payments == len(service), day
        assert s.obligations_cents == sum(p.amount for _, p in service if p.status not in FINAL), (
            day
        )

        # the current exceptions are exactly the expected ones, ids stable across days
        frame = result.frame("exceptions")
        got: dict[Key, str] = {}
        for r in frame.itertuples():
            got[(str(r.kind), str(r.object_id))] = str(r.exception_id)
        expected = _expected(month, problems)
        assert set(got) == expected, (day, set(got) ^ expected)
        for key, exception_id in got.items():
            assert history.setdefault(key, exception_id) == exception_id, (day, key)
        month.ids.update(got)
        states = {(str(r.kind), str(r.object_id)): str(r.state) for r in frame.itertuples()}
        for key in expected:  # the Exceptions sheet shows each one's state
            want = "acknowledged" if key in month.acked else "open"  # type: ignore[attr-defined]
            assert states[key] == want, (day, key)
        lines = {
            (str(r.kind), str(r.object_id)): (str(r.what), str(r.action))
            for r in frame.itertuples()
        }
        if day == 2:  # a rejected file: where it is now, what to do
            what, action = lines[("file_rejected", month.files["bad"])]
            assert what.startswith("Sheet bad.csv rejected: 1 row, received "), what
            assert "fix the sheet" in action
        if day == 8:  # a conflict: the changed row side by side, in dollars, and where to change it
            what, _ = lines[("file_conflict", month.files["A-edit"])]
            assert (
                "Brightwater Capital LLC (ent_demo2) row 3: sheet $2,500.00 vs service $2,000.00"
                in what
            )
            assert "/sender" in what
            assert "Distribution A1 (A1)" in what
        if day == 10:  # a payment: distribution, investor name and reference, dollars, file and row
            what, _ = lines[("amount_mismatch", month.changed)]  # type: ignore[attr-defined]
            assert what == (
                "Distribution A1 (A1), Carmen Ortiz (DEMO-E3) [ent_demo3]: "
                "sheet $3,000.00 vs service $3,100.00; processed/A.csv row 4"
            ), what

        # the lifecycle: resolved on the right day; acknowledged ones out of the open count
        assert result.lifecycle is not None
        resolved_today = {(t.kind, str(t.object_id)) for t in result.lifecycle.resolved}
        due = {k for k, d in month.gone.items() if d == day}
        assert due <= resolved_today, (day, due - resolved_today)
        acked = len(month.acked & expected)  # type: ignore[attr-defined]
        assert s.acknowledged_exceptions == acked, day
        assert s.open_exceptions == len(expected) - acked, day

        days[day] = (now, _figures(s), _statuses(result))
        issued_states = {str(r.exception_id): str(r.state) for r in frame.itertuples()}
        kinds[day] = set(calendar.get(day, ())) | _seen(result, days.get(day - 1), days[day])
        kinds[day] = kinds[day] or {"quiet"}  # nothing happened: a quiet day

    # the acknowledged shortfall reopened when it worsened, saying why; two acks are two events
    shortfall = month.ids[("shortfall", "veh_demo3")]
    _, shortfall_events = event_history(wh, shortfall)
    reopened = [e for e in shortfall_events if e.event == "reopened"]
    assert [(e.as_of, e.amount_cents) for e in reopened] == [
        ((START + dt.timedelta(days=16)).date(), 60_000_00)
    ]
    assert reopened[0].note == "worsened from $10,000.00 (acknowledged by ana) to $60,000.00"
    _, twice = event_history(wh, month.twice)  # type: ignore[attr-defined]
    assert [(e.event, e.by) for e in twice if e.event == "acknowledged"] == [
        ("acknowledged", "ana"),
        ("acknowledged", "ben"),
    ]

    # past days re-run at the month's end: the same figures and statuses, nothing written. A
    # sample of the calendar (each re-run costs a reconciliation): the first and last past day,
    # every day a person acknowledged or an acknowledged exception worsened, and the first day
    # of every other kind of event
    with wh.read() as con:
        recorded = con.execute("SELECT * FROM exception_events ORDER BY seq").fetchall()
    end = now
    past = [day for day, (then, _, _) in days.items() if then.date() < end.date()]
    sample = _sample(past, kinds, every_day_of=("acknowledged", "worsened"))
    happened = set().union(*(kinds[day] for day in past))
    assert {
        "file_processed",
        "file_rejected",
        "file_refused",
        "file_fixed",
        "file_copy",
        "file_conflict",
        "service_amount_changed",
        "service_cancelled",
        "service_failed",
        "disbursed",
        "opened",
        "resolved",
        "acknowledged",
        "worsened",
        "quiet",
    } <= happened, happened
    assert set().union(*(kinds[day] for day in sample)) == happened
    by_person = [day for day in past if kinds[day] & {"acknowledged", "worsened"}]
    assert len(by_person) == 4, by_person  # three acknowledgements, one worsening
    assert set(by_person) <= set(sample), (by_person, sample)
    assert {past[0], past[-1]} <= set(sample), sample
    for day in sample:
        then, figures, statuses = days[day]
        again = reconcile(
            world.settings,
            as_of=then.date(),
            out_dir=tmp_path / "again" / str(day),
            clock=lambda: end,
        )
        assert again.lifecycle is None, day
        assert _figures(again.summary) == figures, day
        assert _statuses(again) == statuses, day
    with wh.read() as con:
        assert con.execute("SELECT * FROM exception_events ORDER BY seq").fetchall() == recorded

    # the conflict was never fixed: still open, aged since day 8
    assert result.lifecycle is not None
    conflict = next(t for t in result.lifecycle.still_open if t.kind == "file_conflict")
    assert conflict.age_days == 22

    _across_the_month_end(month, tmp_path, days[30], issued_states)


def _across_the_month_end(
    month: Month,
    tmp_path: Path,
    issued: tuple[dt.datetime, tuple[Any, ...], dict[str, str]],
    issued_states: dict[str, str],
) -> None:
    """31 December after its sync → 2 January: the close is the month as known at the close."""
    world, settings = month.world, month.world.settings
    wh = Warehouse(settings.local.warehouse_file)
    late = month.payment("L1", 7_512_550)
    assert late.status == "staged"  # the 31 December report showed it outstanding
    world.control("POST", "clock/set", {"now": "2026-12-31T20:00:00+00:00"})
    assert month.payment("L1", 7_512_550).status == "disbursed"  # after the day's last sync

    def night(at: str) -> Any:
        world.control("POST", "clock/set", {"now": at})
        now = dt.datetime.fromisoformat(at)
        sync(settings, transport=world.transport, clock=lambda: now)
        return reconcile(
            settings, as_of=now.date(), out_dir=tmp_path / "reports" / at[:10], clock=lambda: now
        )

    first = night("2027-01-01T12:00:00+00:00")
    acked_at = dt.datetime(2027, 1, 1, 15, tzinfo=dt.UTC)
    open_ = first.frame("exceptions")
    open_ = open_[open_.state == "open"]
    assert len(open_), "something to acknowledge on the 1st"
    for exception_id in open_.exception_id:
        acknowledge(wh, str(exception_id), note="checked at month end", by="ana", now=acked_at)
    night("2027-01-02T12:00:00+00:00")
    closed_at = dt.datetime(2027, 1, 2, 14, tzinfo=dt.UTC)
    closed = close_period(
        settings, "2026-12", prepared_by="Ana Lima", clock=lambda: closed_at, user="u-ana"
    )
    manifest = json.loads((closed.folder / "manifest.json").read_text())
    assert manifest["open_exceptions"] == []  # acknowledged before the close: not open
    month_end = world.control("PATCH", "financial_accounts/fa_demo1dep", {})["balance"]
    balances = {a["financial_account"]: a for a in manifest["closing_balances"]["accounts"]}
    assert manifest["closing_balances"]["provisional"] is False
    assert balances["fa_demo1dep"]["closing_cents"] == month_end["total_end_of_last_month"]

    # the closed report: the late payment disbursed, every item as acknowledged on the 1st
    report = duckdb.connect()
    try:
        status = report.execute(
            "SELECT service_status FROM read_parquet(?) WHERE payment_id = ?",
            [str(closed.folder / "sheet_vs_service.parquet"), late.id],
        ).fetchone()
        states = report.execute(
            f"SELECT DISTINCT state FROM read_parquet('{closed.folder / 'exceptions.parquet'}')"
        ).fetchall()
        account = report.execute(
            "SELECT service_total_cents, unexplained_cents FROM read_parquet(?) "
            "WHERE financial_account = 'fa_demo1dep'",
            [str(closed.folder / "rollforward.parquet")],
        ).fetchone()
    finally:
        report.close()
    assert status == ("disbursed",)
    assert states == [("acknowledged",)]
    assert account == (month_end["total_end_of_last_month"], 0)

    # January opens at the service's month-end: no item, no after-close adjustment
    after = reconcile(
        settings,
        as_of=dt.date(2027, 1, 2),
        out_dir=tmp_path / "after-close",
        clock=lambda: closed_at + dt.timedelta(hours=1),
    )
    rollforward = after.frame("rollforward").set_index("financial_account").loc["fa_demo1dep"]
    assert rollforward.opening_cents == month_end["total_end_of_last_month"]
    assert rollforward.opening_source == "closed period 2026-12"
    kinds = set(after.frame("exceptions").kind)
    assert not kinds & {"unexplained_balance", "after_close_adjustment"}, kinds

    # a past as-of before the close shows December open; the issued report is reproduced
    before = reconcile(
        settings,
        as_of=dt.date(2026, 12, 31),
        out_dir=tmp_path / "before-close",
        clock=lambda: closed_at,
        known_at=closed_at - dt.timedelta(hours=1),
    )
    assert before.summary.period is not None
    assert not before.summary.period.closed
    then, figures, statuses = issued
    again = reconcile(
        settings,
        as_of=then.date(),
        out_dir=tmp_path / "as-issued",
        clock=lambda: closed_at,
        known_at=then,
    )
    assert _figures(again.summary) == figures
    assert _statuses(again) == statuses
    assert {
        str(r.exception_id): str(r.state) for r in again.frame("exceptions").itertuples()
    } == issued_states


def _seen(
    result: Any,
    before: tuple[Any, tuple[Any, ...], dict[str, str]] | None,
    today: tuple[Any, tuple[Any, ...], dict[str, str]],
) -> set[str]:
    """The kinds of event a day's report shows: exceptions opened or resolved, a payment the
    service disbursed."""
    seen: set[str] = set()
    if result.lifecycle.opened:
        seen.add("opened")
    if result.lifecycle.resolved:
        seen.add("resolved")
    was = before[2] if before else {}
    if any(
        status.startswith("disbursed ") and not was.get(payment, "").startswith("disbursed ")
        for payment, status in today[2].items()
    ):
        seen.add("disbursed")
    return seen


def _sample(
    past: list[int], kinds: dict[int, set[str]], *, every_day_of: tuple[str, ...]
) -> list[int]:
    """Days to re-run: the first and the last, every day of a kind in `every_day_of`, and the
    first day of each other kind."""
    chosen = {past[0], past[-1]}
    for kind in sorted(set().union(*(kinds[day] for day in past))):
        on_days = [day for day in past if kind in kinds[day]]
        chosen.update(on_days if kind in every_day_of else on_days[:1])
    return sorted(chosen)


def _figures(s: Any) -> tuple[Any, ...]:
    """Every figure of the Summary (not the run's own clock)."""
    return (
        s.last_sync_id,
        s.vehicles,
        s.vehicles_short,
        s.vehicles_without_balance,
        s.available_cents,
        s.obligations_cents,
        s.failed_owed_cents,
        s.past_due_cents,
        s.shortfall_cents,
        s.unexplained_cents,
        s.sheet_rows,
        s.service_payments,
        s.payments_ok,
        dict(s.exception_counts),
        s.open_exceptions,
        s.acknowledged_exceptions,
    )


def _statuses(result: Any) -> dict[str, str]:
    """Each service payment's status (and amount) in a report."""
    con = duckdb.connect()
    try:
        rows = con.execute(
            "SELECT payment_id, service_status || ' ' || CAST(service_amount_cents AS VARCHAR) "
            f"FROM read_parquet('{result.parquet['sheet_vs_service']}') WHERE payment_id IS NOT NULL"
        ).fetchall()
    finally:
        con.close()
    return {str(p): str(s) for p, s in rows}
