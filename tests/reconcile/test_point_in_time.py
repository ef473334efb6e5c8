"""A past as-of is point in time: statuses, amounts, objects and balances as known at the end of
that day (in the reporting timezone); a balance never seen is "no balance yet"; a past run reads."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd

from fundpipe.config import Settings
from fundpipe.reconcile import ReconcileResult, reconcile
from fundpipe.warehouse.file import Warehouse

#: The runs happen on 10 December: every as-of below is in the past, so they only read.
RUN_AT = dt.datetime(2026, 12, 10, 9, tzinfo=dt.UTC)


def _run(
    settings: Settings, tmp_path: Path, as_of: dt.date, name: str | None = None
) -> ReconcileResult:
    return reconcile(
        settings,
        as_of=as_of,
        out_dir=tmp_path / (name or as_of.isoformat()),
        clock=lambda: RUN_AT,
    )


def _log_rows(wh: Warehouse) -> int:
    with wh.read() as con:
        row = con.execute("SELECT count(*) FROM exception_events").fetchone()
    assert row is not None
    return int(row[0])


def test_before_the_first_balance_a_vehicle_has_no_balance_yet_and_no_shortfall(
    known_warehouse: Warehouse, settings: Settings, tmp_path: Path
) -> None:
    with known_warehouse.write() as con:
        # veh_b and its staged payment dpmt_3 were known from 2 November; its first balance
        # came with the sync of 20 November
        con.execute(
            "INSERT INTO object_first_seen VALUES ('vehicle', 'veh_b', '2026-11-02 08:00+00', 's0')"
        )
        con.execute(
            "INSERT INTO status_history VALUES "
            "('distribution', 'dst_2', NULL, 'draft', '2026-11-02 08:00+00', 's0'), "
            "('distribution_payment', 'dpmt_3', NULL, 'staged', '2026-11-02 08:00+00', 's0')"
        )
    result = _run(settings, tmp_path, dt.date(2026, 11, 5))
    funding = result.frame("funding").set_index("vehicle")
    b = funding.loc["veh_b"]
    assert pd.isna(b.available_cents)  # never $0
    assert b.balance == "no balance yet"
    assert pd.isna(b.shortfall_cents)
    assert b.obligations_cents == 15_000
    assert result.summary.vehicles_without_balance == 1
    assert result.summary.vehicles_short == 0
    exceptions = result.frame("exceptions")
    assert "shortfall" not in set(exceptions.kind)
    # veh_a's only balance by then is the 1 November snapshot; its payments came later
    assert funding.loc["veh_a"].available_cents == 1
    assert result.summary.service_payments == 1  # only dpmt_3 was known on 5 November
    # a past as-of opens nothing: the exception log is untouched
    assert _log_rows(known_warehouse) == 0
    assert result.lifecycle is None
    assert result.summary.historical


def test_status_and_amount_are_those_known_at_the_end_of_the_day(
    known_warehouse: Warehouse, settings: Settings, tmp_path: Path
) -> None:
    with known_warehouse.write() as con:
        # dpmt_3: staged when first seen, disbursed as seen by the sync of 3 December
        con.execute(
            "INSERT INTO status_history VALUES "
            "('distribution_payment', 'dpmt_3', NULL, 'staged', '2026-11-20 12:00+00', 's1'), "
            "('distribution_payment', 'dpmt_3', 'staged', 'disbursed', '2026-12-03 06:00+00', 's3')"
        )
        con.execute("UPDATE distribution_payments SET status = 'disbursed' WHERE id = 'dpmt_3'")
        # dpmt_2 was $250 (as the sheet says) until the sync of 2 December saw $200
        con.execute(
            "INSERT INTO distribution_payment_history BY NAME "
            "SELECT * REPLACE (25000 AS amount_cents), TIMESTAMPTZ '2026-12-02 06:00+00' "
            "AS replaced_at, 's2' AS replaced_by_sync FROM distribution_payments WHERE id = 'dpmt_2'"
        )
    before = _run(settings, tmp_path, dt.date(2026, 11, 30))
    after = _run(settings, tmp_path, dt.date(2026, 12, 4))
    status = {
        str(r.payment_id): (str(r.service_status), r.service_amount_cents)
        for r in before.frame("sheet_vs_service").itertuples()
        if isinstance(r.payment_id, str)
    }
    assert status["dpmt_3"] == ("staged", 15_000)
    assert status["dpmt_2"] == ("disbursed", 25_000)
    status = {
        str(r.payment_id): (str(r.service_status), r.service_amount_cents)
        for r in after.frame("sheet_vs_service").itertuples()
        if isinstance(r.payment_id, str)
    }
    assert status["dpmt_3"] == ("disbursed", 15_000)
    assert status["dpmt_2"] == ("disbursed", 20_000)
    # the amount mismatch exists from the day the change was learned, not before
    assert "amount_mismatch" not in set(before.frame("exceptions").kind)
    assert "amount_mismatch" in set(after.frame("exceptions").kind)
    # dpmt_3 is an obligation of veh_b on 30 November, not on 4 December
    assert before.frame("funding").set_index("vehicle").loc["veh_b"].obligations_cents == 20_000
    assert after.frame("funding").set_index("vehicle").loc["veh_b"].obligations_cents == 5_000
    assert _log_rows(known_warehouse) == 0


def test_the_as_of_day_ends_at_midnight_in_the_reporting_timezone(
    known_warehouse: Warehouse, settings: Settings, tmp_path: Path
) -> None:
    # veh_b's snapshot s2 was seen at 2026-12-05 00:00 UTC, 19:00 on the 4th in New York
    utc = _run(settings, tmp_path, dt.date(2026, 12, 4), "utc")
    new_york = reconcile(
        settings.updated(pipeline={"reporting_timezone": "America/New_York"}),
        as_of=dt.date(2026, 12, 4),
        out_dir=tmp_path / "ny",
        clock=lambda: RUN_AT,
    )
    utc_b = utc.frame("balance_movement").set_index("financial_account").loc["fa_bdep"]
    ny_b = new_york.frame("balance_movement").set_index("financial_account").loc["fa_bdep"]
    assert (utc_b.total_cents, ny_b.total_cents) == (9_000, 7)
    assert new_york.summary.reporting_timezone == "America/New_York"


def test_a_past_as_of_leaves_the_exception_events_as_they_were(
    known_warehouse: Warehouse, settings: Settings, tmp_path: Path
) -> None:
    today = reconcile(
        settings, as_of=RUN_AT.date(), out_dir=tmp_path / "today", clock=lambda: RUN_AT
    )
    assert today.lifecycle is not None
    assert today.lifecycle.opened
    with known_warehouse.read() as con:
        before = con.execute("SELECT * FROM exception_events ORDER BY seq").fetchall()
    past = _run(settings, tmp_path, dt.date(2026, 11, 25))
    with known_warehouse.read() as con:
        after = con.execute("SELECT * FROM exception_events ORDER BY seq").fetchall()
    assert after == before
    assert past.lifecycle is None
