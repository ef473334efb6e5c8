"""Report writers: typed Parquet per view and the finance workbook `reconciliation.xlsx`.

Both writers stream: Parquet is written by DuckDB straight from the view (`export_query`), and
the workbook is read from the Parquet files batch by batch, so neither holds a whole view in
Python memory and the workbook never needs the warehouse open. xlsxwriter (`constant_memory`)
writes the Summary sheet, the chart, every header, width, frozen pane, filter and format; the data
rows under the headers are built a column at a time with Arrow (`fundpipe.reports.sheetxml`) and
spliced into xlsxwriter's sheets after it closes the file — per-cell xlsxwriter calls took 22 s
of the 25 s reconcile at 300,000 payments (issue 14; `benchmarks/reconcile.py` compares them).

Column conventions (from the views): `*_cents` columns are int64 cents. Parquet keeps them and
adds a `*_dollars` decimal(18,2) column right after each; timestamps stay timezone-aware (UTC).
The workbook shows money as dollars with a currency format, instants as Excel date-times in UTC
and dates as dates, under headers in words (`fundpipe.reports.headers`: "Amount (USD)",
"Disbursed at (UTC)").

Formula injection: every text cell is an inline string (there is no formula element in the
data rows at all); in addition a text beginning with `=`, `+`, `-`, `@`, tab or carriage return is
prefixed with an apostrophe (`'=1+1` is shown as `'=1+1`), so that copying the cell into a CSV or
another tool cannot revive it as a formula either (OWASP's CSV-injection advice). The untouched
value is in the Parquet files.

A sheet longer than Excel's 1,048,576 rows continues in `Name (2)`, `Name (3)`, … with the header
repeated; nothing is truncated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import xlsxwriter
from xlsxwriter.format import Format
from xlsxwriter.utility import xl_col_to_name
from xlsxwriter.worksheet import Worksheet

from fundpipe.reports import summarysheet
from fundpipe.reports.cells import INJECTION_PREFIXES, neutralise
from fundpipe.reports.headers import header_for
from fundpipe.reports.layout import (
    MIN_PRINT_SCALE,
    PRINTABLE_WIDTH_PT,
    Formats,
    PageHeader,
    column_points,
    set_page,
)
from fundpipe.reports.sheetrows import TOTAL_FLAG, SheetRows, totals_batch
from fundpipe.reports.sheetxml import RowSource, XmlColumn, splice_rows
from fundpipe.reports.summarysheet import TieOutLine, WorkbookSummary
from fundpipe.warehouse import writing

__all__ = [
    "EXCEL_MAX_ROWS",
    "INJECTION_PREFIXES",
    "SheetSource",
    "TieOutLine",
    "WorkbookSummary",
    "export_query",
    "neutralise",
    "write_workbook",
]

#: Rows in one Excel worksheet, the header included.
EXCEL_MAX_ROWS = 1_048_576


def export_query(con: duckdb.DuckDBPyConnection, query: str, path: Path) -> int:
    """Write `query`'s rows to a zstd Parquet file at `path` with DuckDB; return the row count.

    Each integer `*_cents` column is followed by `*_dollars` DECIMAL(18,2) (exact: cents × 0.01),
    TIMESTAMPTZ stays zoned (UTC). DuckDB writes in parallel without passing rows through Python.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = con.sql(f"DESCRIBE {query}").fetchall()
    select: list[str] = []
    for name, type_, *_ in columns:
        quoted = _quote(str(name))
        if str(name).endswith("_cents") and str(type_) in _INTEGER_TYPES:
            dollars = _quote(str(name)[: -len("_cents")] + "_dollars")
            select.append(f"CAST({quoted} AS BIGINT) AS {quoted}")
            select.append(
                f"CAST(CAST({quoted} AS DECIMAL(18, 0)) * 0.01 AS DECIMAL(18, 2)) AS {dollars}"
            )
        else:
            select.append(quoted)
    target = str(path).replace("'", "''")
    row = con.execute(
        f"COPY (SELECT {', '.join(select)} FROM ({query})) TO '{target}' "
        "(FORMAT parquet, COMPRESSION zstd)"
    ).fetchone()
    return int(row[0]) if row else 0


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


_INTEGER_TYPES = {"BIGINT", "INTEGER", "SMALLINT", "TINYINT", "HUGEINT", "UBIGINT", "UINTEGER"}


