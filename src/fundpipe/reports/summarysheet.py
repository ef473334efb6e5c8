"""The workbook's first sheet: what a controller reads, prints on one page and signs.

From the top: the organization and the as-of date; the run's facts; the period's totals; the
distribution tie-out in payments and dollars (sheet = service = disbursed + failed + cancelled +
outstanding); exceptions by kind, in plain words; a prepared-by / reviewed-by block; the notes.
Beside them, a chart of the shortfall per vehicle (only vehicles short of funds, each bar
labelled in dollars, so a $15,000 shortfall is as visible as a $5 M one).

Every block is a list of (label, value) rows: a label in column A, its value in B (and, for the
tie-out, dollars in C), so a new line is one more tuple.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import xlsxwriter
from xlsxwriter.utility import xl_col_to_name
from xlsxwriter.worksheet import Worksheet

from fundpipe.arrowpandas import scalar
from fundpipe.reports.cells import neutralise
from fundpipe.reports.layout import Formats, PageHeader, set_page

__all__ = [
    "CHART_VEHICLES",
    "ChartData",
    "RejectedLine",
    "TieOutLine",
    "WorkbookSummary",
    "chart_data",
    "write",
]

#: The most vehicles the chart shows (the largest shortfalls first).
CHART_VEHICLES = 30
_NOTE_CHARS_PER_LINE = 95
#: What a line of columns B and C merged (36 characters wide) holds, wrapped.
_WIDE_CHARS_PER_LINE = 42
#: The shortfall chart's width in pixels, and in columns' characters (7 pixels each) as printed.
_CHART_PX = 560
_CHART_WIDTH = _CHART_PX / 7


@dataclass(frozen=True, slots=True)
class TieOutLine:
    """One line of the Summary's dollar tie-out: a label, a payment count, dollars (cents)."""

    label: str
    payments: int
    cents: int
    total: bool = False


@dataclass(frozen=True, slots=True)
class RejectedLine:
    """A file rejected that night, on the Summary: its name (rows, dollars), why, and where its
    error report is (a whole path)."""

    file: str
    why: str
    error_report: str


@dataclass(slots=True)
class WorkbookSummary:
    """What the Summary sheet shows besides the chart."""

    organization: str = ""
    as_of: str = ""
    run_facts: Sequence[tuple[str, str]] = ()
    totals_cents: Sequence[tuple[str, int]] = ()
    counts: Sequence[tuple[str, int]] = ()
    tie_out: Sequence[TieOutLine] = ()
    tie_out_title: str = "Distribution tie-out"
    exception_counts: Sequence[tuple[str, int]] = ()
    #: The files rejected (or in conflict) that night; the block says "None" when there are none.
    rejected_files: Sequence[RejectedLine] = ()
    rejected_title: str = "Files rejected that night"
    #: Closed months changed after sign-off: (label, text) lines; [] says none changed; None
    #: (no month closed yet) prints no block.
    changed_after_signoff: Sequence[tuple[str, str]] | None = None
    #: Who prepared and who reviewed the period (None: a blank line to sign on).
    prepared_by: str | None = None
    reviewed_by: str | None = None
    #: When they did (None: a blank date).
    prepared_on: str | None = None
    reviewed_on: str | None = None
    chart_sheet: str | None = "Funding"
    #: The chart's (label, value) columns of `chart_sheet`; rows with a value > 0 are charted,
    #: so the sheet must list them first (Funding is sorted by shortfall, largest first).
    chart_columns: tuple[str, str] = ("vehicle_name", "shortfall_cents")
    notes: list[str] = field(default_factory=list)

    @property
    def page(self) -> PageHeader:
        """The printed header and footer of every sheet."""
        return PageHeader(organization=self.organization, as_of=self.as_of)


@dataclass(frozen=True, slots=True)
class ChartData:
    """The charted rows of the chart sheet: column letters, labels, dollars (cached values)."""

    rows: int
    letters: tuple[str, str]
    labels: list[str]
    values: list[float]


def chart_data(
    parquet: pq.ParquetFile, shown: Sequence[str], columns: tuple[str, str]
) -> ChartData:
    """The first CHART_VEHICLES rows of `parquet` whose value column is > 0."""
    label, value = columns
    letters = (xl_col_to_name(shown.index(label)), xl_col_to_name(shown.index(value)))
    fallback = "vehicle" if "vehicle" in parquet.schema_arrow.names else label
    head = next(
        parquet.iter_batches(batch_size=CHART_VEHICLES, columns=[label, value, fallback]), None
    )
    if head is None:
        return ChartData(0, letters, [], [])
    values = head.column(1)
    positive = pc.fill_null(pc.greater(values, scalar(0)), False)
    head = head.filter(positive)
    names = pc.coalesce(head.column(0).cast(pa.string()), head.column(2).cast(pa.string()))
    return ChartData(
        head.num_rows,
        letters,
        [neutralise(v) for v in names.to_pylist()],
        pc.divide(head.column(1).cast(pa.float64()), scalar(100.0)).to_pylist(),
    )


