"""A workbook tab as a screen shows it: the same Parquet file, columns, headers, words and Total
row as the workbook (`SheetSource`), cut to the rows a page shows.

:func:`screen_table` → :class:`ScreenTable` (the desk's reconciliation pages): the columns
before the source's details (the ones the printed page shows: names, not ids), each value as
text — money in dollars (`fundpipe.cents.format_cents`), instants as a person writes them —
and, for a tab of money, the Total the workbook adds (summed over every row, not only those
shown).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from fundpipe.cents import format_cents
from fundpipe.reports.headers import header_for
from fundpipe.reports.sheetrows import _in_words, totals_batch
from fundpipe.reports.workbook import SheetSource, _column_kind

__all__ = ["ScreenTable", "screen_table"]


@dataclass(frozen=True, slots=True)
class ScreenTable:
    """A tab's rows as text: headers, each column's kind (money is right-aligned), the rows
    shown, which of them are total rows, and how many rows the file has in all."""

    name: str
    headers: tuple[str, ...]
    kinds: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    total_rows: tuple[tuple[str, ...], ...]
    count: int
    empty: str

    @property
    def more(self) -> int:
        """Rows of the file not shown (the download has them)."""
        return self.count - len(self.rows)


def _text(value: Any, kind: str) -> str:
    """One value as the page shows it."""
    if value is None:
        return ""
    if kind == "money":
        return format_cents(int(value))
    if isinstance(value, datetime):
        return f"{value.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if kind == "number" and isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _lines(
    rows: pa.Table | pa.RecordBatch, names: list[str], kinds: list[str], source: SheetSource
) -> list[tuple[str, ...]]:
    """Each of ``rows`` as the page shows it: words for codes, money in dollars."""
    if isinstance(rows, pa.Table):
        batches = rows.combine_chunks().to_batches()
        if not batches:
            return []
        rows = batches[0]
    shown = _in_words(rows, source.words)
    columns = [shown.column(n).to_pylist() for n in names]
    return [
        tuple(_text(c[i], k) for c, k in zip(columns, kinds, strict=True))
        for i in range(shown.num_rows)
    ]


def screen_table(source: SheetSource, limit: int = 500) -> ScreenTable:
    """The first ``limit`` rows of ``source`` as its tab shows them (the columns before its
    details, less the ids its names stand for), and its Total row(s)."""
    pf = pq.ParquetFile(source.parquet)
    names = source.shown(pf.schema_arrow)
    if source.details_after is not None:
        names = names[: source.details_after]
    # names, not ids: a page shows the vehicle's and account's names, the download their ids
    names = [n for n in names if not header_for(n, "text").endswith(" id")]
    kinds = [_column_kind(pf.schema_arrow.field(n)) for n in names]
    flag = source.total_rows if source.total_rows in pf.schema_arrow.names else None
    read = [*names, flag] if flag else names
    count = pf.metadata.num_rows
    if flag:
        # a tab with total rows (the Tie-out's Total) marks them in a column: its rows are cut
        # in Arrow, and only those shown become text
        table = pf.read(columns=read)
        marked = pc.fill_null(table.column(flag), False)
        picked = table.filter(pc.invert(marked)).slice(0, max(limit, 0))
        rows, totals = (
            _lines(picked, names, kinds, source),
            _lines(table.filter(marked), names, kinds, source),
        )
        count -= len(totals)
    else:
        rows = []
        totals = []
        for batch in pf.iter_batches(batch_size=min(max(limit, 1), 65_536), columns=read):
            rows += _lines(batch.slice(0, limit - len(rows)), names, kinds, source)
            if len(rows) >= limit:
                break
    if source.totals and count:
        batch = totals_batch(pf, names, kinds, flag)
        totals.append(
            tuple(_text(batch.column(n)[0].as_py(), k) for n, k in zip(names, kinds, strict=True))
        )
    return ScreenTable(
        name=source.name,
        headers=tuple(header_for(n, k) for n, k in zip(names, kinds, strict=True)),
        kinds=tuple(kinds),
        rows=tuple(rows),
        total_rows=tuple(totals),
        count=count,
        empty=source.empty,
    )