@dataclass(frozen=True, slots=True)
class SheetSource:
    """A workbook sheet: its tab name and the Parquet file whose rows it shows.

    `first_columns` are shown first, in that order, and `last_columns` last (names the file does
    not have are left out); `hidden_columns` not at all. `words` maps a column's machine values
    to the plain words shown instead (`{"kind": {"amount_mismatch": "Amount differs ..."}}`);
    the Parquet file keeps the machine value. `wrap` gives text columns a fixed width and wraps
    their text. `details_after` (a count): the columns after the first that many are grouped
    and collapsed — on screen behind the outline's "+" button, and left off the printed page so
    that what prints one page wide stays legible. `total_rows` names a boolean column (hidden
    too) marking total rows: they print bold, their figures under a rule. `totals`: a last row
    "Total" is added, the sum of every money column and of every count of payments, items or
    distributions, so the sheet foots on paper (the Parquet file has no such row). `empty` is
    the line printed under the header of a sheet with no rows (no Total then), so no page prints
    a header with nothing under it.
    """

    name: str
    parquet: Path
    hidden_columns: tuple[str, ...] = ()
    first_columns: tuple[str, ...] = ()
    last_columns: tuple[str, ...] = ()
    words: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    wrap: Mapping[str, float] = field(default_factory=dict)
    details_after: int | None = None
    total_rows: str | None = None
    totals: bool = False
    empty: str = "None as of this date."

    def shown(self, schema: pa.Schema) -> list[str]:
        """The columns of `schema` this sheet shows, in the order it shows them."""
        hidden = (*self.hidden_columns, *([self.total_rows] if self.total_rows else []))
        names = _shown_names(schema, hidden)
        first = [n for n in self.first_columns if n in names]
        last = [n for n in self.last_columns if n in names and n not in first]
        middle = [n for n in names if n not in first and n not in last]
        return first + middle + last


@dataclass(slots=True)
class _Column:
    header: str
    kind: str  # text | money | instant | date | number | bool
    width: float
    fmt: Format
    detail: bool = False


def _column_kind(f: pa.Field) -> str:
    t = f.type
    if f.name.endswith("_cents") and pa.types.is_integer(t):
        return "money"
    if pa.types.is_timestamp(t):
        return "instant"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return "number"
    return "text"


def _shown_names(schema: pa.Schema, hidden: Sequence[str]) -> list[str]:
    # The workbook shows money once, as formatted dollars from the cents column.
    return [
        f.name
        for f in schema
        if f.name not in hidden
        and not (f.name.endswith("_dollars") and pa.types.is_decimal(f.type))
    ]


def _plan_columns(
    pf: pq.ParquetFile, formats: Formats, source: SheetSource
) -> tuple[list[str], list[_Column]]:
    schema = pf.schema_arrow
    names = source.shown(schema)
    sample = pf.read_row_group(0, columns=names).slice(0, 200) if pf.num_row_groups else None
    columns: list[_Column] = []
    for position, name in enumerate(names):
        f = schema.field(name)
        kind = _column_kind(f)
        header = header_for(name, kind)
        width = {"money": 16.0, "instant": 20.0, "date": 12.0, "bool": 8.0, "number": 10.0}.get(
            kind, 12.0
        )
        if kind == "text" and sample is not None and sample.num_rows:
            lengths = pc.utf8_length(sample.column(name).cast(pa.string()))
            longest = pc.max(lengths).as_py() or 0
            width = float(min(max(longest + 2, 10), 60))
        # headers wrap: the column needs room for its longest word, not the whole header
        width = max(width, max(len(word) for word in header.split()) + 3.0)
        fmt = {
            "money": formats.money,
            "instant": formats.instant,
            "date": formats.date,
            "number": formats.integer,
            "bool": formats.boolean,
        }.get(kind, formats.plain)
        if kind == "text" and name in source.wrap:
            width, fmt = source.wrap[name], formats.wrap
        detail = source.details_after is not None and position >= source.details_after
        columns.append(_Column(header, kind, width, fmt, detail))
    return names, columns


def _naming(columns: Sequence[_Column]) -> int:
    """How many leading columns name a row (its text columns before the first figure, within a
    third of the page): a sheet printed across pages repeats them at the left of each."""
    kept, points = 0, 0.0
    for column in columns:
        points += column_points(column.width)
        if column.kind != "text" or points > PRINTABLE_WIDTH_PT / 3:
            break
        kept += 1
    return kept


def _fitting(columns: Sequence[_Column]) -> int:
    """How many leading columns (at least one) fit one printed page at the smallest scale."""
    room = PRINTABLE_WIDTH_PT * 100 / MIN_PRINT_SCALE
    fitted, points = 0, 0.0
    for column in columns:
        points += column_points(column.width)
        if points > room:
            break
        fitted += 1
    return max(fitted, 1)


