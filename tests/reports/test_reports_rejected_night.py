"""The workbook lists the files rejected that night (issue 42 §7), as the desk does: on the
Summary, each file with why (its error report's first problems) and where its error report is,
whole; on the Exceptions tab, the file's line with the same problems and that path. A file a
corrected one settled since is still listed on the Summary, saying so; a night without one says
"None". Read back with openpyxl, through a real ingest, sync and reconcile."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import duckdb
import openpyxl
from openpyxl.worksheet.worksheet import Worksheet

from fundpipe.reconcile import reconcile
from fundpipe.reports.workbook import WorkbookSummary, write_workbook
from fundpipe.submit.ingest import ingest
from fundpipe.sync.pull import sync
from worlds.submit import sandbox_world, write_sheet

BASE = dt.datetime(2026, 11, 20, 12, tzinfo=dt.UTC)


def _block(ws: Worksheet, title: str) -> list[tuple[object, ...]]:
    """The rows under the Summary block whose title starts with `title`, to the blank row."""
    rows = list(ws.iter_rows(values_only=True))
    start = next(i for i, r in enumerate(rows) if str(r[0] or "").startswith(title))
    found = []
    for r in rows[start + 1 :]:
        if r[0] is None:
            break
        found.append(r)
    return found


def _cells(path: Path) -> list[object]:
    wb = openpyxl.load_workbook(path)
    return [c for ws in wb.worksheets for r in ws.iter_rows(values_only=True) for c in r]


def _true_false(path: Path) -> list[str]:
    """The cells a spreadsheet prints as TRUE or FALSE: a true/false without a Yes/No format."""
    wb = openpyxl.load_workbook(path)
    return [
        f"{ws.title}!{c.coordinate}"
        for ws in wb.worksheets
        for r in ws.iter_rows()
        for c in r
        if isinstance(c.value, bool) and c.number_format != '"Yes";"Yes";"No"'
    ]


def test_a_rejected_file_is_on_the_summary_and_the_exceptions_tab_with_why_and_its_report(
    tmp_path: Path,
) -> None:
    world = sandbox_world(tmp_path / "data", clock=lambda: BASE)
    good = tmp_path / "good.csv"
    write_sheet(good, [("C1", "veh_demo1", [100_000, 20_000]), ("C2", "veh_demo2", [5_000])])
    bad = good.read_text().replace('"1,000.00"', '"(1,000.00)"')  # a negative amount
    assert bad != good.read_text()

    def drop(name: str, text: str) -> dt.datetime:
        """Ingest and sync `text` as `name`; the instant the night's reports are written."""
        (world.inbox / name).write_text(text)
        ingest(world.settings, transport=world.transport, settle_s=0)
        # the ledger stamps a file by the suite's clock when it is read: the night is that day
        with duckdb.connect(str(world.settings.local.ledger_file), read_only=True) as con:
            row = con.execute("SELECT max(received_at) FROM ledger_files").fetchone()
        assert row is not None
        assert row[0] is not None
        received = row[0].astimezone(dt.UTC)
        sync(world.settings, transport=world.transport, clock=lambda: received)
        return received + dt.timedelta(minutes=5)

    night = drop("payouts.csv", bad)

    def workbook(name: str) -> Path:
        result = reconcile(world.settings, out_dir=tmp_path / name, clock=lambda: night)
        return result.workbook

    path = workbook("rejected")
    summary = openpyxl.load_workbook(path)["Summary"]
    (file_row, report_row) = _block(summary, f"Files rejected on {night.date().isoformat()}")
    assert re.fullmatch(r"payouts\.csv: \d+ rows, \$[\d,]+\.\d\d", str(file_row[0]))
    why = str(file_row[1])
    assert why.startswith("Rejected: row ")
    assert "(column " in why
    assert "the amount is negative" in why
    assert str(report_row[0]).strip() == "Error report"
    report = Path(str(report_row[1]))
    assert report.is_absolute()
    assert report.is_file()
    assert report.name == "payouts.csv.errors.xlsx"
    assert report.parent.name == "rejected"

    exceptions = openpyxl.load_workbook(path)["Exceptions"]
    header = [c.value for c in exceptions[1]]
    lines = [
        dict(zip(header, r, strict=False))
        for r in exceptions.iter_rows(min_row=2, values_only=True)
    ]
    (line,) = [x for x in lines if "payouts.csv" in str(x["What"])]
    assert "the amount is negative" in str(line["What"])
    assert str(report) in str(line["What to do"])
    assert line["State"] == "Open"  # a word, not the machine value
    # no TRUE/FALSE anywhere, no ISO instant written as text
    cells = _cells(path)
    assert _true_false(path) == []
    assert not [c for c in cells if isinstance(c, str) and re.search(r"T\d\d:\d\d:\d\d", c)]

    # the corrected file settles it: no longer an exception, still what happened that night
    night = drop("payouts-fixed.csv", good.read_text())
    path = workbook("settled")
    (file_row, _report_row) = _block(
        openpyxl.load_workbook(path)["Summary"], f"Files rejected on {night.date().isoformat()}"
    )
    assert str(file_row[0]).startswith("payouts.csv: ")
    assert "Settled since: a later file carries its distributions." in str(file_row[1])
    assert not [c for c in _cells(path) if isinstance(c, str) and "Sheet payouts.csv" in c]


def test_a_night_without_a_rejected_file_says_none(tmp_path: Path) -> None:
    path = tmp_path / "book.xlsx"
    write_workbook(path, WorkbookSummary(organization="Demo Fund Administration"), [])
    ws = openpyxl.load_workbook(path)["Summary"]
    assert _block(ws, "Files rejected") == [("None", None, None)]
