"""Worksheet rows as OOXML, built a whole column at a time with Arrow compute.

xlsxwriter spends ~3 µs of Python per cell; the Payments sheet at 300,000 payments has 6.6 M
cells (≈ 22 s). Here a batch of rows is turned into its `<row>` XML with Arrow's vectorised string
kernels instead (one pass per column, no Python object per cell), and spliced into the sheet
xlsxwriter wrote with its header, widths, frozen pane and filter (`splice_rows`). Everything but
the data rows — formats, the Summary sheet, charts, the zip package — stays xlsxwriter's.

Cells are written the way xlsxwriter's constant-memory mode writes them (`t="inlineStr"` text
with its escapes: `&<>` as entities, control characters as `_xHHHH_`, a literal `_xHHHH_` as
`_x005F_xHHHH_`, `xml:space="preserve"` around leading/trailing white space; numbers as `<v>`;
booleans as `t="b"`), each with the style index of its column's xlsxwriter format. Text is never a
formula: there is no `<f>` element here at all.
"""

from __future__ import annotations

import queue
import re
import threading
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fundpipe.arrowpandas import scalar
from fundpipe.reports.cells import INJECTION_PATTERN, INJECTION_PREFIXES

__all__ = ["MAX_TEXT", "RowSource", "XmlColumn", "neutralised", "rows_xml", "splice_rows"]

#: Excel's longest text in one cell; longer text is cut there (as xlsxwriter does).
MAX_TEXT = 32_767
#: zlib level of the spliced sheets: on the 334 MB Payments sheet at 300,000 payments, 2 deflates
#: to 29.1 MB in 0.49 s of CPU, 3 to 27.0 MB in 0.73 s, xlsxwriter's default 6 to 23.4 MB in
#: 1.87 s; 1 takes as long as 2 for 30.1 MB.
COMPRESSION = 2
#: Largest batch (Arrow bytes) turned into XML in one go; see `rows_xml`.
BATCH_BYTES = 64 * 2**20
_EXCEL_EPOCH_DAYS = 25569.0  # 1970-01-01 as an Excel serial day number
_US_PER_DAY = 86_400_000_000.0
_CONTROL = [chr(c) for c in (*range(0x00, 0x09), *range(0x0B, 0x20))] + ["\ufffe", "\uffff"]
_CONTROL_RE = "[\\x00-\\x08\\x0b-\\x1f\\x{fffe}\\x{ffff}]"
#: Anything inside a text that `_escape` would act on.
_TO_ESCAPE = f"[&<>]|_x[0-9a-fA-F]{{4}}_|{_CONTROL_RE}"
#: RE2's `\s` (ASCII only): white space at either end is preserved.
_SPACE = b"\t\n\f\r "
#: A text's first byte that `neutralised` or `xml:space="preserve"` would act on; its last byte.
_FIRST_BYTES = np.zeros(256, np.bool_)
_FIRST_BYTES[list("".join(INJECTION_PREFIXES).encode("ascii") + _SPACE)] = True
_LAST_BYTES = np.zeros(256, np.bool_)
_LAST_BYTES[list(_SPACE)] = True
_DIMENSION = re.compile(rb'<dimension ref="[^"]*"/>')


@dataclass(frozen=True, slots=True)
class XmlColumn:
    """One shown column: its letter, kind (money, instant, date, number, bool, text), style."""

    letter: str
    kind: str
    style: int  # xlsxwriter's XF index of the column's format; 0 = General
    #: A wrapped text column's width in characters: its rows are made tall enough for it.
    wrap: int | None = None
    #: The XF index of the column's format on a total row (bold, a rule above); None: as `style`.
    total_style: int | None = None


def _escape(text: pa.Array) -> pa.Array:
    """Text as an inline string's XML content, escaped the way xlsxwriter escapes it."""
    if not pc.any(
        pc.match_substring_regex(text, f"[&<>]|_x[0-9a-fA-F]{{4}}_|{_CONTROL_RE}")
    ).as_py():
        return text  # the common case: one scan
    for raw, entity in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;")):
        text = pc.replace_substring(text, raw, entity)
    text = pc.replace_substring_regex(text, "(_x[0-9a-fA-F]{4}_)", "_x005F\\1")
    if pc.any(pc.match_substring_regex(text, _CONTROL_RE)).as_py():
        for char in _CONTROL:
            text = pc.replace_substring(text, char, f"_x{ord(char):04X}_")
    return text


