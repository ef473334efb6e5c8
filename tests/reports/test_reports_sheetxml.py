"""The workbook's data rows (built with Arrow, spliced into xlsxwriter's sheets) read back exactly
as xlsxwriter's own cell writes would: awkward text, numbers, blanks, formats, continuation sheets.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path

import openpyxl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xlsxwriter
from python_calamine import CalamineWorkbook

from fundpipe.reports.sheetxml import MAX_TEXT, splice_rows
from fundpipe.reports.workbook import SheetSource, WorkbookSummary, neutralise, write_workbook

CURRENCY = '"$"#,##0.00;[Red]-"$"#,##0.00'

#: Text that needs escaping, preserving or cutting on its way into sheet XML.
AWKWARD = [
    "a & b < c > d",
    "\"quoted\" 'single'",
    "x\x01y\x1fz",  # control characters: _xHHHH_
    "\r=1",  # neutralised, then its carriage return escaped
    "literal _x0041_ escape",  # must not turn into "A"
    "  leading and trailing  ",
    "line\nbreak",
    "tab\tinside",
    "naïve café — €5 \U0001f600",
    "",
    "=SUM(A1:A2)",
    "-5",
    "@cmd",
    "+1",
    "é" * (MAX_TEXT + 10),  # cut at Excel's limit
    "\U0001f600" * (MAX_TEXT // 2 + 5),  # cut in UTF-16 units, never inside an emoji
    None,
]


def _data_cells(path: Path, sheet: str) -> list[list[object]]:
    ws = openpyxl.load_workbook(path)[sheet]
    return [[c.value for c in row] for row in ws.iter_rows(min_row=2)]


def test_awkward_text_reads_back_as_xlsxwriter_writes_it(tmp_path: Path) -> None:
    source = tmp_path / "t.parquet"
    pq.write_table(pa.table({"note": pa.array(AWKWARD, pa.string())}), source)
    ours = tmp_path / "ours.xlsx"
    write_workbook(ours, WorkbookSummary(chart_sheet=None), [SheetSource("Data", source)])

    # the oracle: xlsxwriter writing each neutralised text with write_string, in the same mode
    oracle = tmp_path / "oracle.xlsx"
    book = xlsxwriter.Workbook(str(oracle), {"constant_memory": True})
    ws = book.add_worksheet("Data")
    ws.write_string(0, 0, "Note")
    for row, text in enumerate(AWKWARD, start=1):
        if text is not None:
            ws.write_string(row, 0, neutralise(text))
    book.close()

    assert _data_cells(ours, "Data") == _data_cells(oracle, "Data")
    # what a spreadsheet shows, escapes decoded (calamine decodes _xHHHH_ as Excel does)
    shown = [_shown(ours), _shown(oracle)]
    assert shown[0] == shown[1]
    assert shown[0][:14] == [
        "a & b < c > d",
        "\"quoted\" 'single'",
        "x\x01y\x1fz",
        "'\r=1",
        "literal _x0041_ escape",
        "  leading and trailing  ",
        "line\nbreak",
        "tab\tinside",
        "naïve café — €5 \U0001f600",
        "",
        "'=SUM(A1:A2)",
        "'-5",
        "'@cmd",
        "'+1",
    ]
    assert shown[0][14] == "é" * MAX_TEXT
    assert shown[0][15] == "\U0001f600" * (MAX_TEXT // 2)


def _shown(path: Path) -> list[object]:
    rows = CalamineWorkbook.from_path(str(path)).get_sheet_by_name("Data").to_python()
    return [r[0] for r in rows[1:]]


@pytest.mark.parametrize("text", [t for t in AWKWARD[:14] if t])
def test_one_awkward_text_among_plain_ones_is_written_as_xlsxwriter_writes_it(
    tmp_path: Path, text: str
) -> None:
    """A text needing an escape, an apostrophe or its white space kept gets it when it is the only
    such text of its column, in a sheet that starts partway through the file's rows."""
    source = tmp_path / "t.parquet"
    pq.write_table(pa.table({"note": pa.array(["plain", "plain", text, "plain"])}), source)
    ours = tmp_path / "ours.xlsx"
    write_workbook(
        ours, WorkbookSummary(chart_sheet=None), [SheetSource("Data", source)], max_rows=3
    )
    oracle = tmp_path / "oracle.xlsx"
    book = xlsxwriter.Workbook(str(oracle), {"constant_memory": True})
    ws = book.add_worksheet("Data")
    ws.write_string(0, 0, "Note")
    ws.write_string(1, 0, neutralise(text))
    book.close()
    # "Data (2)", after Summary and "Data": its first row is the awkward one
    assert _cell_content(ours, "xl/worksheets/sheet3.xml") == _cell_content(
        oracle, "xl/worksheets/sheet1.xml"
    )


