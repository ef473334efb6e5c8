"""Stage ⑧: the reconciliation workbook, the rejected-file reports, and a night's reports published.

Other packages import from here, never from a module of this package:

- `write_workbook` — write reconciliation.xlsx from its sheets' Parquet files
- `SheetSource` — one sheet of the workbook: its Parquet file and layout
- `screen_table` — a workbook tab's first rows and Total as text, for a page
- `ScreenTable` — what `screen_table` returns: headers, kinds, rows, total rows
- `WorkbookSummary` — what the Summary sheet shows
- `TieOutLine` — one line of the Summary's distribution tie-out
- `RejectedLine` — a file rejected that night, as the Summary lists it
- `export_query` — stream a query's rows into a typed Parquet file
- `write_error_report` — a rejected file's `<name>.errors.csv` and `.xlsx`
- `KIND_WORDS` — an exception kind in the workbook's words
- `MATCH_WORDS` — a sheet-vs-service match in plain words
- `OBJECT_WORDS` — a service object in plain words
- `publish_night` — copy a night's reports to FUNDPIPE_REPORTS_URL
- `Published` — what one organization's night published
- `NIGHT` — the night's facts' file name, beside its reports
- `join` — a published folder's path or URL and parts below it
- `read_json` — a published JSON file (`night.json`, `latest.json`), or None
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fundpipe.faces import lazy_face

if TYPE_CHECKING:
    from fundpipe.reports.headers import KIND_WORDS, MATCH_WORDS, OBJECT_WORDS
    from fundpipe.reports.publish import NIGHT, Published, join, publish_night, read_json
    from fundpipe.reports.rejected import write_error_report
    from fundpipe.reports.screen import ScreenTable, screen_table
    from fundpipe.reports.summarysheet import RejectedLine
    from fundpipe.reports.workbook import (
        SheetSource,
        TieOutLine,
        WorkbookSummary,
        export_query,
        write_workbook,
    )

__all__ = [
    "KIND_WORDS",
    "MATCH_WORDS",
    "NIGHT",
    "OBJECT_WORDS",
    "Published",
    "RejectedLine",
    "ScreenTable",
    "SheetSource",
    "TieOutLine",
    "WorkbookSummary",
    "export_query",
    "join",
    "publish_night",
    "read_json",
    "screen_table",
    "write_error_report",
    "write_workbook",
]

#: Where each public name lives: its module is imported when the name is first used.
_HOMES = {
    "write_workbook": "workbook",
    "SheetSource": "workbook",
    "WorkbookSummary": "workbook",
    "TieOutLine": "workbook",
    "RejectedLine": "summarysheet",
    "export_query": "workbook",
    "write_error_report": "rejected",
    "screen_table": "screen",
    "ScreenTable": "screen",
    "KIND_WORDS": "headers",
    "MATCH_WORDS": "headers",
    "OBJECT_WORDS": "headers",
    "publish_night": "publish",
    "Published": "publish",
    "NIGHT": "publish",
    "join": "publish",
    "read_json": "publish",
}

__getattr__ = lazy_face(__name__, _HOMES)
