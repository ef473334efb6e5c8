"""The finance workbook read back with openpyxl: layout, formats, injection-proofing, splitting."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import openpyxl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fundpipe.reconcile import ReconcileResult
from fundpipe.reports.workbook import SheetSource, WorkbookSummary, neutralise, write_workbook
from worlds.warehouse import PAYLOADS

CURRENCY = '"$"#,##0.00;[Red]-"$"#,##0.00'


def _text(value: object) -> object:
    # xlsxwriter stores a carriage return as the OOXML escape _x000D_; Excel shows "\r".
    return value.replace("_x000D_", "\r") if isinstance(value, str) else value


def _all_cells(wb: openpyxl.Workbook):  # type: ignore[no-untyped-def]
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            yield from row


def test_workbook_has_the_five_sheets_with_frozen_filtered_formatted_headers(
    known_result: ReconcileResult,
) -> None:
    result = known_result
    wb = openpyxl.load_workbook(result.workbook)
    assert wb.sheetnames == [
        "Summary",
        "Exceptions",
        "Tie-out",
        "Roll-forward",
        "Roll-forward detail",
        "Funding",
        "Balances",
        "Payments",
    ]
    for name in wb.sheetnames[1:]:
        ws = wb[name]
        assert ws.freeze_panes == "A2", name
        assert str(ws.auto_filter.ref).startswith("A1:"), name
        assert all(c.font.b for c in ws[1]), name
        assert "file_hash" not in [c.value for c in ws[1]]
    funding = wb["Funding"]
    header = [c.value for c in funding[1]]
    # issue 13: headers in words, with the unit
    assert header[:4] == ["Vehicle id", "Vehicle", "Available (USD)", "Total (USD)"]
    rows = {r[0].value: r for r in funding.iter_rows(min_row=2)}
    # $200 staged + $10 failed still owed − $100 available (issue 22: funding counts what is owed)
    assert rows["veh_b"][header.index("Shortfall (USD)")].value == 110
    assert rows["veh_b"][header.index("Shortfall (USD)")].number_format == CURRENCY
    assert rows["veh_b"][header.index("Next distribution (local date)")].value == dt.datetime(
        2026, 11, 30
    )
    assert (
        rows["veh_b"][header.index("Next distribution (local date)")].number_format == "yyyy-mm-dd"
    )
    assert funding.column_dimensions["C"].width >= 14
    payments = wb["Payments"]
    assert (
        payments.auto_filter.ref == "A1:V7"
    )  # issue 13: + investor_name, sheet_rows, file_location
    # issue 22: columns in reading order, found by their header
    paid = [c.value for c in payments[1]]
    pid, sheet = paid.index("Payment id"), paid.index("Sheet amount (USD)")
    cents = {r[pid].value: r[sheet].value for r in payments.iter_rows(min_row=2)}
    assert cents["dpmt_2"] == 250
    balances = wb["Balances"]
    seen = balances["F2"]
    assert seen.value == dt.datetime(2026, 11, 20, 12, 0)
    assert seen.number_format == "yyyy-mm-dd hh:mm:ss"


def test_summary_sheet_shows_run_facts_totals_exceptions_and_a_chart(
    known_result: ReconcileResult,
) -> None:
    result = known_result
    ws = openpyxl.load_workbook(result.workbook)["Summary"]
    facts = {r[0]: r[1] for r in ws.iter_rows(values_only=True) if r[0]}
    assert facts["As of"] == "2026-11-30"
    assert facts["Shortfall"] == 110  # with the $10 failed payment still owed (issue 22)
    assert facts["Depository available"] == 1100
    assert facts["Sheet row not at the service"] == 1  # issue 22: kinds in plain words
    assert facts["Total"] == 10  # issue 22: + 3 distributions not tying out
    # issue 22: the chart shows the shortfall of the short vehicles only (veh_b's $100 would be
    # invisible beside veh_a's balance), from Funding's Shortfall column
    (chart,) = ws._charts
    refs = [s.val.numRef.f for s in chart.series]
    assert refs == ["'Funding'!$J$2:$J$2"]
    assert chart.series[0].cat.strRef.f == "'Funding'!$B$2:$B$2"
    assert [p.v for p in chart.series[0].val.numRef.numCache.pt] == [110]  # as Shortfall above


def test_no_cell_is_a_formula_and_injected_text_is_neutralised(
    known_result: ReconcileResult,
) -> None:
    result = known_result
    wb = openpyxl.load_workbook(result.workbook)
    texts = [_text(c.value) for c in _all_cells(wb) if c.data_type != "n"]
    assert not [c.coordinate for c in _all_cells(wb) if c.data_type == "f"]
    for payload in PAYLOADS.values():
        assert "'" + payload in texts, payload
        assert payload not in texts, payload
    assert not [t for t in texts if isinstance(t, str) and t and t[0] in "=+-@\t\r"]


def _parquet(tmp_path: Path, table: pa.Table, name: str = "t.parquet") -> Path:
    path = tmp_path / name
    pq.write_table(table, path)
    return path


def test_every_text_column_is_neutralised_and_other_types_keep_their_values(tmp_path: Path) -> None:
    payloads = [*PAYLOADS.values(), "plain", "a=b", None]
    n = len(payloads)
    table = pa.table(
        {
            "kind": pa.array(payloads),
            "reason": pa.array(list(reversed(payloads))),
            "amount_cents": pa.array(range(-n, 0), pa.int64()),
            "amount_dollars": pa.array([None] * n, pa.decimal128(18, 2)),
            "seen_at": pa.array(
                [dt.datetime(2026, 11, 1, 9, 30, tzinfo=dt.UTC)] * n, pa.timestamp("us", tz="UTC")
            ),
            "flag": pa.array([True] * n),
        }
    )
    path = tmp_path / "w.xlsx"
    write_workbook(
        path, WorkbookSummary(chart_sheet=None), [SheetSource("Data", _parquet(tmp_path, table))]
    )
    ws = openpyxl.load_workbook(path)["Data"]
    rows = list(ws.iter_rows(min_row=2, values_only=True))
    assert [c.value for c in ws[1]] == ["Kind", "Reason", "Amount (USD)", "Seen at (UTC)", "Flag"]
    expected = [None if p is None else neutralise(p) for p in payloads]
    assert [_text(r[0]) for r in rows] == expected
    assert [_text(r[1]) for r in rows] == list(reversed(expected))
    assert [r[2] for r in rows] == [c / 100 for c in range(-n, 0)]
    assert rows[0][3] == dt.datetime(2026, 11, 1, 9, 30)
    assert rows[0][4] is True


def test_a_sheet_past_the_row_limit_continues_on_numbered_sheets(tmp_path: Path) -> None:
    table = pa.table(
        {
            "payment_id": [f"dpmt_{i}" for i in range(7)],
            "amount_cents": pa.array(range(7), pa.int64()),
        }
    )
    path = tmp_path / "w.xlsx"
    names = write_workbook(
        path,
        WorkbookSummary(chart_sheet=None),
        [SheetSource("Payments", _parquet(tmp_path, table))],
        max_rows=4,
    )
    assert names == ["Summary", "Payments", "Payments (2)", "Payments (3)"]
    wb = openpyxl.load_workbook(path)
    seen = []
    for name in names[1:]:
        ws = wb[name]
        assert [c.value for c in ws[1]] == ["Payment id", "Amount (USD)"]
        assert ws.freeze_panes == "A2"
        seen += [r[0] for r in ws.iter_rows(min_row=2, values_only=True)]
    assert seen == [f"dpmt_{i}" for i in range(7)]
    assert wb["Payments (3)"].max_row == 2


@pytest.mark.parametrize(
    ("text", "safe"),
    [
        ("=1+1", "'=1+1"),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("@A1", "'@A1"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("a=1", "a=1"),
        ("", ""),
        ("'=1", "'=1"),
    ],
)
def test_neutralise_prefixes_only_formula_starts(text: str, safe: str) -> None:
    assert neutralise(text) == safe
