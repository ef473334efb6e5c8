"""The roll-forward over a month boundary (issue 22): an unexplained credit found in November is a
reconciling item with its own id, carried into December — where the service's opening balance
already holds it — until a person acknowledges it with a note; then November shows it as an
acknowledged credit and December carries nothing. Brokerage differences are market movement."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import openpyxl

from fundpipe.config import Settings
from fundpipe.reconcile import ReconcileResult, reconcile
from fundpipe.reconcile.close import close_period
from fundpipe.reconcile.lifecycle import acknowledge
from fundpipe.warehouse.file import Warehouse

CREDIT = 1_000_000  # $10,000.00 nobody can explain yet


def _snapshot(wh: Warehouse, seen: str, total: int, eolm: int) -> None:
    with wh.write() as con:
        con.execute(
            "INSERT INTO balance_snapshots VALUES "
            "(?, ?, 'fa_bdep', 'veh_b', 'depository', ?, ?, ?, 'USD', NULL)",
            [f"s-{seen}", seen, total, total, eolm],
        )


def _run(settings: Settings, tmp_path: Path, day: dt.date) -> ReconcileResult:
    return reconcile(settings, as_of=day, out_dir=tmp_path / day.isoformat())


def _row(result: ReconcileResult, account: str) -> dict[str, object]:
    frame = result.frame("rollforward").set_index("financial_account")
    return frame.loc[account].to_dict()  # type: ignore[no-any-return]


def _foots(row: dict[str, object]) -> None:
    parts = ("opening", "disbursed", "returned", "credits", "other", "market_movement")
    expected = sum(int(row[f"{p}_cents"]) for p in parts)  # type: ignore[call-overload]
    assert expected == row["expected_closing_cents"]
    assert row["service_total_cents"] - expected == row["unexplained_cents"]  # type: ignore[operator]


def test_an_unexplained_credit_is_carried_into_the_next_month_until_acknowledged(
    settings: Settings, known_warehouse: Warehouse, tmp_path: Path
) -> None:
    wh = known_warehouse
    # fa_bdep: $100 at the end of October, $90 on 11-20 (the known world's -$10), then a
    # $10,000 credit arrives on 11-28
    _snapshot(wh, "2026-11-28 12:00:00+00", 9_000 + CREDIT, 10_000)
    november = _run(settings, tmp_path, dt.date(2026, 11, 28))
    row = _row(november, "fa_bdep")
    _foots(row)
    assert row["period"] == "2026-11"
    assert row["unexplained_cents"] == CREDIT - 1_000
    item = row["reconciling_item_id"]
    exceptions = november.frame("exceptions")
    mine = exceptions[exceptions.exception_id == item]
    assert list(mine.kind) == ["unexplained_balance"]
    assert "reconciling item of 2026-11" in mine.what.iloc[0]

    # December: the service's end-of-November total holds the credit, so December alone
    # explains itself — the November item is carried, same id, still open
    _snapshot(wh, "2026-12-02 12:00:00+00", 9_000 + CREDIT, 9_000 + CREDIT)
    december = _run(settings, tmp_path, dt.date(2026, 12, 2))
    row = _row(december, "fa_bdep")
    _foots(row)
    assert (row["period"], row["unexplained_cents"]) == ("2026-12", 0)
    assert row["carried_items"] == 1
    assert row["carried_cents"] == CREDIT - 1_000
    assert row["reconciling_items_cents"] == CREDIT - 1_000
    assert item in str(row["carried_item_ids"])
    assert december.lifecycle is not None
    still = {t.id: t for t in december.lifecycle.still_open}
    assert item in still
    assert still[item].age_days == 4  # first seen 11-28
    assert december.summary.reconciling_items == 1
    wb = openpyxl.load_workbook(december.workbook)
    sheet = wb["Roll-forward"]
    header = [c.value for c in sheet[1]]
    assert header[:5] == ["Vehicle", "Account", "Account type", "Month", "Opening (USD)"]
    shown = {r[header.index("Account")]: r for r in sheet.iter_rows(min_row=2, values_only=True)}
    assert shown["B dep"][header.index("Carried from earlier months (USD)")] == 9_990
    kinds = {r[7] for r in wb["Exceptions"].iter_rows(min_row=2, values_only=True)}
    assert "Reconciling item (unexplained balance)" in kinds

    # a person explains it: acknowledged with a note, it stops being carried and resolves
    acknowledge(
        wh,
        str(item),
        note="capital call received early",
        by="ana",
        now=dt.datetime(2026, 12, 3, tzinfo=dt.UTC),
    )
    later = _run(settings, tmp_path, dt.date(2026, 12, 3))
    row = _row(later, "fa_bdep")
    _foots(row)
    assert (row["carried_items"], row["carried_cents"]) == (0, 0)
    assert later.lifecycle is not None
    assert [t.id for t in later.lifecycle.resolved] == [item]
    with wh.read() as con:
        con.execute("SET VARIABLE as_of = DATE '2026-12-03'")
        credits, unexplained = con.execute(
            "SELECT credits_cents, unexplained_cents FROM rollforward_periods "
            "WHERE financial_account = 'fa_bdep' AND period = '2026-11'"
        ).fetchone()  # type: ignore[misc]
    # November now rolls forward with the item as an acknowledged credit, nothing unexplained
    assert (credits, unexplained) == (CREDIT - 1_000, 0)


def test_brokerage_moves_with_the_market_and_every_account_foots(
    known_result: ReconcileResult,
) -> None:
    brokerage = _row(known_result, "fa_abrk")
    _foots(brokerage)
    assert brokerage["market_movement_cents"] == 1_000
    assert brokerage["unexplained_cents"] == 0
    depository = _row(known_result, "fa_adep")
    _foots(depository)
    assert depository["disbursed_cents"] == -50_000
    assert depository["disbursed_distributions"] == 1
    assert depository["unexplained_cents"] == 0


def test_the_month_after_a_close_opens_at_the_closed_closing(
    settings: Settings, known_warehouse: Warehouse, tmp_path: Path
) -> None:
    wh = known_warehouse
    _snapshot(wh, "2026-11-28 12:00:00+00", 9_000 + CREDIT, 10_000)
    # December's balance: the service's end-of-November total leaves the credit out
    _snapshot(wh, "2026-12-02 12:00:00+00", 9_000 + CREDIT, 9_000)
    before = _row(_run(settings, tmp_path, dt.date(2026, 12, 2)), "fa_bdep")
    _foots(before)
    assert (before["opening_cents"], before["opening_source"]) == (9_000, "service month-end")
    assert before["unexplained_cents"] == CREDIT

    close_period(
        settings,
        "2026-11",
        prepared_by="ana",
        with_open_exceptions=True,
        clock=lambda: dt.datetime(2026, 12, 1, 9, tzinfo=dt.UTC),
    )
    with wh.read() as con:
        recorded = con.execute(
            "SELECT closing_cents FROM period_closing_records "
            "WHERE period = '2026-11' AND financial_account = 'fa_bdep'"
        ).fetchall()
    assert recorded == [(9_000 + CREDIT,)]

    december = _run(settings, tmp_path / "after", dt.date(2026, 12, 2))
    row = _row(december, "fa_bdep")
    _foots(row)
    assert (row["opening_cents"], row["opening_source"]) == (
        9_000 + CREDIT,
        "closed period 2026-11",
    )
    assert row["unexplained_cents"] == 0
    sheet = openpyxl.load_workbook(december.workbook)["Roll-forward"]
    header = [c.value for c in sheet[1]]
    shown = {r[header.index("Account")]: r for r in sheet.iter_rows(min_row=2, values_only=True)}
    assert shown["B dep"][header.index("Opening from")] == "closed period 2026-11"
    # a report as of a day before the close still opens at the service's month-end
    earlier = _row(_run(settings, tmp_path / "earlier", dt.date(2026, 11, 30)), "fa_bdep")
    assert earlier["opening_source"] == "service month-end"


def test_disbursed_movements_per_distribution_foot_to_the_account(
    known_result: ReconcileResult,
) -> None:
    accounts = known_result.frame("rollforward").set_index("financial_account")
    movements = known_result.frame("rollforward_movements")
    assert not movements.empty
    sums = movements.groupby(["financial_account", "kind"])["amount_cents"].sum().to_dict()
    for account, row in accounts.iterrows():
        assert sums.get((account, "disbursed"), 0) == row["disbursed_cents"]
        assert sums.get((account, "returned"), 0) == row["returned_cents"]
        mine = movements[(movements.financial_account == account) & (movements.kind == "disbursed")]
        assert len(mine) == row["disbursed_distributions"]
    adep = movements[movements.financial_account == "fa_adep"]
    assert list(adep.kind) == ["disbursed"]
    assert int(adep.amount_cents.iloc[0]) == -50_000
    assert adep.distribution_name.iloc[0]
    assert adep.distribution_id.iloc[0]

    wb = openpyxl.load_workbook(known_result.workbook)
    detail = wb["Roll-forward detail"]
    header = [c.value for c in detail[1]]
    assert header[:4] == ["Vehicle", "Account", "Month", "Kind"]
    rows = list(detail.iter_rows(min_row=2, values_only=True))
    total = rows.pop()  # the last row foots the sheet
    amount = header.index("Amount (USD)")
    assert total[0] == "Total"
    assert total[amount] == sum(r[amount] for r in rows)
    shown = sum(r[amount] for r in rows if r[header.index("Account")] == "A dep")
    assert shown == -500
    assert {r[header.index("Kind")] for r in rows} <= {
        "Disbursed",
        "Returned (failed after disbursal)",
    }
