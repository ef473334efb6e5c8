"""The reconciliation views over a known world inserted straight into the warehouse."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from rich.console import Console

from fundpipe.app.cli.render import format_cents, render_summary
from fundpipe.config import Settings
from fundpipe.reconcile import ReconcileResult, export_views, reconcile
from fundpipe.warehouse.file import Warehouse
from worlds.warehouse import PAYLOADS

AS_OF = dt.date(2026, 11, 30)


def _run(settings: Settings, tmp_path: Path, as_of: dt.date = AS_OF):  # type: ignore[no-untyped-def]
    return reconcile(settings, as_of=as_of, out_dir=tmp_path / "out")


def test_funding_shows_available_obligations_and_shortfall_per_vehicle(
    known_result: ReconcileResult,
) -> None:
    funding = known_result.frame("funding").set_index("vehicle")
    b = funding.loc["veh_b"]
    # owed: $200 staged + dpmt_5's $10 failed and not paid again (issue 22: still owed)
    assert (b.available_cents, b.obligations_cents, b.failed_owed_cents) == (10_000, 20_000, 1_000)
    assert (b.owed_cents, b.shortfall_cents) == (21_000, 11_000)
    assert b.open_payments == 2
    assert b.failed_owed_payments == 1
    assert b.balance == "seen"
    # dst_2 pays 2026-12-01 03:00Z = 2026-11-30 22:00 in New York: its date is the 30th.
    assert b.next_distribution_date == dt.date(2026, 11, 30)
    assert b.first_short_date == dt.date(2026, 11, 30)
    a = funding.loc["veh_a"]
    assert (a.available_cents, a.obligations_cents, a.shortfall_cents) == (100_000, 0, 0)
    assert list(funding.index) == ["veh_b", "veh_a"]  # the short vehicle first


def test_sheet_vs_service_classifies_every_ledger_row_and_extra_payment(
    known_result: ReconcileResult,
) -> None:
    frame = known_result.frame("sheet_vs_service")
    got = {
        (
            r.match,
            r.payment_id if isinstance(r.payment_id, str) else None,
            r.sheet_amount_cents if pd.notna(r.sheet_amount_cents) else None,
            r.service_amount_cents if pd.notna(r.service_amount_cents) else None,
        )
        for r in frame.itertuples()
    }
    assert got == {
        ("ok", "dpmt_1", 30_000, 30_000),
        ("amount_mismatch", "dpmt_2", 25_000, 20_000),
        ("ok", "dpmt_3", 15_000, 15_000),
        ("missing", None, 777, None),
        ("extra", "dpmt_4", None, 5_000),
        ("status_mismatch", "dpmt_5", 1_000, 1_000),
    }
    mismatch = frame[frame.match == "amount_mismatch"].iloc[0]
    assert mismatch.reason == "sheet $250.00 vs service $200.00"
    assert mismatch.difference_cents == -5_000
    failed = frame[frame.match == "status_mismatch"].iloc[0]
    assert failed.reason == "ledger created vs service failed (insufficient funds)"
    assert (mismatch.source_file, mismatch.sheet, mismatch.row) == (
        PAYLOADS["at"],
        PAYLOADS["tab"],
        3,
    )


def test_balance_movement_explains_totals_by_disbursements_this_month(
    known_result: ReconcileResult,
) -> None:
    moves = known_result.frame("balance_movement").set_index("financial_account")
    a = moves.loc["fa_adep"]
    assert (a.total_end_of_last_month_cents, a.disbursed_this_month_cents, a.total_cents) == (
        150_000,
        50_000,
        100_000,
    )
    assert a.unexplained_cents == 0
    # the brokerage account moved with the market: shown here, but not an exception (below)
    assert moves.loc["fa_abrk"].unexplained_cents == 1_000
    assert moves.loc["fa_bdep"].unexplained_cents == -1_000
    # the snapshot seen after the as-of date is not used
    assert moves.loc["fa_bdep"].total_cents == 9_000


def test_as_of_date_picks_the_latest_snapshot_seen_by_then(
    known_warehouse: Warehouse, settings: Settings, tmp_path: Path
) -> None:
    later = _run(settings, tmp_path, dt.date(2026, 12, 6)).frame("balance_movement")
    assert later.set_index("financial_account").loc["fa_bdep"].total_cents == 7
    earlier = reconcile(settings, as_of=dt.date(2026, 11, 5), out_dir=tmp_path / "early").frame(
        "funding"
    )
    assert earlier.set_index("vehicle").loc["veh_a"].available_cents == 1


def test_two_as_of_dates_exported_on_one_connection_each_show_their_own_books(
    known_warehouse: Warehouse, tmp_path: Path
) -> None:
    # a view computed once for a run must not outlive it: the next export on the same
    # connection (another as-of) reads the books again
    days = {"later": dt.date(2026, 12, 6), "earlier": dt.date(2026, 11, 5)}
    with known_warehouse.read() as con:
        for folder, day in days.items():
            export_views(con, day, tmp_path / folder)
    for folder, day in days.items():
        with known_warehouse.read() as con:
            export_views(con, day, tmp_path / f"{folder}-alone")
        for view in ("funding", "balance_movement", "exceptions"):
            shared = pd.read_parquet(tmp_path / folder / f"{view}.parquet")
            alone = pd.read_parquet(tmp_path / f"{folder}-alone" / f"{view}.parquet")
            pd.testing.assert_frame_equal(shared, alone)
    earlier = pd.read_parquet(tmp_path / "earlier" / "funding.parquet").set_index("vehicle")
    assert earlier.loc["veh_a"].available_cents == 1
    later = pd.read_parquet(tmp_path / "later" / "balance_movement.parquet")
    assert later.set_index("financial_account").loc["fa_bdep"].total_cents == 7


def test_exceptions_list_everything_that_needs_a_person(known_result: ReconcileResult) -> None:
    result = known_result
    exceptions = result.frame("exceptions")
    got = sorted(
        zip(exceptions.kind, exceptions.object_id.fillna(""), exceptions.amount_cents, strict=True)
    )
    assert got == sorted(
        [
            ("shortfall", "veh_b", 11_000),
            ("amount_mismatch", "dpmt_2", -5_000),
            ("missing", "", 777),
            ("extra", "dpmt_4", 5_000),
            ("unexplained_balance", "fa_bdep", -1_000),
            ("file_rejected", "h3", 100),
            ("status_mismatch", "dpmt_5", 1_000),
            # issue 22: each distribution that does not tie out (service − sheet)
            ("distribution_tie_out", "dst_1", -5_000),
            ("distribution_tie_out", "dst_2", 5_000),
            ("distribution_tie_out", "ref:\r=1+1", -777),
        ]
    )
    assert all(exceptions.reason.str.len() > 10)
    assert result.summary.exception_counts == {
        "amount_mismatch": 1,
        "distribution_tie_out": 3,
        "extra": 1,
        "file_rejected": 1,
        "missing": 1,
        "shortfall": 1,
        "status_mismatch": 1,
        "unexplained_balance": 1,
    }
    assert result.summary.shortfall_cents == 11_000
    # only the depository's unexplained movement counts (a $10 debit, as the Roll-forward's
    # total shows it); fa_abrk's market move does not
    assert result.summary.unexplained_cents == -1_000
    assert "fa_abrk" not in set(exceptions.object_id.dropna())


def test_parquet_is_typed_cents_dollars_and_zoned_timestamps(known_result: ReconcileResult) -> None:
    result = known_result
    assert result.out_dir.name == "out"
    schema = pq.read_schema(result.parquet["balance_movement"])
    assert schema.field("total_cents").type == pa.int64()
    assert schema.field("total_dollars").type == pa.decimal128(18, 2)
    assert schema.field("balance_seen_at").type == pa.timestamp("us", tz="UTC")
    table = pq.read_table(result.parquet["sheet_vs_service"])
    row = table.filter(pa.compute.equal(table["payment_id"], "dpmt_2")).to_pylist()[0]
    assert str(row["sheet_amount_dollars"]) == "250.00"
    assert str(row["difference_dollars"]) == "-50.00"
    assert (
        pq.read_schema(result.parquet["sheet_vs_service"]).field("effective_date").type
        == pa.date32()
    )


def test_reports_default_to_a_folder_named_for_the_as_of_date(
    known_warehouse: Warehouse, settings: Settings
) -> None:
    run_at = dt.datetime(2026, 12, 1, 6, 30, tzinfo=dt.UTC)
    result = reconcile(settings, clock=lambda: run_at)
    # issue 13: one folder per run, `latest` pointing at the newest; issue 21: filed under the
    # as-of date, the run time in the folder's name
    reports = settings.local.data_dir / "reports"
    assert result.out_dir == reports / "2026-12-01" / "20261201T063000Z"
    # issue 44: nothing changed, nothing written — unless a new report is asked for
    kept = reconcile(settings, clock=lambda: run_at)
    assert kept.unchanged
    assert kept.out_dir == result.out_dir
    again = reconcile(settings, clock=lambda: run_at, rebuild=True)
    assert again.out_dir == reports / "2026-12-01" / "20261201T063000Z-2"
    latest = reports / "latest"
    assert latest.resolve() == again.out_dir.resolve()
    # a re-run of a past as-of is filed under that as-of and never moves `latest`
    later = dt.datetime(2026, 12, 3, 8, tzinfo=dt.UTC)
    past = reconcile(settings, as_of=dt.date(2026, 11, 30), clock=lambda: later)
    assert past.out_dir == reports / "2026-11-30" / "20261203T080000Z"
    assert latest.resolve() == again.out_dir.resolve()
    # the newest as-of moves it
    today = reconcile(settings, clock=lambda: later)
    assert today.out_dir == reports / "2026-12-03" / "20261203T080000Z"
    assert latest.resolve() == today.out_dir.resolve()
    assert (result.out_dir / "reconciliation.xlsx").exists()
    assert result.summary.as_of == dt.date(2026, 12, 1)
    assert (result.out_dir / "reconciliation.xlsx").exists()
    assert sorted(p.name for p in result.out_dir.glob("*.parquet")) == [
        "after_close_adjustments.parquet",
        "balance_movement.parquet",
        "distribution_tieout.parquet",
        "exceptions.parquet",
        "funding.parquet",
        "rollforward.parquet",
        "rollforward_movements.parquet",
        "sheet_vs_service.parquet",
    ]


def test_summary_table_prints_totals_and_exception_counts(known_result: ReconcileResult) -> None:
    console = Console(record=True, width=120)
    render_summary(known_result, console)
    text = console.export_text()
    assert "Reconciliation as of 2026-11-30" in text
    assert "$1,100.00" in text  # available across both vehicles
    assert "$110.00 (1 vehicle)" in text  # $200 staged + $10 failed still owed − $100
    assert "unexplained_balance" in text
    assert "10" in text.split("total")[-1]  # issue 22: + 3 distributions not tying out


def test_format_cents_is_exact() -> None:
    assert format_cents(123_456_789_012_345_67) == "$123,456,789,012,345.67"
    assert format_cents(-5) == "-$0.05"
    assert format_cents(0) == "$0.00"


def test_an_empty_warehouse_reconciles_to_empty_reports(settings: Settings, tmp_path: Path) -> None:
    result = _run(settings, tmp_path)
    assert result.rows == {
        "exceptions": 0,
        "funding": 0,
        "balance_movement": 0,
        "rollforward": 0,
        "rollforward_movements": 0,
        "distribution_tieout": 1,  # its Total row, all zero
        "sheet_vs_service": 0,
        "after_close_adjustments": 0,
    }
    assert result.summary.exceptions == 0
    assert result.workbook.exists()


def test_a_rejected_sheet_s_exception_reads_in_words_in_the_views_and_the_workbook(
    known_result: ReconcileResult,
) -> None:
    """A rejected file's exception names the sheet, not its path in the data folder (that is
    its location column): the run's log, summary and alerts read `what`, the workbook's
    Exceptions sheet shows it."""
    import openpyxl

    exceptions = known_result.frame("exceptions")
    (rejected,) = exceptions[exceptions.kind == "file_rejected"].itertuples()
    sentence = "Sheet bad.csv rejected: 1 row, $1.00, received 2026-11-20; nothing in it was paid"
    assert rejected.what == sentence
    assert rejected.reason == sentence
    assert rejected.file_location == "rejected/bad.csv"
    sheet = openpyxl.load_workbook(known_result.workbook)["Exceptions"]
    texts = [c.value for row in sheet.iter_rows() for c in row if isinstance(c.value, str)]
    assert any(t.startswith("Sheet bad.csv rejected: 1 row, $1.00") for t in texts), texts
    assert not [t for t in texts if t.startswith("file rejected/")]
