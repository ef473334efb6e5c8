"""The error report next to a quarantined file: CSV and XLSX, masked, formula-safe, one line per
problem with its rows and the column's letter, printable."""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from pathlib import Path

import openpyxl
import xlsxwriter

from fundpipe.reports.rejected import COLUMNS, write_error_report
from fundpipe.validate.files import validate_files
from fundpipe.validate.issues import FileReport, Issue, compact_rows
from worlds.sheets import HEADER, clean_rows


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8-sig", newline="") as fh:
        return list(csv.DictReader(fh))


def read_xlsx(path: Path) -> list[dict[str, object]]:
    sheet = openpyxl.load_workbook(path)["errors"]
    rows = [[c.value for c in row] for row in sheet.iter_rows()]
    return [dict(zip(rows[0], r, strict=True)) for r in rows[1:]]


def test_error_report_is_written_as_csv_and_xlsx_without_live_formulas(tmp_path: Path) -> None:
    report = FileReport(file=str(tmp_path / "q4.csv"))
    report.add_error(
        Issue(
            report.file,
            None,
            3,
            "Amount ($)",
            '=HYPERLINK("http://x")',
            "amount_not_a_number",
            "the amount is not a number",
        )
    )
    report.add_error(
        Issue(
            report.file, "Roster", 4, "Account Number", "****6789", "account_number_format", "bad"
        )
    )
    report.warnings.append(Issue(report.file, None, 1, "+notes", None, "unknown_column", "ignored"))
    paths = write_error_report(report, tmp_path / "rejected")
    assert [p.name for p in paths] == ["q4.csv.errors.csv", "q4.csv.errors.xlsx"]

    with open(paths[0], encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == [
        "severity", "sheet", "row", "rows", "count", "column", "letter", "value", "check",
        "reason", "file",
    ]  # fmt: skip
    line = dict(zip(rows[0], rows[1], strict=True))
    assert [line["row"], line["column"], line["value"]] == [
        "3",
        "Amount ($)",
        '\'=HYPERLINK("http://x")',
    ]
    assert rows[3][0] == "warning"
    assert rows[3][rows[0].index("column")] == "'+notes"

    workbook = openpyxl.load_workbook(paths[1])
    sheet = workbook["errors"]
    values = read_xlsx(paths[1])
    assert values[0]["value"] == '\'=HYPERLINK("http://x")'
    assert all(c.data_type != "f" for row in sheet.iter_rows() for c in row)
    assert values[1]["value"] == "****6789"


def test_both_report_writers_use_the_one_formula_neutraliser() -> None:
    from fundpipe.reports import cells, rejected, workbook

    assert rejected.neutralise is workbook.neutralise is cells.neutralise
    assert cells.neutralise(None) == ""
    assert cells.neutralise("=1+1") == "'=1+1"


def test_error_report_names_where_the_file_is_now_and_its_rows_are_numbers(tmp_path: Path) -> None:
    # issue 13: the file column named data/processing/… after the file moved, and the row was
    # text in errors.xlsx
    moved = tmp_path / "rejected" / "q4.csv"
    report = FileReport(file=str(moved))
    report.add_error(
        Issue("data/processing/q4.csv", None, 7, "Amount ($)", "abc", "amount_not_a_number", "x")
    )
    report.add_error(Issue("data/processing/q4.csv", None, None, None, None, "file", "y"))
    csv_path, xlsx_path = write_error_report(report, moved.parent)
    with open(csv_path, encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.reader(fh))
    assert {r[rows[0].index("file")] for r in rows[1:]} == {str(moved)}
    sheet = openpyxl.load_workbook(xlsx_path)["errors"]
    row, where = COLUMNS.index("row") + 1, COLUMNS.index("file") + 1
    assert sheet.cell(2, row).value == 7
    assert sheet.cell(2, row).data_type == "n"
    assert sheet.cell(3, row).value in (None, "")
    assert sheet.cell(2, where).value == str(moved)
    # and the printed page says so on every page, with when it was written, year first
    assert str(moved) in sheet.oddHeader.left.text
    # (the module's clock starts at tests/conftest.py's WORLD_START, 2026-11-28 09:00 UTC)
    assert re.fullmatch(r"written 2026-11-28 09:\d{2} UTC", sheet.oddHeader.right.text)


def test_rows_are_listed_as_compact_runs() -> None:
    assert compact_rows([9, 2, 3, 4, 5, 6, 7]) == "2–7, 9"
    assert compact_rows([4]) == "4"
    assert compact_rows([2, 4, 6, 8], limit=2) == "2, 4, … and 2 more rows"
    assert compact_rows([]) == ""


def test_one_error_over_six_rows_is_one_line_listing_its_rows(
    tmp_path: Path, write_csv: Callable[..., Path]
) -> None:
    rows = [
        ["Q4 Income", "veh_demo1", "Q4-D1", "2026-12-15 09:00", "America/New_York", f"ent_d{i}",
         "100.00"]
        for i in range(9)
    ]  # fmt: skip
    for i in (0, 1, 2, 3, 4, 6):  # Excel rows 2-6 and 8
        rows[i][3] = "2026-02-30 09:00"
    rows[8][6] = "ten"  # one other problem, its own line
    [report] = validate_files([write_csv(rows, name="q4.csv")])
    assert len(report.errors) == 7  # one issue per cell for scripts (validate --format json)
    csv_path, xlsx_path = write_error_report(report, tmp_path / "rejected")

    lines = read_csv(csv_path)
    assert len(lines) == 2
    date = next(line for line in lines if line["check"] == "datetime_invalid")
    assert (date["rows"], date["count"], date["row"]) == ("2–6, 8", "6", "2")
    assert (date["column"], date["letter"], date["value"]) == (
        "Payment Date",
        "D",
        "2026-02-30 09:00",
    )
    amount = next(line for line in lines if line["check"] != "datetime_invalid")
    assert (amount["rows"], amount["count"], amount["letter"]) == ("10", "1", "G")

    book = read_xlsx(xlsx_path)
    assert [(b["rows"], b["count"], b["letter"]) for b in book] == [
        ("2–6, 8", 6, "D"),
        ("10", 1, "G"),
    ]


def test_the_letter_is_the_columns_own_in_a_csv_in_an_unusual_order(
    tmp_path: Path, write_csv: Callable[..., Path]
) -> None:
    order = [6, 5, 0, 1, 2, 3, 4]  # amount first, entity second, …
    rows = [[row[i] for i in order] for row in clean_rows()]
    rows[1][0] = "ten"
    [report] = validate_files([write_csv(rows, header=[HEADER[i] for i in order], name="odd.csv")])
    [line] = read_csv(write_error_report(report, tmp_path)[0])
    assert (line["row"], line["column"], line["letter"], line["value"]) == (
        "3",
        "Amount ($)",
        "A",
        "ten",
    )


def test_an_xlsx_reports_the_real_letters_beyond_z(tmp_path: Path) -> None:
    # The sheet starts in column B and carries 26 columns of notes before the amount: the
    # amount is in AH, a note column (ignored, a warning) in C.
    path = tmp_path / "wide.xlsx"
    book = xlsxwriter.Workbook(str(path))
    sheet = book.add_worksheet("Distributions")
    header = [*HEADER[:6], *[f"Note {i}" for i in range(26)], HEADER[6]]
    sheet.write_row(0, 1, header)
    for r, row in enumerate(clean_rows(), start=1):
        sheet.write_row(r, 1, [*row[:6], *["x"] * 26, row[6]])
    sheet.write_string(2, 1 + len(header) - 1, "ten")
    book.close()

    [report] = validate_files([path])
    [error] = report.errors
    assert (error.row, error.column, error.letter) == (3, "Amount ($)", "AH")
    lines = read_xlsx(write_error_report(report, tmp_path / "rejected")[1])
    assert [(line["column"], line["letter"]) for line in lines if line["severity"] == "error"] == [
        ("Amount ($)", "AH")
    ]
    notes = {line["column"]: line["letter"] for line in lines if line["check"] == "unknown_column"}
    assert notes["Note 0"] == "H"
    assert notes["Note 25"] == "AG"


def test_the_xlsx_error_report_prints_landscape_one_page_wide(tmp_path: Path) -> None:
    report = FileReport(file=str(tmp_path / "rejected" / "q4.csv"))
    for row in range(2, 400):  # enough lines for several pages
        report.add_error(
            Issue(report.file, None, row, "Amount ($)", f"x{row}", "amount_not_a_number",
                  "the amount is not a number " * 4, "G")
        )  # fmt: skip
    _, xlsx_path = write_error_report(report, tmp_path / "rejected")
    sheet = openpyxl.load_workbook(xlsx_path)["errors"]
    assert sheet.page_setup.orientation == "landscape"
    assert sheet.sheet_properties.pageSetUpPr.fitToPage
    # one page wide (an absent fitToWidth is OOXML's default, 1), as many pages tall as needed
    assert (sheet.page_setup.fitToWidth or 1, sheet.page_setup.fitToHeight) == (1, 0)
    assert sheet.print_title_rows == "$1:$1"  # the header row on every page
    assert "Page &P of &N" in sheet.oddFooter.center.text
    letter = {name: openpyxl.utils.get_column_letter(i + 1) for i, name in enumerate(COLUMNS)}
    reason = sheet[f"{letter['reason']}2"]
    assert reason.alignment.wrap_text
    assert sheet[f"{letter['rows']}2"].alignment.wrap_text
    widths = {name: sheet.column_dimensions[letter[name]].width for name in COLUMNS}
    assert 40 <= widths["reason"] <= 80  # wide enough to read, not a page of its own
    assert widths["reason"] == max(widths.values())
    assert sum(widths.values()) < 250  # one page wide stays legible
    assert sheet.freeze_panes == "A2"
    # a wrapped reason gets the height it needs (spreadsheets do not re-lay rows on opening)
    assert (sheet.row_dimensions[2].height or 15) >= 30
