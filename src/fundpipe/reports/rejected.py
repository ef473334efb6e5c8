"""Write a rejected file's error report as CSV and XLSX, safe to open in a spreadsheet.

Every text cell goes through the one formula-neutraliser (``fundpipe.reports.cells``), so an
analyst's ``=HYPERLINK(...)`` in a sheet cannot run when the report is opened. Values are already masked
(`Issue.value` never holds a full account number).
"""

from __future__ import annotations

import csv
from pathlib import Path

import xlsxwriter

from fundpipe.reports.cells import neutralise
from fundpipe.validate.issues import FileReport, Issue

COLUMNS = ("severity", "file", "sheet", "row", "column", "value", "check", "reason")
_ROW = COLUMNS.index("row")


def _rows(report: FileReport) -> list[list[str]]:
    def row(severity: str, issue: Issue) -> list[str]:
        """One report line, every cell neutralised."""
        values = [
            severity,
            report.file,  # where the sheet is now (the issue may name it where it was read)
            issue.sheet,
            issue.row,
            issue.column,
            issue.value,
            issue.check,
            issue.reason,
        ]
        return [neutralise(v) for v in values]

    return [row("error", i) for i in report.errors] + [row("warning", i) for i in report.warnings]


def write_error_report(report: FileReport, directory: Path) -> list[Path]:
    """Write ``<file name>.errors.csv`` and ``<file name>.errors.xlsx`` into ``directory``.

    Returns the paths written. Row numbers are Excel's (header = row 1), written as numbers in
    the workbook; the file column is ``report.file`` — where the sheet is now.
    """
    directory.mkdir(parents=True, exist_ok=True)
    stem = Path(report.file).name
    csv_path = directory / f"{stem}.errors.csv"
    xlsx_path = directory / f"{stem}.errors.xlsx"
    rows = _rows(report)
    with open(csv_path, "w", newline="", encoding="utf-8-sig") as fh:
        writer = csv.writer(fh)
        writer.writerow(COLUMNS)
        writer.writerows(rows)
    workbook = xlsxwriter.Workbook(
        str(xlsx_path),
        {"strings_to_formulas": False, "strings_to_urls": False, "strings_to_numbers": False},
    )
    try:
        sheet = workbook.add_worksheet("errors")
        bold = workbook.add_format({"bold": True})
        sheet.write_row(0, 0, COLUMNS, bold)
        issues = [*report.errors, *report.warnings]
        for r, values in enumerate(rows, start=1):
            for c, value in enumerate(values):
                if c == _ROW and issues[r - 1].row is not None:
                    sheet.write_number(r, c, int(issues[r - 1].row or 0))  # a number, not text
                else:
                    sheet.write_string(r, c, value)
        sheet.freeze_panes(1, 0)
        sheet.autofilter(0, 0, max(len(rows), 1), len(COLUMNS) - 1)
        sheet.set_column(0, 0, 9)
        sheet.set_column(1, 2, 24)
        sheet.set_column(3, 3, 6)
        sheet.set_column(4, 6, 22)
        sheet.set_column(7, 7, 80)
    finally:
        workbook.close()
    return [csv_path, xlsx_path]