def _cell_content(path: Path, member: str) -> bytes:
    with zipfile.ZipFile(path) as package:
        xml = package.read(member)
    found = re.search(rb'<c r="A2"[^>]*>(.*?)</c>', xml, re.DOTALL)
    assert found is not None
    return found.group(1)


def test_numbers_dates_booleans_and_blanks_keep_values_and_formats(tmp_path: Path) -> None:
    table = pa.table(
        {
            "amount_cents": pa.array([123456, -5, None, 0], pa.int64()),
            "ratio": pa.array([1.5, math.nan, math.inf, 1e21], pa.float64()),
            "count": pa.array([1, None, 3, 2**40], pa.int64()),
            "effective_date": pa.array(
                [dt.date(2026, 11, 30), None, dt.date(1970, 1, 1), dt.date(2000, 2, 29)]
            ),
            "seen_at": pa.array(
                [dt.datetime(2026, 11, 1, 9, 30, 15, tzinfo=dt.UTC), None, None, None],
                pa.timestamp("us", tz="UTC"),
            ),
            "ok": pa.array([True, False, None, True]),
        }
    )
    source = tmp_path / "t.parquet"
    pq.write_table(table, source)
    path = tmp_path / "w.xlsx"
    write_workbook(path, WorkbookSummary(chart_sheet=None), [SheetSource("Data", source)])
    ws = openpyxl.load_workbook(path)["Data"]
    assert ws.dimensions == "A1:F5"
    rows = list(ws.iter_rows(min_row=2))
    assert [r[0].value for r in rows] == [1234.56, -0.05, None, 0]
    assert rows[0][0].number_format == CURRENCY
    # NaN and infinities are no number Excel stores: blank, never the text "nan"
    assert [r[1].value for r in rows] == [1.5, None, None, 1e21]
    assert [r[2].value for r in rows] == [1, None, 3, 2**40]
    assert rows[0][2].number_format == "#,##0"
    assert [r[3].value for r in rows] == [
        dt.datetime(2026, 11, 30),
        None,
        dt.datetime(1970, 1, 1),
        dt.datetime(2000, 2, 29),
    ]
    assert rows[0][3].number_format == "yyyy-mm-dd"
    assert rows[0][4].value == dt.datetime(2026, 11, 1, 9, 30, 15)
    assert rows[0][4].number_format == "yyyy-mm-dd hh:mm:ss"
    assert [r[5].value for r in rows] == [True, False, None, True]


def test_continuation_sheets_number_their_rows_from_two_and_keep_formats(tmp_path: Path) -> None:
    n = 10
    source = tmp_path / "t.parquet"
    pq.write_table(
        pa.table(
            {
                "payment_id": [f"=dpmt_{i}" for i in range(n)],
                "amount_cents": pa.array(range(100, 100 + n), pa.int64()),
            }
        ),
        source,
        row_group_size=3,  # batches and sheets cut at different places
    )
    path = tmp_path / "w.xlsx"
    names = write_workbook(
        path, WorkbookSummary(chart_sheet=None), [SheetSource("Payments", source)], max_rows=5
    )
    assert names == ["Summary", "Payments", "Payments (2)", "Payments (3)"]
    wb = openpyxl.load_workbook(path)
    seen: list[object] = []
    for name, rows in zip(names[1:], (4, 4, 2), strict=True):
        ws = wb[name]
        assert ws.dimensions == f"A1:B{rows + 1}", name
        assert str(ws.auto_filter.ref) == f"A1:B{rows + 1}", name
        data = list(ws.iter_rows(min_row=2))
        assert [r[0].row for r in data] == list(range(2, rows + 2)), name
        assert all(r[1].number_format == CURRENCY for r in data), name
        seen += [(r[0].value, r[1].value) for r in data]
    assert seen == [(f"'=dpmt_{i}", (100 + i) / 100) for i in range(n)]


