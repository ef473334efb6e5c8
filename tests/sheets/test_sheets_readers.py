"""Reading whatever Excel, Google Sheets or a fund-admin system exports — and refusing the rest."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import openpyxl
import pandas as pd
import pytest
import xlsxwriter

from fundpipe.sheets.readers import ReadLimits
from fundpipe.validate.files import FileReport, validate_files
from worlds.sheets import HEADER, clean_rows, csv_bytes


def only(path: Path, **kwargs: object) -> FileReport:
    [report] = validate_files([path], **kwargs)  # type: ignore[arg-type]
    return report


def amounts(report: FileReport) -> list[int]:
    assert report.valid, report.errors
    assert report.distributions is not None
    return report.distributions["amount_cents"].tolist()


@pytest.mark.parametrize(
    ("encoding", "delimiter"),
    [("utf-8", ","), ("utf-8-sig", ","), ("utf-16", "\t"), ("utf-8", ";"), ("utf-8", "\t")],
)
def test_csv_in_every_export_encoding_and_delimiter_is_read(
    write_csv: Callable[..., Path], encoding: str, delimiter: str
) -> None:
    report = only(write_csv(encoding=encoding, delimiter=delimiter))
    assert amounts(report) == [123456, 123450, 123400]
    assert report.warnings == []


def test_cp1252_is_read_with_a_warning(write_csv: Callable[..., Path]) -> None:
    rows = clean_rows()
    rows[0][0] = rows[1][0] = rows[2][0] = "Distribución Q4"
    report = only(write_csv(rows, encoding="cp1252"))
    assert report.valid
    assert report.distributions is not None
    assert report.distributions["distribution_name"].iloc[0] == "Distribución Q4"
    assert [w.check for w in report.warnings] == ["file_encoding_cp1252"]


def test_quoted_newlines_and_blank_lines_keep_excel_row_numbers(tmp_path: Path) -> None:
    rows = clean_rows()
    for row in rows:
        row[0] = "Q4\nIncome"
    rows[2][6] = "oops"
    text = csv_bytes(rows)
    path = tmp_path / "sheet.csv"
    # a blank line between the first and second payment: Excel shows it as row 3
    lines = text.split("\r\n")
    path.write_text("\r\n".join([*lines[:3], "", *lines[3:]]), encoding="utf-8")
    report = only(path)
    assert [(e.row, e.column, e.check) for e in report.errors] == [
        (5, "Amount ($)", "amount_not_a_number")
    ]


def test_leading_zeros_and_long_ids_survive(write_csv: Callable[..., Path]) -> None:
    rows = clean_rows()
    rows[0][5] = "000123"
    rows[1][5] = "12345678901234567890"
    report = only(write_csv(rows))
    assert report.distributions is not None
    assert report.distributions["entity"].tolist()[:2] == ["000123", "12345678901234567890"]


def test_ragged_row_is_a_row_error(tmp_path: Path) -> None:
    text = (
        csv_bytes(clean_rows())
        + "Q4 Income,veh_demo1,Q4-D1,2026-12-15 09:00,UTC,ent_demo9,5,extra\r\n"
    )
    path = tmp_path / "ragged.csv"
    path.write_text(text, encoding="utf-8")
    report = only(path)
    assert [(e.row, e.check) for e in report.errors if e.check == "row_too_many_cells"] == [
        (5, "row_too_many_cells")
    ]


def test_xlsx_dates_numbers_and_numbers_as_text(write_xlsx: Callable[..., Path]) -> None:
    def date_cell(ws, r, c, fmt):  # type: ignore[no-untyped-def]
        ws.write_datetime(r, c, datetime(2026, 12, 15, 9, 0), fmt)

    rows: list[list[object]] = [
        ["Q4 Income", "veh_demo1", "Q4-D1", date_cell, "America/New_York", "ent_demo1", 1234.56],
        [
            "Q4 Income",
            "veh_demo1",
            "Q4-D1",
            "2026-12-15 09:00",
            "America/New_York",
            "ent_demo2",
            "1234.50",
        ],
        ["Q4 Income", "veh_demo1", "Q4-D1", 46371.375, "America/New_York", "ent_demo3", 0.1 + 0.2],
    ]
    report = only(write_xlsx(rows))
    assert amounts(report) == [123456, 123450, 30]
    assert report.distributions is not None
    assert set(report.distributions["distribution_date"]) == {"2026-12-15T09:00:00-05:00"}
    assert report.sheets == ["Distributions"]


def test_xlsx_trailing_empty_rows_and_columns_are_ignored(write_xlsx: Callable[..., Path]) -> None:
    def far_blank(ws, r, c, fmt):  # type: ignore[no-untyped-def]
        ws.write_blank(40, 20, None, fmt)
        ws.write_string(r, c, "$5.00")

    rows: list[list[object]] = [list(r) for r in clean_rows()]
    rows[2][6] = far_blank
    report = only(write_xlsx(rows))
    assert amounts(report) == [123456, 123450, 500]
    assert report.rows == 3


def test_xlsx_formula_with_cached_value_is_read(write_xlsx: Callable[..., Path]) -> None:
    def formula(ws, r, c, fmt):  # type: ignore[no-untyped-def]
        ws.write_formula(r, c, "=1000*2", None, 2000)

    rows: list[list[object]] = [list(r) for r in clean_rows()]
    rows[1][6] = formula
    assert amounts(only(write_xlsx(rows))) == [123456, 200000, 123400]


def test_xlsx_formula_without_cached_value_is_a_row_error(tmp_path: Path) -> None:
    workbook = openpyxl.Workbook()
    ws = workbook.active
    assert ws is not None
    ws.append(HEADER)
    for row in clean_rows():
        ws.append(row)
    ws["G3"] = "=1000*2"  # openpyxl saves no cached result
    path = tmp_path / "formula.xlsx"
    workbook.save(path)
    report = only(path)
    assert not report.valid
    # said once, as the formula problem (not also as a blank amount)
    assert [(e.check, e.row, e.column) for e in report.errors] == [
        ("formula_without_value", 3, "Amount ($)")
    ]


def test_parquet_is_read(tmp_path: Path) -> None:
    frame = pd.DataFrame(list(clean_rows()), columns=HEADER)
    frame["Amount ($)"] = [1234.56, 1234.5, 1234.0]
    path = tmp_path / "sheet.parquet"
    frame.to_parquet(path)
    assert amounts(only(path)) == [123456, 123450, 123400]


@pytest.mark.parametrize(
    ("name", "content", "check"),
    [
        ("empty.csv", b"", "file_empty"),
        ("blank.csv", b"\r\n\r\n  \r\n", "file_empty"),
        ("binary.csv", bytes(range(256)) * 16, "file_not_text"),
        ("corrupt.xlsx", b"PK\x03\x04 definitely not a zip", "xlsx_corrupt"),
        ("protected.xlsx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 512, "xlsx_protected"),
        ("renamed.xlsx", b"Distribution Name,Vehicle\r\n", "xlsx_corrupt"),
        ("broken.parquet", b"PAR1 nope", "parquet_corrupt"),
        ("notes.pdf", b"%PDF-1.4", "file_type_unknown"),
    ],
)
def test_unreadable_files_get_one_clear_file_error(
    tmp_path: Path, name: str, content: bytes, check: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    report = only(path)
    assert not report.valid
    assert [(e.check, e.row) for e in report.errors] == [(check, None)]


def test_header_only_is_rejected(write_csv: Callable[..., Path]) -> None:
    report = only(write_csv([]))
    assert [e.check for e in report.errors] == ["no_rows"]


def test_zip_bomb_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "bomb.xlsx"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/worksheets/sheet1.xml", b"\0" * (32 * 1024 * 1024))
    report = only(path)
    assert [e.check for e in report.errors] == ["xlsx_too_large"]
    assert report.unreadable


def test_oversized_csv_is_refused_without_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "huge.csv"
    with open(path, "wb") as fh:
        fh.truncate(200 * 1024 * 1024)  # sparse: 200 MB on paper, nothing to read
    report = only(path)
    assert [e.check for e in report.errors] == ["file_too_large"]
    assert "200.0 MiB" in report.errors[0].reason
    assert report.unreadable
    modest = path.with_name("modest.csv")
    modest.write_bytes(b"x" * 2048)
    tight = only(modest, limits=ReadLimits(max_file_bytes=1024))
    assert [e.check for e in tight.errors] == ["file_too_large"]


def test_workbook_expanding_past_the_size_bound_is_refused(write_xlsx: Callable[..., Path]) -> None:
    report = only(write_xlsx(), limits=ReadLimits(max_xlsx_uncompressed_bytes=1024))
    assert [e.check for e in report.errors] == ["xlsx_too_large"]


def test_hidden_and_unrecognised_sheets_are_warnings(tmp_path: Path) -> None:
    path = tmp_path / "book.xlsx"
    workbook = xlsxwriter.Workbook(str(path))
    ws = workbook.add_worksheet("Distributions")
    ws.write_row(0, 0, HEADER)
    for r, row in enumerate(clean_rows(), start=1):
        ws.write_row(r, 0, row)
    workbook.add_worksheet("Notes").write(0, 0, "remember the Q4 memo")
    hidden = workbook.add_worksheet("Scratch")
    hidden.hide()
    workbook.close()
    report = only(path)
    assert report.valid
    assert sorted(w.check for w in report.warnings) == ["sheet_hidden", "sheet_ignored"]


#: Every character Arrow's ``utf8_trim_whitespace`` trims, ASCII and wider.
_SPACES = [chr(c) for c in (9, 10, 11, 12, 13, 28, 29, 30, 31, 32, 0x85, 0xA0, 0x2003, 0x3000)]


@pytest.mark.parametrize("space", _SPACES)
def test_a_cell_padded_with_any_space_is_trimmed_and_a_clean_column_is_not_copied(
    space: str,
) -> None:
    """A cell with a space of any kind at either end is read trimmed (a cell of spaces alone is
    blank), whatever the rest of its column; a column with nothing to trim is kept as read."""
    import pyarrow as pa

    from fundpipe.sheets.frames import clean_arrow

    clean = pa.array(["€5", "veh_a", "Zoë", "a b", "x", None], pa.string())
    padded = pa.array(
        ["€5", f"{space}veh_a", f"Zoë{space}", f"{space}é{space}", space * 2, None], pa.string()
    )
    table = clean_arrow(pa.table({"clean": clean, "padded": padded}))
    assert table.column("clean").chunk(0).buffers()[2].address == clean.buffers()[2].address
    assert table.column("padded").to_pylist() == ["€5", "veh_a", "Zoë", "é", None, None]
