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

from collections.abc import Iterable, Iterator, Sequence
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

from fundpipe.reports.cells import INJECTION_PREFIXES, neutralise
from fundpipe.reports.headers import header_for
from fundpipe.reports.sheetxml import RowSource, XmlColumn, rows_xml, splice_rows

__all__ = [
    "EXCEL_MAX_ROWS",
    "INJECTION_PREFIXES",
    "SheetSource",
    "WorkbookSummary",
    "export_query",
    "neutralise",
    "write_workbook",
]

#: Rows in one Excel worksheet, the header included.
EXCEL_MAX_ROWS = 1_048_576
_CURRENCY = '"$"#,##0.00;[Red]-"$"#,##0.00'
_CHART_VEHICLES = 50


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
    """A workbook sheet: its tab name and the Parquet file whose rows it shows."""

    name: str
    parquet: Path
    hidden_columns: tuple[str, ...] = ()


@dataclass(slots=True)
class WorkbookSummary:
    """What the Summary sheet shows besides the chart."""

    run_facts: Sequence[tuple[str, str]] = ()
    totals_cents: Sequence[tuple[str, int]] = ()
    counts: Sequence[tuple[str, int]] = ()
    exception_counts: Sequence[tuple[str, int]] = ()
    chart_sheet: str | None = "Funding"
    chart_columns: tuple[str, str, str] = ("vehicle_name", "available_cents", "obligations_cents")
    notes: list[str] = field(default_factory=list)


class _Formats:
    def __init__(self, workbook: xlsxwriter.Workbook) -> None:
        self.header = workbook.add_format({"bold": True, "bg_color": "#DDEBF7", "border": 1})
        self.title = workbook.add_format({"bold": True, "font_size": 14})
        self.bold = workbook.add_format({"bold": True})
        self.money = workbook.add_format({"num_format": _CURRENCY})
        self.instant = workbook.add_format({"num_format": "yyyy-mm-dd hh:mm:ss"})
        self.date = workbook.add_format({"num_format": "yyyy-mm-dd"})
        self.integer = workbook.add_format({"num_format": "#,##0"})
        self.plain = workbook.add_format({})


@dataclass(slots=True)
class _Column:
    header: str
    kind: str  # text | money | instant | date | number | bool
    width: float
    fmt: Format


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


def _dollars(column: pa.Array) -> list[float]:
    """Integer cents as the dollars the chart's cached values show."""
    return pc.divide(column.cast(pa.float64()), 100.0).to_pylist()  # type: ignore[no-any-return]


def _shown_names(schema: pa.Schema, hidden: Sequence[str]) -> list[str]:
    # The workbook shows money once, as formatted dollars from the cents column.
    return [
        f.name
        for f in schema
        if f.name not in hidden
        and not (f.name.endswith("_dollars") and pa.types.is_decimal(f.type))
    ]


def _plan_columns(
    pf: pq.ParquetFile, formats: _Formats, hidden: tuple[str, ...]
) -> tuple[list[str], list[_Column]]:
    schema = pf.schema_arrow
    names = _shown_names(schema, hidden)
    sample = pf.read_row_group(0, columns=names).slice(0, 200) if pf.num_row_groups else None
    columns: list[_Column] = []
    for name in names:
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
        width = max(width, len(header) + 3.0)
        fmt = {
            "money": formats.money,
            "instant": formats.instant,
            "date": formats.date,
            "number": formats.integer,
        }.get(kind, formats.plain)
        columns.append(_Column(header, kind, width, fmt))
    return names, columns


def _start_sheet(
    ws: Worksheet, columns: Sequence[_Column], formats: _Formats, data_rows: int
) -> None:
    for i, column in enumerate(columns):
        ws.set_column(i, i, column.width)
    ws.freeze_panes(1, 0)
    ws.autofilter(0, 0, max(data_rows, 1), max(len(columns) - 1, 0))
    for i, column in enumerate(columns):
        ws.write_string(0, i, column.header, formats.header)