def _cut(text: pa.Array) -> pa.Array:
    """Text cut to Excel's MAX_TEXT UTF-16 units, as xlsxwriter cuts it (never within a
    character above U+FFFF, which counts twice)."""
    if not pc.any(pc.greater(pc.utf8_length(text), scalar(MAX_TEXT // 2))).as_py():
        return text  # too short to reach the limit even in UTF-16
    return pa.array([None if v is None else _utf16_cut(v) for v in text.to_pylist()], pa.string())


def _utf16_cut(text: str) -> str:
    units = 0
    for index, char in enumerate(text):
        units += 2 if ord(char) > 0xFFFF else 1
        if units > MAX_TEXT:
            return text[:index]
    return text


def neutralised(values: pa.Array) -> pa.Array:
    """A column as text with an apostrophe before every formula-like start (`cells.neutralise`)."""
    text = values if pa.types.is_string(values.type) else values.cast(pa.string())
    risky = pc.fill_null(pc.match_substring_regex(text, INJECTION_PATTERN), False)
    if pc.any(risky).as_py():
        text = pc.if_else(risky, pc.binary_join_element_wise(scalar("'"), text, scalar("")), text)
    return text


def _may_change(text: pa.Array) -> bool:
    """Whether any value of `text` (a string array) may need neutralising, escaping or its white
    space preserved; False only when none does.

    The common case costs one scan of the column's bytes, not one regular-expression match per
    value: each value's first and last byte are looked up in a table, and everything `_escape`
    acts on is searched for in the values' bytes taken as one text (a `_xHHHH_` made of the end
    of one value and the start of the next only sends the column the slower way).
    """
    if not len(text):
        return False
    offsets = np.frombuffer(text.buffers()[1], np.int32)  # type: ignore[arg-type]
    offsets = offsets[text.offset : text.offset + len(text) + 1]
    data = text.buffers()[2]
    start, stop = int(offsets[0]), int(offsets[-1])
    if data is None or stop == start:
        return False
    chars = np.frombuffer(data, np.uint8)
    filled = offsets[1:] > offsets[:-1]
    if _FIRST_BYTES[chars[offsets[:-1][filled]]].any():
        return True
    if _LAST_BYTES[chars[offsets[1:][filled] - 1]].any():
        return True
    whole = pa.StringArray.from_buffers(
        1, pa.py_buffer(np.array([0, stop - start], np.int32)), data.slice(start, stop - start)
    )
    return bool(pc.any(pc.match_substring_regex(whole, _TO_ESCAPE)).as_py())


def _style_attribute(style: int) -> str:
    return f' s="{style}"' if style else ""


def _cell_parts(
    column: XmlColumn, values: pa.Array, numbers: pa.Array, totals: pa.Array | None = None
) -> list[pa.Array | str]:
    """The parts that, joined row by row, make each row's `<c>` element for `column`; `totals`
    marks the total rows, written in the column's `total_style`.

    A column without a null is its parts, joined once with the rest of the row (each cell's bytes
    are copied once); one with nulls is a single array of whole cells, "" where the value is null
    (such a cell is left out, not written empty).
    """
    style: pa.Array | str = _style_attribute(column.style)
    if totals is not None and column.total_style is not None:
        total_style = scalar(_style_attribute(column.total_style))
        style = pc.if_else(pc.fill_null(totals, False), total_style, scalar(style))
    parts: list[pa.Array | str]
    if column.kind == "text":
        text = _cut(values if pa.types.is_string(values.type) else values.cast(pa.string()))
        t_open: pa.Array | str = "<t>"
        # one scan for the common case: nothing to neutralise, escape or preserve
        if _may_change(text):
            text = _escape(_cut(neutralised(values)))
            preserve = pc.match_substring_regex(text, r"^\s|\s$")
            t_open = pc.if_else(preserve, scalar('<t xml:space="preserve">'), scalar("<t>"))
        parts = [' t="inlineStr"><is>', t_open, text, "</t></is></c>"]
    elif column.kind == "bool":
        parts = [' t="b"><v>', pc.if_else(values, scalar("1"), scalar("0")), "</v></c>"]
    else:
        parts = ["><v>", _number_text(column.kind, values), "</v></c>"]
    cell: list[pa.Array | str] = ['<c r="', column.letter, numbers, '"', style, *parts]
    if not any(isinstance(part, pa.Array) and part.null_count for part in cell):
        return cell
    return [pc.fill_null(_join(*cell), scalar(""))]


def _join(*parts: pa.Array | str) -> pa.Array:
    """The parts joined row by row (a row with a null part is null). Adjacent literal parts are
    joined first: Arrow's join costs about as much per literal as per array, so the cells of a
    column cost a third of what eight separate parts did."""
    merged: list[pa.Array | str] = []
    for part in parts:
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part
        else:
            merged.append(part)
    # typed: pyarrow would import pandas to infer a Python string's type
    return pc.binary_join_element_wise(
        *(scalar(p) if isinstance(p, str) else p for p in merged), scalar("")
    )


def _number_text(kind: str, values: pa.Array) -> pa.Array:
    """A numeric column as the text of `<v>`: dollars, Excel serial days, or the number."""
    if kind == "money":
        number = pc.divide(values.cast(pa.float64()), scalar(100.0))
    elif kind == "instant":
        micros = values.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()).cast(pa.float64())
        number = pc.add(pc.divide(micros, scalar(_US_PER_DAY)), scalar(_EXCEL_EPOCH_DAYS))
    elif kind == "date":
        days = values.cast(pa.date32()).cast(pa.int32()).cast(pa.float64())
        number = pc.add(days, scalar(_EXCEL_EPOCH_DAYS))
    elif pa.types.is_floating(values.type):
        # NaN and infinities are no number Excel can store: the cell stays blank.
        number = pc.if_else(pc.is_finite(values), values, pa.scalar(None, values.type))
    else:
        number = values
    return number.cast(pa.string())


def rows_xml(
    columns: Sequence[XmlColumn],
    batch: pa.RecordBatch,
    first_row: int,
    totals: pa.Array | None = None,
) -> Iterator[pa.StringArray]:
    """`batch`'s rows as `<row>` elements, the first numbered `first_row` (1-based); `totals`
    (one boolean per row) marks the total rows.

    A batch of more than BATCH_BYTES is done in halves: escaping can make text 7 times longer,
    and one Arrow string array holds at most 2 GiB.
    """
    if batch.num_rows > 1 and batch.nbytes > BATCH_BYTES:
        half = batch.num_rows // 2
        first, second = (None, None) if totals is None else (totals[:half], totals[half:])
        yield from rows_xml(columns, batch.slice(0, half), first_row, first)
        yield from rows_xml(columns, batch.slice(half), first_row + half, second)
        return
    yield _rows_xml(columns, batch, first_row, totals)


def _rows_xml(
    columns: Sequence[XmlColumn],
    batch: pa.RecordBatch,
    first_row: int,
    totals: pa.Array | None = None,
) -> pa.StringArray:
    numbers = pa.array(range(first_row, first_row + batch.num_rows), pa.int64()).cast(pa.string())
    if totals is not None and not pc.any(totals).as_py():
        totals = None  # no total row here: every cell keeps its column's one style, a literal
    cells = [
        part
        for i, column in enumerate(columns)
        for part in _cell_parts(column, batch.column(i), numbers, totals)
    ]
    heights = _heights(columns, batch)
    opening: list[pa.Array | str] = ['">']
    if heights is not None:
        opening = ['" ht="', heights, '" customHeight="1">']
    rows: pa.StringArray = _join('<row r="', numbers, *opening, *cells, "</row>")
    return rows


#: Points per line of wrapped 11-point text.
LINE_POINTS = 15


def _heights(columns: Sequence[XmlColumn], batch: pa.RecordBatch) -> pa.Array | None:
    """Each row's height in points for its wrapped columns' text (None: no column wraps).

    Spreadsheet programs do not all fit a row's height to wrapped text when they open a file, so
    the height is written: the most lines any wrapped cell of the row needs at its width.
    """
    lines: pa.Array | None = None
    for i, column in enumerate(columns):
        if not column.wrap:
            continue
        length = pc.fill_null(pc.utf8_length(batch.column(i).cast(pa.string())), 0)
        per_line = max(column.wrap - 2, 1)
        needed = pc.divide(pc.add(length, scalar(per_line - 1)), scalar(per_line))
        lines = needed if lines is None else pc.max_element_wise(lines, needed)
    if lines is None:
        return None
    lines = pc.max_element_wise(lines, scalar(1))
    return pc.multiply(lines, scalar(LINE_POINTS)).cast(pa.string())


def _buffer(rows: pa.StringArray) -> memoryview:
    """The concatenated text of `rows` (which has no nulls), without a copy."""
    offsets = memoryview(rows.buffers()[1]).cast("i")  # type: ignore[union-attr]
    start, stop = offsets[rows.offset], offsets[rows.offset + len(rows)]
    return memoryview(rows.buffers()[2])[start:stop]  # type: ignore[arg-type]


#: One sheet's data rows, produced when the sheet's place in the zip package comes.
RowSource = Callable[[], Iterable[pa.StringArray]]


def splice_rows(source: Path, target: Path, sheets: dict[str, tuple[RowSource, str]]) -> None:
    """Write `target`: the xlsx at `source` (as xlsxwriter wrote it) with data rows put in.

    `sheets` maps a zip member (`xl/worksheets/sheet5.xml`) to a function producing its rows
    and the sheet's full `<dimension>` range. The rows go right after the header row, before
    `</sheetData>`; every other member is copied unchanged. `target` appears whole or not at all
    (written beside it, then renamed).
    """
    staged = target.with_name(target.name + ".part")
    try:
        _copy_filling(source, staged, sheets)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise
    staged.replace(target)


def _copy_filling(path: Path, staged: Path, sheets: dict[str, tuple[RowSource, str]]) -> None:
    with (
        zipfile.ZipFile(path) as source,
        zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED, compresslevel=COMPRESSION) as target,
    ):
        for info in source.infolist():
            data = source.read(info)
            if info.filename not in sheets:
                target.writestr(info, data)
                continue
            produce, dimension = sheets[info.filename]
            head, marker, tail = data.partition(b"</sheetData>")
            if not marker:
                raise ValueError(f"{info.filename} has no sheetData to fill")
            head = _DIMENSION.sub(f'<dimension ref="{dimension}"/>'.encode(), head, count=1)
            with target.open(info.filename, "w", force_zip64=True) as out:
                out.write(head)
                for rows in _ahead(_nonempty(produce())):
                    out.write(_buffer(rows))
                out.write(marker + tail)


def _nonempty(chunks: Iterable[pa.StringArray]) -> Iterator[pa.StringArray]:
    return (c for c in chunks if len(c))


class _Raised:
    def __init__(self, error: BaseException) -> None:
        self.error = error


_DONE = object()


def _ahead(chunks: Iterable[pa.StringArray], depth: int = 2) -> Iterator[pa.StringArray]:
    """`chunks`, produced in a worker thread up to `depth` chunks ahead of the consumer.

    Arrow's kernels (building a batch's rows) and zlib (deflating the batch before) both release
    the GIL, so on two cores a large sheet's rows are built while the previous ones are
    compressed: the Payments sheet at 300k payments is written in ~1 s less. At most `depth` + 1
    chunks (~20 MB each) are held. An error on either side ends both; the producer's is raised
    here.
    """
    handoff: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                handoff.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for chunk in chunks:
                if not put(chunk):
                    return
        except BaseException as error:  # handed to the consumer, raised there
            put(_Raised(error))
            return
        put(_DONE)

    worker = threading.Thread(target=produce, name="fundpipe-sheet-rows", daemon=True)
    worker.start()
    try:
        while True:
            item = handoff.get()
            if item is _DONE:
                return
            if isinstance(item, _Raised):
                raise item.error
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        worker.join()