def _start_sheet(
    ws: Worksheet,
    name: str,
    columns: Sequence[_Column],
    formats: Formats,
    data_rows: int,
    page: PageHeader,
) -> None:
    printed = [c for c in columns if not c.detail]
    set_page(ws, name, page, widths=[c.width for c in printed], keep_left=_naming(printed))
    for i, column in enumerate(columns):
        if column.detail:
            ws.set_column(i, i, column.width, None, {"level": 1, "hidden": True})
        else:
            ws.set_column(i, i, column.width)
    if any(column.detail for column in columns):
        ws.set_column(len(columns), len(columns), None, None, {"collapsed": True})
    header_lines = max(
        (-(-len(c.header) // max(int(c.width) - 2, 1)) for c in columns if not c.detail), default=1
    )
    if header_lines > 1:
        ws.set_row(0, 15 * header_lines)
    ws.freeze_panes(1, 0)
    ws.autofilter(0, 0, max(data_rows, 1), max(len(columns) - 1, 0))
    for i, column in enumerate(columns):
        ws.write_string(0, i, column.header, formats.header)


def _write_source(
    workbook: xlsxwriter.Workbook,
    source: SheetSource,
    formats: Formats,
    max_rows: int,
    page: PageHeader,
) -> tuple[list[str], dict[str, tuple[RowSource, str]]]:
    """Add one Parquet source's sheets (headers only) to `workbook`; return their names and,
    per sheet's zip member, what `splice_rows` fills in after the workbook is closed."""
    pf = pq.ParquetFile(source.parquet)
    names, columns = _plan_columns(pf, formats, source)
    total = pf.metadata.num_rows
    per_sheet = max_rows - 1
    sheet_count = max(1, -(-total // per_sheet))
    sheet_names = [
        source.name if i == 0 else f"{source.name} ({i + 1})" for i in range(sheet_count)
    ]
    # The style index xlsxwriter gives each format (assigned on first use, as a cell write does);
    # tests/reports read the number formats back, so a change there cannot pass unnoticed.
    xml_columns = [
        XmlColumn(
            xl_col_to_name(i),
            c.kind,
            c.fmt._get_xf_index(),
            int(c.width) if c.fmt is formats.wrap else None,
            formats.total_of(c.kind)._get_xf_index()
            if source.total_rows or source.totals
            else None,
        )
        for i, c in enumerate(columns)
    ]
    last = xl_col_to_name(max(len(columns) - 1, 0))
    flag = source.total_rows if source.total_rows in pf.schema_arrow.names else None
    empty = total == 0
    appended = (
        totals_batch(pf, names, [c.kind for c in columns], flag)
        if source.totals and not empty
        else None
    )
    if appended is not None:
        total += 1
        sheet_count = max(1, -(-total // per_sheet))
        sheet_names = [
            source.name if i == 0 else f"{source.name} ({i + 1})" for i in range(sheet_count)
        ]
        flag = flag or TOTAL_FLAG
    rows = SheetRows(pf, names, per_sheet, source.words, flag, appended)
    fills: dict[str, tuple[RowSource, str]] = {}
    for i, name in enumerate(sheet_names):
        ws = workbook.add_worksheet(name)
        data_rows = min(per_sheet, total - i * per_sheet)
        # the filter (and so a sort) covers the data rows, never the Total under them
        filtered = data_rows - (1 if appended is not None and i == sheet_count - 1 else 0)
        _start_sheet(ws, name, columns, formats, filtered, page)
        if empty:
            ws.write_string(1, 0, source.empty, formats.plain)
            # a header and one line print on one page: the columns that fit it, legibly
            ws.print_area(0, 0, 1, _fitting(columns) - 1)
        member = f"xl/worksheets/sheet{len(workbook.worksheets())}.xml"
        fills[member] = (
            partial(rows.sheet, i, xml_columns),
            f"A1:{last}{max(data_rows, 1 if empty else 0) + 1}",
        )
    return sheet_names, fills


def write_workbook(
    path: Path,
    summary: WorkbookSummary,
    sources: Iterable[SheetSource],
    *,
    max_rows: int = EXCEL_MAX_ROWS,
) -> list[str]:
    """Write `reconciliation.xlsx`: Summary first, then each source; return the sheet names."""
    if max_rows < 2:
        raise ValueError("max_rows must leave room for a header and a row")
    with writing(path, "the reconciliation workbook"):  # a full disk: exit 6, naming it
        return _write_workbook(path, summary, sources, max_rows=max_rows)


def _write_workbook(
    path: Path, summary: WorkbookSummary, sources: Iterable[SheetSource], *, max_rows: int
) -> list[str]:
    path.parent.mkdir(parents=True, exist_ok=True)
    sources = list(sources)
    # xlsxwriter writes the headers-only workbook beside `path`; `path` itself only ever holds
    # a whole workbook, rows and all.
    headers = path.with_name(path.name + ".headers")
    workbook = xlsxwriter.Workbook(
        str(headers), {"constant_memory": True, "tmpdir": str(path.parent)}
    )
    try:
        try:
            formats = Formats(workbook)
            summary_ws = workbook.add_worksheet("Summary")
            names = ["Summary"]
            chart: summarysheet.ChartData | None = None
            for source in sources:
                if source.name == summary.chart_sheet:
                    pf = pq.ParquetFile(source.parquet)
                    chart = summarysheet.chart_data(
                        pf, source.shown(pf.schema_arrow), summary.chart_columns
                    )
            summarysheet.write(workbook, summary_ws, summary, formats, chart)
            fills: dict[str, tuple[RowSource, str]] = {}
            for source in sources:
                sheet_names, source_fills = _write_source(
                    workbook, source, formats, max_rows, summary.page
                )
                names.extend(sheet_names)
                fills.update(source_fills)
        finally:
            workbook.close()
        splice_rows(headers, path, fills)
    finally:
        headers.unlink(missing_ok=True)
    return names