def write(
    workbook: xlsxwriter.Workbook,
    ws: Worksheet,
    summary: WorkbookSummary,
    formats: Formats,
    chart: ChartData | None,
) -> None:
    """Fill the Summary sheet `ws` (rows in order: the workbook is written in constant memory)."""
    charted = summary.chart_sheet is not None and chart is not None
    caption = f"{chart.rows} vehicle(s) short of funds" if chart and chart.labels else ""
    # what prints: columns A-D, then the caption (or the shortfall chart) from column E
    right = _CHART_WIDTH if caption else len("No vehicle is short of funds.") if charted else 0
    set_page(ws, "Summary", summary.page, widths=[44, 18, 18, 2, right], titles=False)
    ws.set_column(0, 0, 44)
    ws.set_column(1, 2, 18)
    ws.set_column(3, 3, 2)
    organization = summary.organization or "organization not named"
    ws.write_string(0, 0, neutralise(f"Reconciliation — {organization}"), formats.title)
    ws.write_string(1, 0, neutralise(f"As of {summary.as_of}" if summary.as_of else ""))
    if charted:
        # constant memory: a row is written once, in order, so the chart's caption goes here
        # red only for a shortfall: good news printed as a warning reads as bad news
        if caption:
            ws.write_string(1, 4, caption, formats.warning)
        else:
            ws.write_string(1, 4, "No vehicle is short of funds.", formats.bold)
    row = 3

    def block(title: str, *columns: str) -> None:
        nonlocal row
        ws.write_string(row, 0, title, formats.header)
        for i in range(2):
            text = columns[i] if i < len(columns) else ""
            ws.write_string(row, 1 + i, text, formats.header)
        row += 1

    block("Run")
    for label, value in [("Organization", organization), *summary.run_facts]:
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
    if summary.tie_out:
        row += 1
        block(summary.tie_out_title, "Payments", "Dollars (USD)")
        for line in summary.tie_out:
            count_fmt = formats.integer_bold if line.total else formats.integer
            money_fmt = formats.money_bold if line.total else formats.money
            ws.write_string(row, 0, neutralise(line.label), formats.bold if line.total else None)
            ws.write_number(row, 1, line.payments, count_fmt)
            ws.write_number(row, 2, line.cents / 100.0, money_fmt)
            row += 1
    row += 1
    block("Exceptions")
    for kind, count in summary.exception_counts:
        ws.write_string(row, 0, neutralise(kind))
        ws.write_number(row, 1, count, formats.integer)
        row += 1
    row += 1
    block(summary.rejected_title, "Why")
    if not summary.rejected_files:
        ws.write_string(row, 0, "None")
        row += 1
    for rejected in summary.rejected_files:
        for label, text, fmt in (
            (rejected.file, rejected.why, formats.wrap),
            ("  Error report", rejected.error_report, formats.wrap),
        ):
            ws.set_row(row, 15 * max(1, -(-len(text) // _WIDE_CHARS_PER_LINE)))
            ws.write_string(row, 0, neutralise(label), formats.wrap)
            ws.merge_range(row, 1, row, 2, neutralise(text), fmt)
            row += 1
    row += 1
    if summary.changed_after_signoff is not None:
        block("Closed months changed after sign-off")
        if not summary.changed_after_signoff:
            ws.write_string(row, 0, "None: every closed month is as it was signed")
            row += 1
        for label, text in summary.changed_after_signoff:
            # word-wrapped as printed (an email does not break): one more line than a split
            lines = len(textwrap.wrap(text, _WIDE_CHARS_PER_LINE - 4)) or 1
            ws.set_row(row, 15 * lines)
            ws.write_string(row, 0, neutralise(label), formats.wrap)
            ws.merge_range(row, 1, row, 2, neutralise(text), formats.wrap)
            row += 1
        row += 1
    block("Sign-off", "Name", "Date")
    for role, name, on in (
        ("Prepared by", summary.prepared_by, summary.prepared_on),
        ("Reviewed by", summary.reviewed_by, summary.reviewed_on),
    ):
        ws.set_row(row, 24)
        ws.write_string(row, 0, role)
        ws.write_string(row, 1, neutralise(name or ""), formats.signature)
        ws.write_string(row, 2, neutralise(on or ""), formats.signature)
        row += 1
    if summary.notes:
        row += 1
    for note in summary.notes:
        lines = max(1, -(-len(note) // _NOTE_CHARS_PER_LINE))
        ws.set_row(row, 15 * lines)
        ws.merge_range(row, 0, row, 2, neutralise(note), formats.wrap)
        row += 1

    if summary.chart_sheet is not None and chart is not None and chart.labels:
        _shortfall_chart(workbook, ws, summary.chart_sheet, chart)


def _shortfall_chart(
    workbook: xlsxwriter.Workbook, ws: Worksheet, sheet: str, chart: ChartData
) -> None:
    last = chart.rows + 1
    bar = workbook.add_chart({"type": "bar"})
    assert bar is not None
    label, value = chart.letters
    # constant_memory cannot read cells back, so the chart's cache is given explicitly.
    bar.add_series(
        {
            "name": "Shortfall",
            "categories": f"='{sheet}'!${label}$2:${label}${last}",
            "categories_data": chart.labels,
            "values": f"='{sheet}'!${value}$2:${value}${last}",
            "values_data": chart.values,
            "fill": {"color": "#C00000"},
            "data_labels": {"value": True, "num_format": '"$"#,##0'},
        }
    )
    more = "" if chart.rows < CHART_VEHICLES else f" (largest {CHART_VEHICLES})"
    bar.set_title({"name": f"Shortfall per vehicle{more}", "name_font": {"size": 12}})
    bar.set_x_axis({"num_format": '"$"#,##0', "min": 0})
    bar.set_y_axis({"reverse": True})
    bar.set_legend({"none": True})
    bar.set_size({"width": _CHART_PX, "height": max(220, 60 + 28 * chart.rows)})
    ws.insert_chart(3, 4, bar)
