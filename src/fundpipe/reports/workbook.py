"""Report writers: typed Parquet per view and the finance workbook `reconciliation.xlsx`.

Both writers stream: Parquet is written by DuckDB straight from the view (`export_query`), and
the workbook is written with xlsxwriter's `constant_memory` mode row by row from the Parquet files
(batch by batch), so neither holds a whole view in Python memory and the workbook never needs the
warehouse open.

Column conventions (from the views): `*_cents` columns are int64 cents. Parquet keeps them and
adds a `*_dollars` decimal(18,2) column right after each; timestamps stay timezone-aware (UTC).
The workbook shows money as dollars with a currency format, instants as Excel date-times in UTC
and dates as dates, under headers in words (`fundpipe.reports.headers`: "Amount (USD)",
"Disbursed at (UTC)").

Formula injection: every text cell is written with `write_string`, so xlsxwriter never turns it
into a formula; in addition a text beginning with `=`, `+`, `-`, `@`, tab or carriage return is
prefixed with an apostrophe (`'=1+1` is shown as `'=1+1`), so that copying the cell into a CSV or
another tool cannot revive it as a formula either (OWASP's CSV-injection advice). The untouched
value is in the Parquet files.

A sheet longer than Excel's 1,048,576 rows continues in `Name (2)`, `Name (3)`, … with the header
repeated; nothing is truncated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import xlsxwriter
from xlsxwriter.format import Format
from xlsxwriter.utility import xl_col_to_name
from xlsxwriter.worksheet import Worksheet

from fundpipe.reports.cells import INJECTION_PATTERN, INJECTION_PREFIXES, neutralise
from fundpipe.reports.headers import header_for

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
_EXCEL_EPOCH_DAYS = 25569  # 1970-01-01 as an Excel serial day number
_US_PER_DAY = 86_400_000_000
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


def _column_values(kind: str, column: pa.Array) -> list[Any]:
    """A column as the Python values the matching xlsxwriter call takes (None = blank)."""
    if kind == "money":
        return pc.divide(column.cast(pa.float64()), 100.0).to_pylist()  # type: ignore[no-any-return]
    if kind == "instant":
        micros = column.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()).cast(pa.float64())
        return pc.add(pc.divide(micros, float(_US_PER_DAY)), float(_EXCEL_EPOCH_DAYS)).to_pylist()  # type: ignore[no-any-return]
    if kind == "date":
        days = column.cast(pa.date32()).cast(pa.int32()).cast(pa.float64())
        return pc.add(days, float(_EXCEL_EPOCH_DAYS)).to_pylist()  # type: ignore[no-any-return]
    if kind == "text":
        text = column if pa.types.is_string(column.type) else column.cast(pa.string())
        risky = pc.fill_null(pc.match_substring_regex(text, INJECTION_PATTERN), False)
        if pc.any(risky).as_py():
            text = pc.if_else(risky, pc.binary_join_element_wise("'", text, ""), text)
        return text.to_pylist()  # type: ignore[no-any-return]
    return column.to_pylist()  # type: ignore[no-any-return]


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
) -> list[str]:
    """Write one Parquet source into as many sheets as it needs; return their names."""
    pf = pq.ParquetFile(source.parquet)
    names, columns = _plan_columns(pf, formats, source.hidden_columns)
    total = pf.metadata.num_rows
    per_sheet = max_rows - 1
    sheet_count = max(1, -(-total // per_sheet))
    sheet_names = [
        source.name if i == 0 else f"{source.name} ({i + 1})" for i in range(sheet_count)
    ]
    sheets = [workbook.add_worksheet(n) for n in sheet_names]
    for i, ws in enumerate(sheets):
        _start_sheet(ws, columns, formats, min(per_sheet, total - i * per_sheet))

    sheet_index, row = 0, 1
    ws = sheets[0]
    for batch in pf.iter_batches(batch_size=65_536, columns=names):
        cells: list[tuple[Callable[..., int], list[Any], Format]] = []
        for name, column in zip(names, columns, strict=True):
            values = _column_values(column.kind, batch.column(name))
            write: Callable[..., int]
            if column.kind == "text":
                write = ws.write_string
            elif column.kind == "bool":
                write = ws.write_boolean
            else:
                write = ws.write_number
            cells.append((write, values, column.fmt))
        start = 0
        while start < batch.num_rows:
            room = per_sheet - (row - 1)
            if room == 0:
                sheet_index += 1
                ws, row = sheets[sheet_index], 1
                cells = [(getattr(ws, w.__name__), v, f) for w, v, f in cells]
                room = per_sheet
            stop = min(batch.num_rows, start + room)
            _write_rows(cells, start, stop, row)
            row += stop - start
            start = stop
    return sheet_names


def _write_rows(
    cells: Sequence[tuple[Callable[..., int], list[Any], Format]],
    start: int,
    stop: int,
    first_row: int,
) -> None:
    # Row-major, as constant_memory requires; the hot loop of the workbook writer.
    row = first_row
    for i in range(start, stop):
        for col, (write, values, fmt) in enumerate(cells):
            value = values[i]
            if value is not None:
                write(row, col, value, fmt)
        row += 1


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
        _column_values("money", head.column(1)),
        _column_values("money", head.column(2)),
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
    workbook = xlsxwriter.Workbook(str(path), {"constant_memory": True, "tmpdir": str(path.parent)})
    try:
        formats = _Formats(workbook)
        summary_ws = workbook.add_worksheet("Summary")
        names = ["Summary"]
        chart: _ChartData | None = None
        for source in sources:
            if source.name == summary.chart_sheet:
                chart = _chart_data(source, summary.chart_columns)
        _write_summary(workbook, summary_ws, summary, formats, chart)
        for source in sources:
            names.extend(_write_source(workbook, source, formats, max_rows))
    finally:
        workbook.close()
    return names
