"""The printed workbook read as a controller reads it (issue 29), with openpyxl: every cell of a
row on one line (text and figures aligned to the row's top, so a wrapped name never lines up
with the previous row's amounts), kinds in words in every column, the organization by its name,
and a Total row under every tab of money that foots."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import openpyxl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fundpipe.config import Settings
from fundpipe.reconcile import ReconcileResult, reconcile
from fundpipe.reports.headers import KIND_WORDS
from fundpipe.reports.workbook import SheetSource, WorkbookSummary, write_workbook
from fundpipe.warehouse.file import Warehouse

KNOWN_AS_OF = dt.date(2026, 11, 30)  # the known world's as-of (tests/conftest.py)
MONEY_TABS = ("Roll-forward", "Roll-forward detail", "Funding", "Balances", "Payments")


def _rows(ws: Any) -> tuple[list[str], list[tuple[Any, ...]]]:
    rows = list(ws.iter_rows(values_only=True))
    return [str(h) for h in rows[0]], rows[1:]


def test_every_cell_of_a_row_sits_on_the_same_line(known_result: ReconcileResult) -> None:
    wb = openpyxl.load_workbook(known_result.workbook)
    for name in ("Payments", "Roll-forward", "Exceptions", "Tie-out", "Funding"):
        ws = wb[name]
        alignments = {
            (cell.column_letter, cell.alignment.vertical)
            for row in ws.iter_rows(min_row=2)
            for cell in row
            if cell.value is not None
        }
        assert {vertical for _, vertical in alignments} == {"top"}, (name, alignments)


def test_kinds_print_in_words_in_every_column(known_result: ReconcileResult) -> None:
    wb = openpyxl.load_workbook(known_result.workbook)
    for name, header in (
        ("Exceptions", "Kind"),
        ("Exceptions", "Object type"),
        ("Payments", "Match"),
        ("Roll-forward detail", "Kind"),
    ):
        headers, rows = _rows(wb[name])
        values = {r[headers.index(header)] for r in rows} - {None, "Total"}
        assert values, (name, header)
        assert not [v for v in values if "_" in str(v) or str(v).islower()], (name, header, values)


def test_every_tab_of_money_has_a_total_row_that_foots(known_result: ReconcileResult) -> None:
    wb = openpyxl.load_workbook(known_result.workbook)
    for name in MONEY_TABS:
        headers, rows = _rows(wb[name])
        *body, total = rows
        assert "Total" in total, name
        money = [i for i, h in enumerate(headers) if h.endswith("(USD)")]
        assert money, name
        for i in money:
            figures = [r[i] for r in body if r[i] is not None]
            assert round(total[i] or 0, 2) == round(sum(figures), 2), (name, headers[i])
        assert wb[name].cell(len(rows) + 1, money[0] + 1).font.b, name  # printed bold
    # the Roll-forward's Total row itself foots: opening + movements = expected closing
    headers, rows = _rows(wb["Roll-forward"])
    total = dict(zip(headers, rows[-1], strict=True))
    parts = (
        "Opening (USD)",
        "Disbursed (USD)",
        "Returned (USD)",
        "Credits, acknowledged (USD)",
        "Other, acknowledged (USD)",
        "Market movement (USD)",
    )
    assert round(sum(total[p] for p in parts), 2) == round(total["Expected closing (USD)"], 2)
    assert round(total["Service total (USD)"] - total["Expected closing (USD)"], 2) == round(
        total["Unexplained (USD)"], 2
    )
    # a sort or filter covers the data rows, never the Total under them
    funding = wb["Funding"]
    assert funding.auto_filter.ref.endswith(str(funding.max_row - 1))


@pytest.fixture
def named(known_warehouse: Warehouse, tmp_path: Path) -> ReconcileResult:
    settings = Settings(
        _env_file=None,
        local={"data_dir": tmp_path / "data", "warehouse_path": known_warehouse.path},
        service={"org_id": "org_acme", "org_name": "Acme Capital Partners"},
    )
    return reconcile(settings, as_of=KNOWN_AS_OF, out_dir=tmp_path / "out")


def test_the_organization_prints_by_its_name(named: ReconcileResult) -> None:
    wb = openpyxl.load_workbook(named.workbook)
    summary = wb["Summary"]
    assert summary["A1"].value == "Reconciliation — Acme Capital Partners"
    facts = {r[0]: r[1] for r in summary.iter_rows(max_col=2, values_only=True) if r[0]}
    assert facts["Organization"] == "Acme Capital Partners"
    assert facts["Organization id"] == "org_acme"
    for ws in wb.worksheets:
        assert "Acme Capital Partners" in ws.oddHeader.left.text, ws.title
        assert "org_acme" not in ws.oddHeader.left.text, ws.title


def test_a_kind_no_table_knows_yet_still_prints_in_words(tmp_path: Path) -> None:
    source = tmp_path / "x.parquet"
    pq.write_table(pa.table({"kind": ["amount_mismatch", "period_not_certified"]}), source)
    path = tmp_path / "w.xlsx"
    write_workbook(
        path,
        WorkbookSummary(organization="Acme"),
        [SheetSource("Exceptions", source, words={"kind": KIND_WORDS})],
    )
    ws = openpyxl.load_workbook(path)["Exceptions"]
    assert [c.value for c in ws["A"][1:]] == [
        "Amount differs (sheet vs service)",
        "Period not certified",
    ]
