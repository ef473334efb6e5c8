"""Read CSV, XLSX and Parquet files into text frames, never raising on bad input.

Every reader returns a `ReadResult`: the sheets it found (`RawSheet`: the header row as written
and the body as text, indexed by Excel row number — header = row 1) plus file-level errors and
warnings. Nothing is type-guessed: leading zeros and long ids survive. Bounds (`ReadLimits`) are
checked before any parsing, so an oversized CSV or a zip bomb is refused in bounded time and
memory.
"""

from __future__ import annotations

import csv
import logging
import zipfile
from contextlib import nullcontext
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from fundpipe.keys import file_hash
from fundpipe.sheets.delimited import read_csv
from fundpipe.sheets.frames import (
    AroundCells,
    MiB,
    RawSheet,
    ReadLimits,
    ReadResult,
    finish_sheet,
    small_blocks_mapped,
)
from fundpipe.sheets.money import format_spreadsheet_number
from fundpipe.sheets.xlsx import read_xlsx

_log = logging.getLogger(__name__)

#: What a parser raises on bytes it cannot read (pyarrow's errors are ValueErrors, csv's its
#: own, a damaged XLSX a zip or XML error): the file is unreadable. Anything else is a bug.
_UNREADABLE: tuple[type[BaseException], ...] = (
    ValueError,
    csv.Error,
    pa.ArrowException,
    zipfile.BadZipFile,
    EOFError,
)

__all__ = ["AroundCells", "MiB", "RawSheet", "ReadLimits", "ReadResult", "read_file"]


def read_file(
    path: Path,
    limits: ReadLimits | None = None,
    *,
    around_cells: AroundCells = nullcontext,
    columnar: bool = True,
) -> ReadResult:
    """Read ``path`` by its extension (``.csv``/``.txt``/``.tsv``, ``.xlsx``/``.xlsm``, ``.parquet``).

    Never raises for bad input: an unreadable file comes back with a file-level error.
    ``around_cells``: the entry point's choice around an XLSX sheet's cells (`AroundCells`).
    ``columnar``: False reads every XLSX sheet cell by cell (python-calamine), the reference
    the column-wise path (fastexcel) must agree with.
    """
    limits = limits or ReadLimits()
    result = ReadResult()
    suffix = path.suffix.lower()
    try:
        size = path.stat().st_size
    except OSError as exc:
        result.errors.append(
            ("file_unreadable", f"the file cannot be opened ({exc.strerror})", None)
        )
        return result
    if size > limits.max_file_bytes:
        result.errors.append(
            (
                "file_too_large",
                f"the file is {size / MiB:.1f} MiB, over the {limits.max_file_bytes / MiB:.0f} MiB "
                "limit; split it into smaller files",
                None,
            )
        )
        return result
    try:
        if suffix in {".csv", ".txt", ".tsv"}:
            read_csv(path, limits, result)
        elif suffix in {".xlsx", ".xlsm"}:
            with small_blocks_mapped():
                read_xlsx(path, limits, result, around_cells, columnar=columnar)
        elif suffix == ".parquet":
            with small_blocks_mapped():
                _read_parquet(path, limits, result)
        else:
            result.errors.append(
                (
                    "file_type_unknown",
                    f"files ending {suffix or '(none)'} are not read; use CSV, XLSX or Parquet",
                    None,
                )
            )
    except MemoryError:
        result.sheets.clear()
        result.errors.append(("file_too_large", "the file is too large to read in memory", None))
    except _UNREADABLE as exc:  # what bad bytes make a parser raise: the file is unreadable
        _log.debug("%s cannot be read", path, exc_info=exc)
        result.sheets.clear()
        result.errors.append(
            ("file_unreadable", f"the file cannot be read ({type(exc).__name__})", None)
        )
    # anything else is a bug, not the file's fault: it reaches the edge, which logs its
    # traceback and exits 5 (internal error); the file is not called unreadable
    return result


# ----------------------------------------------------------------------------------- Parquet


def _read_parquet(path: Path, limits: ReadLimits, result: ReadResult) -> None:
    result.sha256 = file_hash(path)
    try:
        meta = pq.read_metadata(path)
    except Exception:
        result.errors.append(("parquet_corrupt", "the file is not a valid Parquet file", None))
        return
    if meta.num_rows > limits.max_rows:
        result.errors.append(
            (
                "file_too_many_rows",
                f"the file has {meta.num_rows:,} rows, over the {limits.max_rows:,} limit",
                None,
            )
        )
        return
    table = pq.read_table(path)
    header = list(table.column_names)
    columns: dict[str, pd.Series] = {}
    for i, column in enumerate(table.columns):
        if pa.types.is_floating(column.type):
            values = [
                None if v is None else format_spreadsheet_number(v) for v in column.to_pylist()
            ]
            columns[f"c{i}"] = pd.Series(values, dtype="str")
        elif pa.types.is_timestamp(column.type):
            values = [None if v is None else v.isoformat() for v in column.to_pylist()]
            columns[f"c{i}"] = pd.Series(values, dtype="str")
        else:
            columns[f"c{i}"] = column.cast(pa.string()).to_pandas().astype("str")
    body = pd.DataFrame(columns)
    body.index = pd.RangeIndex(2, 2 + len(body))
    result.sheets.append(finish_sheet(None, header, body, excel=False, cell_errors=[]))
