"""A sheet's data rows read from its Parquet file: cut into sheets of Excel's size, shown in
words (`SheetSource.words`), and — for a tab of money — a last `Total` row that foots it
(`SheetSource.totals`). `fundpipe.reports.workbook` writes them with `fundpipe.reports.sheetxml`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from fundpipe.arrowpandas import scalar
from fundpipe.reports.sheetxml import XmlColumn, rows_xml

__all__ = ["TOTAL_FLAG", "SheetRows", "totals_batch"]

#: The flag column of the row `SheetSource.totals` adds (in no Parquet file).
TOTAL_FLAG = "__fundpipe_total__"
#: Count columns a totals row sums besides money: payments, items, distributions.
_SUMMED_COUNTS = ("payments", "_items", "_distributions")


def totals_batch(
    pf: pq.ParquetFile, names: Sequence[str], kinds: Sequence[str], flag: str | None
) -> pa.RecordBatch:
    """One row: "Total" in the first text column, the sum of each money and count column, the
    rest blank; its total-row flag set (rows flagged in the file itself are left out)."""
    summed = [
        n
        for n, kind in zip(names, kinds, strict=True)
        if kind == "money" or (kind == "number" and n.endswith(_SUMMED_COUNTS))
    ]
    sums = dict.fromkeys(summed, 0)
    read = [*summed, flag] if flag else summed
    if summed:
        for batch in pf.iter_batches(batch_size=65_536, columns=read):
            if flag:
                batch = batch.filter(pc.invert(pc.fill_null(batch.column(flag), False)))
            for name in summed:
                sums[name] += pc.sum(batch.column(name)).as_py() or 0
    schema = pf.schema_arrow
    label = next((n for n, k in zip(names, kinds, strict=True) if k == "text"), None)
    arrays: list[pa.Array] = []
    for name in names:
        type_ = schema.field(name).type
        if name in sums:
            arrays.append(pa.array([sums[name]], type_))
        elif name == label:
            arrays.append(pa.array(["Total"], pa.string()).cast(type_))
        else:
            arrays.append(pa.nulls(1, type_))
    arrays.append(pa.array([True], pa.bool_()))
    return pa.RecordBatch.from_arrays(arrays, names=[*names, flag or TOTAL_FLAG])


def _in_words(batch: pa.RecordBatch, words: Mapping[str, Mapping[str, str]]) -> pa.RecordBatch:
    """`batch` with each column of `words` shown in its plain words; a value the table does not
    know is still shown in words, its underscores as spaces and its first letter capitalized
    (`file_refused` → "File refused", as `fundpipe.vocabulary.kind_words` says it)."""
    arrays = []
    for name, column in zip(batch.schema.names, batch.columns, strict=True):
        table = words.get(name)
        if table:
            text = column.cast(pa.string())
            index = pc.index_in(text, value_set=pa.array(list(table), pa.string()))
            plain = pc.take(pa.array(list(table.values()), pa.string()), index)
            spaced = pc.utf8_trim_whitespace(pc.replace_substring(text, "_", " "))
            first = pc.utf8_upper(pc.utf8_slice_codeunits(spaced, 0, 1))
            said = pc.binary_join_element_wise(
                first, pc.utf8_slice_codeunits(spaced, 1), scalar("")
            )
            column = pc.coalesce(plain, said)
        arrays.append(column)
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


class SheetRows:
    """A source's Parquet rows cut into sheets of `per_sheet` rows, read once, in order."""

    def __init__(
        self,
        pf: pq.ParquetFile,
        names: list[str],
        per_sheet: int,
        words: Mapping[str, Mapping[str, str]],
        total_rows: str | None = None,
        appended: pa.RecordBatch | None = None,
    ) -> None:
        # 16k rows: the rows XML of a batch is ~20 MB; 64k rows held ~160 MB more at the peak
        self._names, self._total_rows = names, total_rows
        in_file = total_rows if total_rows in pf.schema_arrow.names else None
        read = [*names, in_file] if in_file else names
        batches: Iterator[pa.RecordBatch] = pf.iter_batches(batch_size=16_384, columns=read)
        if total_rows and not in_file:  # only the appended row is a total
            batches = (
                b.append_column(total_rows, pa.repeat(scalar(False), b.num_rows)) for b in batches
            )
        if appended is not None:
            batches = itertools.chain(batches, [appended])
        if any(name in words for name in names):
            batches = (_in_words(batch, words) for batch in batches)
        self._batches = self._cut(batches, per_sheet)
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
            totals = None
            if self._total_rows:
                totals = batch.column(self._total_rows)
                batch = batch.select(self._names)
            yield from rows_xml(columns, batch, row, totals)
            row += batch.num_rows
