"""XLSX reading through fastexcel or python-calamine, bounded before parsing.

The zip directory is checked first (total uncompressed size and compression ratio: a zip bomb
is refused without inflating it); encrypted workbooks (an OLE container, not a zip) and corrupt
files get one clear error. Cells become text without losing information: whole numbers without
``.0``, spreadsheet floats rounded to the cent only within a tiny tolerance, dates as ISO.
Formulas read as their cached values; one without a cached value is a row error.

A sheet whose columns each hold one kind of value (text, numbers, booleans or datetimes — the
usual export) is read column-wise by fastexcel straight into Arrow and turned into text in bulk;
anything else (a column mixing kinds, a header that is not plain text, a sheet not starting at
A1, times of day, durations, dates before 1901 or in the 1904 system, serials a hair off a whole
day) takes the cell-by-cell python-calamine path. Both produce exactly the same text.

Longer than ~400 lines because the two paths must give the same text for every cell: they are
kept side by side so a change to one is made, and reviewed, beside the other.
"""

from __future__ import annotations

import re
import zipfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from fundpipe.keys import file_hash
from fundpipe.sheets.frames import (
    AroundCells,
    MiB,
    RawSheet,
    ReadLimits,
    ReadResult,
    clean_table,
    finish_sheet,
)
from fundpipe.sheets.money import format_spreadsheet_number
from fundpipe.sheets.xlsx_formulas import formulas_without_values, sheet_paths


