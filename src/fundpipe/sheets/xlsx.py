"""XLSX reading through python-calamine, bounded before parsing.

The zip directory is checked first (total uncompressed size and compression ratio: a zip bomb
is refused without inflating it); encrypted workbooks (an OLE container, not a zip) and corrupt
files get one clear error. Cells become text without losing information: whole numbers without
``.0``, spreadsheet floats rounded to the cent only within a tiny tolerance, dates as ISO.
Formulas read as their cached values; one without a cached value is a row error.
"""

from __future__ import annotations

import gc
import hashlib
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from fundpipe.sheets.frames import MiB, RawSheet, ReadLimits, ReadResult, clean_table, finish_sheet
from fundpipe.sheets.money import format_spreadsheet_number
from fundpipe.sheets.xlsx_formulas import formulas_without_values


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


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a sheet becomes Python objects.

    calamine hands over one Python object per cell (800k for a 100k-row sheet); none of them
    form cycles, but their creation triggers full collections that each walk every one of
    them — seconds of work on a big sheet, for nothing.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _sheet_columns(rows: list[list[Any]]) -> list[pa.Array]:
    """The data rows (all but the header) of a rectangular sheet as one Arrow array per column."""
    width = len(rows[0]) if rows else 0
    if len(rows) < 2:
        return [pa.array([], type=pa.string()) for _ in range(width)]
    # One 2-D object array, sliced per column: transposing through tuples costs far more.
    grid = np.empty((len(rows) - 1, width), dtype=object)
    grid[:] = rows[1:]
    return [_column_text(grid[:, i]) for i in range(width)]


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


def read_xlsx(path: Path, limits: ReadLimits, result: ReadResult) -> None:
    """Read every visible worksheet of ``path`` into ``result`` (errors recorded, never raised)."""
    import python_calamine as calamine

    result.sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
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
    # The formula scan inflates the sheet XML a second time; it runs beside calamine's parse
    # (which releases the GIL), so on two cores it adds next to nothing to the read.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="xlsx-formulas") as pool:
        scan = pool.submit(formulas_without_values, path)
        for meta in workbook.sheets_metadata:
            if str(meta.typ) != str(calamine.SheetTypeEnum.WorkSheet):
                continue
            if str(meta.visible) != str(calamine.SheetVisibleEnum.Visible):
                result.warnings.append(
                    ("sheet_hidden", f"hidden sheet {meta.name!r} was not read", meta.name)
                )
                continue
            with _collector_paused():
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
            with _collector_paused():
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