def test_big_batches_are_done_in_parts_with_rows_numbered_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fundpipe.reports.sheetxml as sheetxml

    monkeypatch.setattr(sheetxml, "BATCH_BYTES", 64)  # a few rows per part
    n = 50
    source = tmp_path / "t.parquet"
    pq.write_table(pa.table({"payment_id": [f"dpmt_{i}" for i in range(n)]}), source)
    path = tmp_path / "w.xlsx"
    write_workbook(path, WorkbookSummary(chart_sheet=None), [SheetSource("Payments", source)])
    ws = openpyxl.load_workbook(path)["Payments"]
    assert [(r[0].row, r[0].value) for r in ws.iter_rows(min_row=2)] == [
        (i + 2, f"dpmt_{i}") for i in range(n)
    ]


def test_an_empty_source_is_its_header_and_the_line_saying_it_is_empty(tmp_path: Path) -> None:
    source = tmp_path / "t.parquet"
    pq.write_table(pa.table({"payment_id": pa.array([], pa.string())}), source)
    path = tmp_path / "w.xlsx"
    write_workbook(path, WorkbookSummary(chart_sheet=None), [SheetSource("Payments", source)])
    ws = openpyxl.load_workbook(path)["Payments"]
    assert [[c.value for c in r] for r in ws.iter_rows()] == [
        ["Payment id"],
        ["None as of this date."],
    ]


def _headers(folder: Path) -> tuple[Path, str]:
    """A workbook as xlsxwriter writes it before its rows are spliced in (a summary sheet, then
    Payments), and the Payments sheet's member."""
    folder.mkdir()
    source = folder / "t.parquet"
    pq.write_table(pa.table({"payment_id": pa.array([], pa.string())}), source)
    path = folder / "headers.xlsx"
    write_workbook(path, WorkbookSummary(chart_sheet=None), [SheetSource("Payments", source)])
    with zipfile.ZipFile(path) as archive:
        *_, member = [n for n in archive.namelist() if n.startswith("xl/worksheets/sheet")]
    return path, member


def _rows(*first_rows: int) -> list[pa.StringArray]:
    return [
        pa.array([f'<row r="{r}"><c r="A{r}" t="inlineStr"><is><t>p{r}</t></is></c></row>'])
        for r in first_rows
    ]


def test_a_failed_write_leaves_no_half_written_workbook(tmp_path: Path) -> None:
    headers, member = _headers(tmp_path / "headers")

    def broken() -> Iterator[pa.StringArray]:
        yield from _rows(2)
        raise OSError("disk full")

    target = tmp_path / "out" / "w.xlsx"
    target.parent.mkdir()
    with pytest.raises(OSError, match="disk full"):
        splice_rows(headers, target, {member: (broken, "A1:A3")})
    # no workbook that looks whole but lacks rows, and nothing half-written beside it
    assert list(target.parent.iterdir()) == []


def test_a_failed_write_keeps_the_previous_workbook(tmp_path: Path) -> None:
    headers, member = _headers(tmp_path / "headers")
    target = tmp_path / "w.xlsx"
    splice_rows(headers, target, {member: (lambda: _rows(2, 3), "A1:A3")})
    assert [c.value for c in openpyxl.load_workbook(target)["Payments"]["A"]] == [
        "Payment id",
        "p2",
        "p3",
    ]
    before = target.read_bytes()

    def broken() -> Iterator[pa.StringArray]:
        yield from _rows(2)
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        splice_rows(headers, target, {member: (broken, "A1:A3")})
    assert target.read_bytes() == before
    assert zipfile.is_zipfile(target)


def test_a_failure_building_rows_ahead_is_raised_and_leaves_nothing(tmp_path: Path) -> None:
    """Rows are built in a worker thread while earlier ones are compressed: an error there is
    the write's error, nothing half-written stays, and no worker is left running."""
    import threading

    headers, member = _headers(tmp_path / "headers")
    built: list[int] = []

    def fails_on_the_third() -> Iterator[pa.StringArray]:
        for row in (2, 3, 4):
            built.append(row)
            if len(built) == 3:
                raise MemoryError("out of memory building rows")
            yield from _rows(row)

    target = tmp_path / "out" / "w.xlsx"
    target.parent.mkdir()
    with pytest.raises(MemoryError, match="building rows"):
        splice_rows(headers, target, {member: (fails_on_the_third, "A1:A4")})
    assert built == [2, 3, 4]  # two batches of rows were produced before the third failed
    assert list(target.parent.iterdir()) == []
    assert not [t for t in threading.enumerate() if t.name == "fundpipe-sheet-rows"]
