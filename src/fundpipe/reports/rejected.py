"""Write a rejected file's error report as CSV and XLSX, safe to open in a spreadsheet.

One line per problem: the same error over many rows (a date typed wrong down a column) is said
once with its rows listed compactly (``2–7, 9``), its first row (a number, to sort on) and how
many rows it covers. Each line names the column as the analyst wrote it and its letter in Excel
(for a CSV, the letter it has when opened there). The file column says where the sheet is now
(``rejected/…`` after a run moved it; the last column, the same on every line, for scripts
joining reports), and so does the XLSX's page header.

The XLSX prints: landscape, one page wide, the header row repeated on every page, the reason
and the row list wrapped, "page x of y" in the footer.

Every text cell goes through the one formula-neutraliser (``fundpipe.reports.cells``), so an
analyst's ``=HYPERLINK(...)`` in a sheet cannot run when the report is opened. Values are already
masked (`Issue.value` never holds a full account number).
"""

from __future__ import annotations

import csv
from datetime import UTC, datetime
from pathlib import Path

import xlsxwriter

from fundpipe.reports.cells import neutralise
from fundpipe.validate import FileReport, IssueGroup, group_issues
from fundpipe.warehouse import writing

COLUMNS = (
    "severity",
    "sheet",
    "row",
    "rows",
    "count",
    "column",
    "letter",
    "value",
    "check",
    "reason",
    "file",
)
#: columns written as numbers in the XLSX
_NUMBERS = {COLUMNS.index("row"), COLUMNS.index("count")}
#: column widths in the XLSX (characters), and which ones wrap
_WIDTHS = {
    "severity": 8,
    "sheet": 12,
    "row": 6,
    "rows": 16,
    "count": 6,
    "column": 18,
    "letter": 6,
    "value": 20,
    "check": 20,
    "reason": 60,
    "file": 40,
}
_WRAPPED = {"file", "sheet", "rows", "column", "value", "check", "reason"}


def _line(report: FileReport, group: IssueGroup) -> list[str | int | None]:
    """One report line; text cells neutralised, numbers kept numbers."""
    issue = group.first
    return [
        neutralise(group.severity),
        neutralise(issue.sheet),
        issue.row,
        neutralise(group.rows_text()),
        group.count if group.rows else None,
        neutralise(issue.column),
        neutralise(issue.letter),
        neutralise(issue.value),
        neutralise(issue.check),
        neutralise(issue.reason),
        neutralise(report.file),  # where the sheet is now (the issue may name it where it was read)
    ]


def write_error_report(report: FileReport, directory: Path) -> list[Path]:
    """Write ``<file name>.errors.csv`` and ``<file name>.errors.xlsx`` into ``directory``.

    Returns the paths written. One line per distinct problem with its rows (Excel's numbering,
    header = row 1) listed; the first row and the count are numbers in the workbook; the file
    column is ``report.file`` — where the sheet is now.
    """
    stem = Path(report.file).name
    csv_path = directory / f"{stem}.errors.csv"
    xlsx_path = directory / f"{stem}.errors.xlsx"
    lines = [_line(report, g) for g in group_issues(report)]
    with writing(csv_path, "an error report"):  # a full disk: exit 6, naming the file
        directory.mkdir(parents=True, exist_ok=True)
        with open(csv_path, "w", newline="", encoding="utf-8-sig") as fh:
            writer = csv.writer(fh)
            writer.writerow(COLUMNS)
            writer.writerows([["" if v is None else v for v in line] for line in lines])
    with writing(xlsx_path, "an error report"):
        _write_xlsx(report, lines, xlsx_path)
    return [csv_path, xlsx_path]


def _header_text(text: str) -> str:
    """Text for an Excel page header: ``&`` escaped, within Excel's 255-character limit."""
    text = text.replace("&", "&&")
    return text if len(text) <= 200 else "…" + text[-199:]


def _write_xlsx(report: FileReport, lines: list[list[str | int | None]], path: Path) -> None:
    workbook = xlsxwriter.Workbook(
        str(path),
        {"strings_to_formulas": False, "strings_to_urls": False, "strings_to_numbers": False},
    )
    try:
        sheet = workbook.add_worksheet("errors")
        head = workbook.add_format({"bold": True, "bottom": 1, "text_wrap": True, "valign": "top"})
        plain = workbook.add_format({"valign": "top"})
        wrapped = workbook.add_format({"valign": "top", "text_wrap": True})
        centred = workbook.add_format({"valign": "top", "align": "center"})
        sheet.write_row(0, 0, COLUMNS, head)
        for r, line in enumerate(lines, start=1):
            # Spreadsheets do not grow a row for wrapped text they did not lay out themselves:
            # the row is as tall as its longest wrapped cell needs.
            tallest = max(
                -(-len(str(value or "")) // _WIDTHS[COLUMNS[c]])
                for c, value in enumerate(line)
                if COLUMNS[c] in _WRAPPED
            )
            sheet.set_row(r, 15 * max(tallest, 1))
            for c, value in enumerate(line):
                if c in _NUMBERS:
                    if value is not None:
                        sheet.write_number(r, c, int(value), centred)  # a number, not text
                else:
                    fmt = (
                        wrapped
                        if COLUMNS[c] in _WRAPPED
                        else centred
                        if COLUMNS[c] == "letter"
                        else plain
                    )
                    sheet.write_string(r, c, str(value or ""), fmt)
        for c, name in enumerate(COLUMNS):
            sheet.set_column(c, c, _WIDTHS[name])
        sheet.freeze_panes(1, 0)
        sheet.autofilter(0, 0, max(len(lines), 1), len(COLUMNS) - 1)
        # Printing: landscape, one page wide (as many pages tall as it takes), the header row
        # on every page, where the file is in the page header, page x of y in the footer.
        sheet.set_landscape()
        sheet.fit_to_pages(1, 0)
        sheet.repeat_rows(0)
        sheet.set_margins(left=0.4, right=0.4, top=0.6, bottom=0.6)
        # the date as a person writes it, year first (Excel's &D prints the reader's locale:
        # 12/05/2026 in New York, 05/12/2026 in London)
        written = f"written {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
        sheet.set_header(f"&L&B{_header_text('Errors in ' + report.file)}&R{written}")
        sheet.set_footer("&CPage &P of &N")
    finally:
        workbook.close()