def _write_source(
    workbook: xlsxwriter.Workbook,
    source: SheetSource,
    formats: _Formats,
    max_rows: int,
) -> tuple[list[str], dict[str, tuple[RowSource, str]]]:
    """Add one Parquet source's sheets (headers only) to `workbook`; return their names and,
    per sheet's zip member, what `splice_rows` fills in after the workbook is closed."""
    pf = pq.ParquetFile(source.parquet)
    names, columns = _plan_columns(pf, formats, source.hidden_columns)
    total = pf.metadata.num_rows
    per_sheet = max_rows - 1
    sheet_count = max(1, -(-total // per_sheet))
    sheet_names = [
        source.name if i == 0 else f"{source.name} ({i + 1})" for i in range(sheet_count)
    ]
    # The style index xlsxwriter gives each format (assigned on first use, as a cell write does);
    # tests/reports read the number formats back, so a change there cannot pass unnoticed.
    xml_columns = [
        XmlColumn(xl_col_to_name(i), c.kind, c.fmt._get_xf_index()) for i, c in enumerate(columns)
    ]
    last = xl_col_to_name(max(len(columns) - 1, 0))
    rows = _SheetRows(pf, names, per_sheet)
    fills: dict[str, tuple[RowSource, str]] = {}
    for i, name in enumerate(sheet_names):
        ws = workbook.add_worksheet(name)
        data_rows = min(per_sheet, total - i * per_sheet)
        _start_sheet(ws, columns, formats, data_rows)
        member = f"xl/worksheets/sheet{len(workbook.worksheets())}.xml"
        fills[member] = (partial(rows.sheet, i, xml_columns), f"A1:{last}{data_rows + 1}")
    return sheet_names, fills


class _SheetRows:
    """A source's Parquet rows cut into sheets of `per_sheet` rows, read once, in order."""

    def __init__(self, pf: pq.ParquetFile, names: list[str], per_sheet: int) -> None:
        # 16k rows: the rows XML of a batch is ~20 MB; 64k rows held ~160 MB more at the peak
        self._batches = self._cut(pf.iter_batches(batch_size=16_384, columns=names), per_sheet)
        self._head: tuple[int, pa.RecordBatch] | None = None

    @staticmethod
    def _cut(
        batches: Iterator[pa.RecordBatch], per_sheet: int
    ) -> Iterator[tuple[int, pa.RecordBatch]]:
        sheet, room = 0, per_sheet
        for batch in batches:
            start = 0
            while start < batch.num_rows:
                if room == 0:
                    sheet, room = sheet + 1, per_sheet
                take = min(room, batch.num_rows - start)
                yield sheet, batch.slice(start, take)
                room -= take
                start += take

    def sheet(self, index: int, columns: Sequence[XmlColumn]) -> Iterator[pa.StringArray]:
        """Sheet `index`'s rows as XML, numbered from 2 (under the header)."""
        row = 2
        while True:
            if self._head is None:
                self._head = next(self._batches, None)
                if self._head is None:
                    return
            sheet, batch = self._head
            if sheet != index:
                return
            self._head = None
            yield from rows_xml(columns, batch, row)
            row += batch.num_rows


def _write_summary(
    workbook: xlsxwriter.Workbook,
    ws: Worksheet,
    summary: WorkbookSummary,
    formats: _Formats,
    chart: _ChartData | None,
) -> None:
    ws.set_column(0, 0, 34)
    ws.set_column(1, 1, 40)
    ws.write_string(0, 0, "fundpipe reconciliation", formats.title)
    row = 2

    def block(title: str) -> None:
        nonlocal row
        ws.write_string(row, 0, title, formats.header)
        ws.write_string(row, 1, "", formats.header)
        row += 1

    block("Run")
    for label, value in summary.run_facts:
        ws.write_string(row, 0, neutralise(label))
        ws.write_string(row, 1, neutralise(value))
        row += 1
    row += 1
    block("Totals")
    for label, cents in summary.totals_cents:
        ws.write_string(row, 0, neutralise(label))
        ws.write_number(row, 1, cents / 100.0, formats.money)
        row += 1
    for label, count in summary.counts:
        ws.write_string(row, 0, neutralise(label))
        ws.write_number(row, 1, count, formats.integer)
        row += 1
    row += 1
    block("Exceptions")
    for kind, count in summary.exception_counts:
        ws.write_string(row, 0, neutralise(kind))
        ws.write_number(row, 1, count, formats.integer)
        row += 1
    for note in summary.notes:
        row += 1
        ws.write_string(row, 0, neutralise(note))

    if summary.chart_sheet and chart is not None and chart.labels:
        sheet, last = summary.chart_sheet, len(chart.labels) + 1
        column_chart = workbook.add_chart({"type": "column"})
        assert column_chart is not None
        label_ref = f"='{sheet}'!${chart.letters[0]}$2:${chart.letters[0]}${last}"
        for title, col, values in (
            ("Available", chart.letters[1], chart.available),
            ("Obligations", chart.letters[2], chart.obligations),
        ):
            # constant_memory cannot read cells back, so the chart's cache is given explicitly.
            column_chart.add_series(
                {
                    "name": title,
                    "categories": label_ref,
                    "categories_data": chart.labels,
                    "values": f"='{sheet}'!${col}$2:${col}${last}",
                    "values_data": values,
                }
            )
        chart_rows = chart.rows
        shown = "" if chart_rows <= _CHART_VEHICLES else f" (first {_CHART_VEHICLES} vehicles)"
        column_chart.set_title({"name": f"Available vs obligations per vehicle{shown}"})
        column_chart.set_y_axis({"num_format": '"$"#,##0'})
        column_chart.set_size({"width": 720, "height": 400})
        ws.insert_chart(2, 3, column_chart)


@dataclass(frozen=True, slots=True)
class _ChartData:
    rows: int
    letters: tuple[str, str, str]
    labels: list[str]
    available: list[float]
    obligations: list[float]


def _chart_data(source: SheetSource, columns: tuple[str, str, str]) -> _ChartData:
    pf = pq.ParquetFile(source.parquet)
    shown = _shown_names(pf.schema_arrow, source.hidden_columns)
    a, b, c = (xl_col_to_name(shown.index(name)) for name in columns)
    head = next(pf.iter_batches(batch_size=_CHART_VEHICLES, columns=list(columns)), None)
    if head is None:
        return _ChartData(pf.metadata.num_rows, (a, b, c), [], [], [])
    labels = [neutralise(str(v or "")) for v in head.column(0).to_pylist()]
    return _ChartData(
        pf.metadata.num_rows,
        (a, b, c),
        labels,
        _dollars(head.column(1)),
        _dollars(head.column(2)),
    )


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
            formats = _Formats(workbook)
            summary_ws = workbook.add_worksheet("Summary")
            names = ["Summary"]
            chart: _ChartData | None = None
            for source in sources:
                if source.name == summary.chart_sheet:
                    chart = _chart_data(source, summary.chart_columns)
            _write_summary(workbook, summary_ws, summary, formats, chart)
            fills: dict[str, tuple[RowSource, str]] = {}
            for source in sources:
                sheet_names, source_fills = _write_source(workbook, source, formats, max_rows)
                names.extend(sheet_names)
                fills.update(source_fills)
        finally:
            workbook.close()
        splice_rows(headers, path, fills)
    finally:
        headers.unlink(missing_ok=True)
    return names