def _cell_text(value: Any) -> str | None:
    """Text of one calamine cell value (floats without float artefacts, datetimes as ISO)."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return format_spreadsheet_number(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat(timespec="microseconds" if value.microsecond else "seconds")
    if isinstance(value, (date, time)):
        return value.isoformat()
    if isinstance(value, timedelta):
        return str(value)
    return str(value)


def _column_text(cells: np.ndarray) -> pa.Array:
    """One column of calamine values as an Arrow string array."""
    try:
        # A column of text cells only (the common case) converts in C; "" becomes null later.
        return pa.array(cells, type=pa.string())
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        return pa.array([v if type(v) is str else _cell_text(v) for v in cells], type=pa.string())


def _sheet_columns(rows: list[list[Any]]) -> list[pa.Array]:
    """The data rows (all but the header) of a rectangular sheet as one Arrow array per column."""
    width = len(rows[0]) if rows else 0
    if len(rows) < 2:
        return [pa.array([], type=pa.string()) for _ in range(width)]
    # One 2-D object array, sliced per column: transposing through tuples costs far more.
    grid = np.empty((len(rows) - 1, width), dtype=object)
    grid[:] = rows[1:]
    return [_column_text(grid[:, i]) for i in range(width)]


# ------------------------------------------------------------------- fastexcel (column-wise)

#: numbers a double holds exactly as an integer; beyond it `format_spreadsheet_number` differs
_EXACT_WHOLE = 2.0**53
_ROW_OPEN = re.compile(rb"<(?:\w+:)?row\b([^>]*)>")
_ROW_ONE = re.compile(rb'\br="1"')
_VALUED_CELL = re.compile(rb"<(?:\w+:)?v>\s*[^<\s]|<(?:\w+:)?is>")
#: header texts fastexcel may have rendered from a non-text cell (number, boolean, date, error)
_NOT_PLAIN_HEADER = re.compile(r"[\d\s.,:+\-eET]*\d[\d\s.,:+\-eET]*|(?i:true|false)|#.*", re.DOTALL)
_RENAMED = re.compile(r"(.*)_\d+", re.DOTALL)


_CELL_OPEN = re.compile(rb"<(?:\w+:)?c\b([^>]*)>")
_CELL_REF = re.compile(rb'\br="([A-Z]+)(\d+)"')
_CELL_TYPE = re.compile(rb'\bt="(\w+)"')
#: what a cell's ``t`` attribute says it holds (errors read as blank either way)
_CELL_KINDS = {b"s": "text", b"str": "text", b"inlineStr": "text", b"b": "bool", b"n": "number"}


def _head_suits_columns(archive: zipfile.ZipFile, part: str) -> bool:
    """Whether the start of the sheet XML allows reading it column-wise.

    Row 1 must be the first row and hold a value: fastexcel counts rows from the first
    non-empty one, python-calamine (and Excel numbering) from row 1. And no column may mix
    kinds of cells (text and numbers, say) in the first rows: such a sheet would fail
    fastexcel's strict typing only after a whole parse, so it goes cell by cell at once.
    """
    with archive.open(part) as fh:
        head = fh.read(256 * 1024)
    start = head.find(b"sheetData")
    row = _ROW_OPEN.search(head, max(start, 0))
    if start < 0 or row is None or row.group(1).endswith(b"/"):
        return False
    if not _ROW_ONE.search(row.group(1)):
        return False
    end = head.find(b"row>", row.end())
    if end < 0 or _VALUED_CELL.search(head, row.end(), end) is None:
        return False
    kinds: dict[bytes, str] = {}
    for cell in _CELL_OPEN.finditer(head, end):
        attributes = cell.group(1)
        ref = _CELL_REF.search(attributes)
        if attributes.endswith(b"/") or ref is None:
            continue
        typed = _CELL_TYPE.search(attributes)
        kind = _CELL_KINDS.get(typed.group(1) if typed else b"n")
        if kind is None:
            continue
        if kinds.setdefault(ref.group(1), kind) != kind:
            return False
    return True


#: a serial within 1e-8 of a whole day (or in exponent form), or an ISO date cell (``t="d"``)
_NEAR_WHOLE_SERIAL = re.compile(rb'<(?:\w+:)?v>[^<]*?(?:\.(?:0{8}|9{8})|[eE])|\bt="d"')
_DATE_1904 = re.compile(rb'date1904="(?:1|true)"')


def _dates_unambiguous(archive: zipfile.ZipFile, part: str) -> bool:
    """Whether every datetime cell's text follows from its millisecond value alone.

    python-calamine makes a whole-day serial a date and any other serial a datetime; fastexcel
    hands over milliseconds, in which a serial a few nanoseconds off a whole day looks whole.
    Such serials (and ISO date cells, and the 1904 date system) send the sheet cell by cell.
    """
    if _DATE_1904.search(archive.read("xl/workbook.xml")):
        return False
    return _NEAR_WHOLE_SERIAL.search(archive.read(part)) is None


def _plain_header(columns: list[Any]) -> list[str] | None:
    """The header as written, or None when fastexcel may have made up or reformatted a name."""
    names = [str(c.name) for c in columns]
    taken = set(names)
    for i, column in enumerate(columns):
        if column.column_name_from != "looked_up" or column.absolute_index != i:
            return None
        name = names[i]
        renamed = _RENAMED.fullmatch(name)
        if _NOT_PLAIN_HEADER.fullmatch(name) or (renamed and renamed.group(1) in taken):
            return None
    return names if len(taken) == len(names) else None


def _numbers_text(column: pa.Array) -> pa.Array:
    """Doubles as `format_spreadsheet_number` writes them, in bulk (rare shapes one by one)."""
    valid = np.asarray(column.is_valid())
    values = np.where(valid, column.to_numpy(zero_copy_only=False), 0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.isfinite(values)
        whole = finite & (values == np.trunc(values)) & (np.abs(values) < _EXACT_WHOLE)
        scaled = values * 100
        rounded = np.round(scaled)
        tolerance = np.maximum(1e-6, 8 * np.spacing(np.abs(scaled)))
        cents = (
            finite
            & ~whole
            & (np.abs(values) < _EXACT_WHOLE / 100)
            & (np.abs(scaled - rounded) <= tolerance)
        )
    whole_text = pa.array(np.where(whole, values, 0.0).astype(np.int64)).cast(pa.string())
    amount = np.abs(np.where(cents, rounded, 0.0).astype(np.int64))
    cents_text = pc.binary_join_element_wise(
        pc.if_else(pa.array(np.where(cents, rounded, 0.0) < 0), "-", ""),
        pa.array(amount // 100).cast(pa.string()),
        ".",
        pc.utf8_lpad(pa.array(amount % 100).cast(pa.string()), 2, "0"),
        "",
    )
    others = np.full(len(values), None, dtype=object)
    rest = np.flatnonzero(valid & ~whole & ~cents)
    others[rest] = [format_spreadsheet_number(float(values[i])) for i in rest]
    text = pc.if_else(
        pa.array(whole),
        whole_text,
        pc.if_else(pa.array(cents), cents_text, pa.array(others, pa.string())),
    )
    return pc.if_else(pa.array(valid), text, pa.scalar(None, pa.string()))


def _datetimes_text(column: pa.Array) -> pa.Array | None:
    """Naive timestamps as `_cell_text` writes them (midnight → a date); None if any is unusual."""
    valid = np.asarray(column.is_valid())
    stamps = column.cast(pa.timestamp("ms")).to_numpy(zero_copy_only=False)
    stamps = np.where(valid, stamps, np.datetime64(0, "ms"))
    years = stamps[valid].astype("datetime64[Y]").astype(np.int64) + 1970
    # Before 1901 calamine gives times of day (1899-12-31) and Excel's 1900 leap-year quirk.
    if len(years) and (years.min() < 1901 or years.max() > 9999):
        return None
    millis = stamps.astype(np.int64)
    text = np.where(
        millis % 86_400_000 == 0,
        np.datetime_as_string(stamps, unit="D"),
        np.where(
            millis % 1000 == 0,
            np.datetime_as_string(stamps, unit="s"),
            np.datetime_as_string(stamps.astype("datetime64[us]"), unit="us"),
        ),
    )
    return pa.array(text, type=pa.string(), mask=~valid)


def _column_from_fastexcel(column: pa.Array) -> pa.Array | None:
    """One typed fastexcel column as canonical text, or None for a type read cell by cell."""
    kind = column.type
    if pa.types.is_null(kind):
        return pa.nulls(len(column), pa.string())
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return column.cast(pa.string())
    if pa.types.is_boolean(kind):
        return pc.if_else(column, "TRUE", "FALSE")
    if pa.types.is_floating(kind):
        return _numbers_text(column.cast(pa.float64()))
    if pa.types.is_integer(kind):
        return column.cast(pa.string())
    if pa.types.is_timestamp(kind) and kind.tz is None:
        return _datetimes_text(column)
    return None


def _open_fastexcel(path: Path) -> Any:
    """A fastexcel reader for ``path``, or None (every sheet is then read by python-calamine)."""
    try:
        import fastexcel

        return fastexcel.read_excel(path)
    except Exception:
        return None


def _fast_sheet(
    reader: Any, archive: zipfile.ZipFile, part: str | None, name: str, limits: ReadLimits
) -> tuple[list[str], list[pa.Array]] | None:
    """Header and text columns of a sheet read by fastexcel, or None to read it cell by cell."""
    if reader is None or part is None or not _head_suits_columns(archive, part):
        return None
    try:
        # "strict": a column mixing kinds of values raises rather than being coerced to text
        # in fastexcel's own spelling; such a sheet is read cell by cell.
        sheet = reader.load_sheet(
            name, header_row=0, schema_sample_rows=None, dtype_coercion="strict"
        )
        columns = list(sheet.available_columns())
        if not columns or sheet.height > limits.max_rows:
            return None
        header = _plain_header(columns)
        if header is None:
            return None
        batch = sheet.to_arrow()
    except Exception:
        return None
    if any(pa.types.is_timestamp(c.type) for c in batch.columns) and not _dates_unambiguous(
        archive, part
    ):
        return None
    arrays = []
    for column in batch.columns:
        try:
            text = _column_from_fastexcel(column)
        except Exception:  # anything fastexcel hands over that we did not foresee
            return None
        if text is None:
            return None
        arrays.append(text)
    return header, arrays


def _check_zip(path: Path, limits: ReadLimits, result: ReadResult) -> bool:
    with open(path, "rb") as fh:
        magic = fh.read(8)
    if magic.startswith(b"\xd0\xcf\x11\xe0"):
        result.errors.append(
            (
                "xlsx_protected",
                "the workbook is password-protected (encrypted) or an old .xls file; save it as an "
                "unprotected .xlsx",
                None,
            )
        )
        return False
    if not magic.startswith(b"PK"):
        result.errors.append(
            ("xlsx_corrupt", "the file is not a valid XLSX workbook (corrupt or renamed)", None)
        )
        return False
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        result.errors.append(
            ("xlsx_corrupt", "the file is not a valid XLSX workbook (corrupt zip)", None)
        )
        return False
    total = sum(i.file_size for i in infos)
    # Small parts of real workbooks can compress very well; the ratio matters for big ones only.
    worst = max(
        (i.file_size / max(i.compress_size, 1) for i in infos if i.file_size > 16 * MiB),
        default=0.0,
    )
    if total > limits.max_xlsx_uncompressed_bytes or worst > limits.max_xlsx_ratio:
        result.errors.append(
            (
                "xlsx_too_large",
                f"the workbook expands to {total / MiB:,.0f} MiB (limit "
                f"{limits.max_xlsx_uncompressed_bytes / MiB:,.0f} MiB, compression ratio up to "
                f"{limits.max_xlsx_ratio:.0f}); it was not opened",
                None,
            )
        )
        return False
    return True


def read_xlsx(
    path: Path,
    limits: ReadLimits,
    result: ReadResult,
    around_cells: AroundCells = nullcontext,
    *,
    columnar: bool = True,
) -> None:
    """Read every visible worksheet of ``path`` into ``result`` (errors recorded, never raised).

    ``around_cells`` wraps the cell-by-cell path's turning of a sheet into one Python object per
    cell: the entry point's process-wide choice (see `fundpipe.sheets.frames.AroundCells`); it
    is entered once for each sheet read cell by cell. ``columnar`` False: no sheet is read
    column-wise (fastexcel), every one cell by cell.
    """
    import python_calamine as calamine

    result.sha256 = file_hash(path)
    if not _check_zip(path, limits, result):
        return
    try:
        workbook = calamine.CalamineWorkbook.from_path(str(path))
    except calamine.PasswordError:
        result.errors.append(
            ("xlsx_protected", "the workbook is password-protected; save it unprotected", None)
        )
        return
    except Exception:
        result.errors.append(
            ("xlsx_corrupt", "the file is not a valid XLSX workbook (corrupt)", None)
        )
        return
    reader = _open_fastexcel(path) if columnar else None
    # The formula scan inflates the sheet XML a second time; it runs in a thread beside the
    # parse, so on two cores it adds little to the read.
    with (
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="xlsx-formulas") as pool,
        zipfile.ZipFile(path) as archive,
    ):
        scan = pool.submit(formulas_without_values, path)
        try:
            parts = sheet_paths(archive)
        except Exception:  # an odd workbook part: every sheet is read cell by cell
            parts = {}
        for meta in workbook.sheets_metadata:
            if str(meta.typ) != str(calamine.SheetTypeEnum.WorkSheet):
                continue
            if str(meta.visible) != str(calamine.SheetVisibleEnum.Visible):
                result.warnings.append(
                    ("sheet_hidden", f"hidden sheet {meta.name!r} was not read", meta.name)
                )
                continue
            fast = _fast_sheet(reader, archive, parts.get(meta.name), meta.name, limits)
            if fast is not None:
                header, arrays = fast
            else:
                with around_cells():
                    rows = workbook.get_sheet_by_name(meta.name).to_python(skip_empty_area=False)
                    while rows and all(v == "" or v is None for v in rows[-1]):
                        rows.pop()
                if not rows:
                    result.sheets.append(RawSheet(meta.name, [], pd.DataFrame(), excel=True))
                    continue
                if len(rows) - 1 > limits.max_rows:
                    result.errors.append(
                        (
                            "file_too_many_rows",
                            f"sheet {meta.name!r} has {len(rows) - 1:,} rows, over the {limits.max_rows:,} limit",
                            meta.name,
                        )
                    )
                    return
                header = [_cell_text(v) or "" for v in rows[0]]
                with around_cells():
                    arrays = _sheet_columns(rows)
                del rows
            body = clean_table(arrays, [f"c{i}" for i in range(len(arrays))])
            cell_errors = [
                (
                    row,
                    col,
                    "formula_without_value",
                    "the cell holds a formula with no saved result; open the file in Excel, let it calculate and save it again",
                )
                for row, col in scan.result().get(meta.name, [])
                if row >= 2
            ]
            result.sheets.append(
                finish_sheet(meta.name, header, body, excel=True, cell_errors=cell_errors)
            )
