"""The error report next to a quarantined file: CSV and XLSX, masked, formula-safe."""

from __future__ import annotations

import csv
from pathlib import Path

import openpyxl

from fundpipe.reports.rejected import write_error_report
from fundpipe.validate.issues import FileReport, Issue


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
    assert rows[0] == ["severity", "file", "sheet", "row", "column", "value", "check", "reason"]
    assert rows[1][3:6] == ["3", "Amount ($)", '\'=HYPERLINK("http://x")']
    assert rows[3][0] == "warning"
    assert rows[3][4] == "'+notes"

    workbook = openpyxl.load_workbook(paths[1])
    sheet = workbook["errors"]
    values = [[c.value for c in row] for row in sheet.iter_rows()]
    assert values[1][5] == '\'=HYPERLINK("http://x")'
    assert all(c.data_type != "f" for row in sheet.iter_rows() for c in row)
    assert values[2][5] == "****6789"


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
    assert {r[1] for r in rows[1:]} == {str(moved)}
    sheet = openpyxl.load_workbook(xlsx_path)["errors"]
    assert sheet["D2"].value == 7
    assert sheet["D2"].data_type == "n"
    assert sheet["D3"].value in (None, "")
    assert sheet["B2"].value == str(moved)
