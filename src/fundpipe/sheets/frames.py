"""The shapes readers produce (`RawSheet`, `ReadResult`), their bounds (`ReadLimits`), the
entry point's hook around a sheet's cells (`AroundCells`), and the shared clean-up of a sheet
body (trim cells, blanks → null, drop trailing empty columns/rows)."""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

MiB = 1024 * 1024

#: What an entry point wraps around the turning of a sheet into one Python object per cell (the
#: XLSX cell-by-cell path): a process-wide choice, so the library's default changes nothing.
#: `fundpipe validate` and `fundpipe ingest` pass `fundpipe.app.cli.process.paused_gc` (the
#: cyclic collector would walk those objects again and again while they are made; see
#: `benchmarks/validate.py`, ``read_xlsx_cells``); the flows pass nothing, since during a fan-out
#: organizations run in threads of one process and one's pause would reach the others.
AroundCells: TypeAlias = Callable[[], AbstractContextManager[object]]


@dataclass(frozen=True)
class ReadLimits:
    """Bounds applied before parsing (all configurable)."""

    #: largest file accepted (CSV, XLSX or Parquet), in bytes
    max_file_bytes: int = 100 * MiB
    #: largest total uncompressed size of an XLSX's parts, in bytes
    max_xlsx_uncompressed_bytes: int = 512 * MiB
    #: largest compression ratio of any part of an XLSX (zip bombs compress thousands-fold)
    max_xlsx_ratio: float = 200.0
    #: most data rows in one sheet
    max_rows: int = 2_000_000


class RawSheet:
    """One sheet as text: its header as written and its body, Excel row numbers alongside.

    The body is held as pandas (``body``: columns ``c0…cN`` by position in the header, dtype
    ``str``, index = Excel row number) or as Arrow (``table``, the same columns, and ``rows``,
    their Excel row numbers); each is made from the other on first use. A large CSV is read
    into Arrow and stays there: validation turns it into pandas a slice at a time
    (`fundpipe.validate.distribution`), since a whole pandas copy of a million-row sheet costs
    half its Arrow size again (pandas' text columns need 64-bit offsets).
    """

    def __init__(
        self,
        name: str | None,
        header: list[str],
        body: pd.DataFrame | None = None,
        *,
        excel: bool = False,
        cell_errors: list[tuple[int, int, str, str]] | None = None,
        table: pa.Table | None = None,
        rows: np.ndarray | None = None,
    ) -> None:
        if body is None and table is None:
            raise ValueError("a sheet needs a body or a table")
        self.name = name
        self.header = header
        #: True for spreadsheet sources whose numeric cells may be Excel date serials
        self.excel = excel
        #: row-level problems found while reading: (row, column position, check, reason)
        self.cell_errors: list[tuple[int, int, str, str]] = cell_errors or []
        self._body = body
        self._table = table
        self._rows = rows

    def __len__(self) -> int:
        """Number of body rows."""
        if self._body is not None:
            return len(self._body)
        if self._table is None and self._rows is not None:  # handed over (`take_table`)
            return len(self._rows)
        return int(self.table.num_rows)

    def take_table(self) -> pa.Table:
        """The body as Arrow (`table`), handed over: the sheet keeps its row numbers but no
        longer holds its body, so the taker can let each column go once it is read."""
        table = self.table
        _ = self.rows
        self._table = None
        self._body = None
        return table

    @property
    def rows(self) -> np.ndarray:
        """The body rows' Excel row numbers (header = row 1): int64 for a pandas body, int32
        for an Arrow one (4 MiB a million rows)."""
        if self._rows is None:
            if self._body is not None:
                self._rows = self._body.index.to_numpy(dtype="int64")
            else:
                self._rows = np.arange(2, 2 + len(self), dtype=np.int32)
        return self._rows

    @property
    def table(self) -> pa.Table:
        """The body as Arrow text columns ``c0…`` (no index: see `rows`)."""
        if self._table is None:
            assert self._body is not None
            self._table = pa.Table.from_pandas(self._body, preserve_index=False)
        return self._table

    @property
    def body(self) -> pd.DataFrame:
        """The body as a pandas frame of ``str`` columns, index = Excel row number."""
        if self._body is None:
            frame: pd.DataFrame = self.table.to_pandas()
            frame.index = pd.Index(self.rows)
            self._body = frame
        return self._body


@dataclass
class ReadResult:
    """What a reader found in one file."""

    sheets: list[RawSheet] = field(default_factory=list)
    #: file-level errors: (check, reason, sheet)
    errors: list[tuple[str, str, str | None]] = field(default_factory=list)
    warnings: list[tuple[str, str, str | None]] = field(default_factory=list)
    sha256: str | None = None


def clean_table(columns: pa.Table | list[Any], names: list[str] | None = None) -> pd.DataFrame:
    """Trim cells and turn blanks into nulls in Arrow (cheap), then hand pandas the frame.

    ``columns``: a table (its column names kept) or text columns named by ``names``. A column
    with nothing to trim and no blank cell is kept as it is, not copied (the usual case: a
    clean export of a million rows then costs no second copy of its text).
    """
    frame: pd.DataFrame = clean_arrow(columns, names).to_pandas()
    frame.index = pd.RangeIndex(2, 2 + len(frame))
    frame.attrs["clean"] = True
    return frame


def clean_arrow(columns: pa.Table | list[Any], names: list[str] | None = None) -> pa.Table:
    """`clean_table`'s work, staying in Arrow: cells trimmed, blanks null."""
    if isinstance(columns, pa.Table):
        names = columns.column_names if names is None else names
        columns = list(columns.columns)
    cleaned = []
    for column in columns:
        if isinstance(column, pa.ChunkedArray):
            # a block at a time: the trimmed copy of one block is let go before the next
            cleaned.append(pa.chunked_array([_clean_text(c) for c in column.chunks], column.type))
        else:
            cleaned.append(_clean_text(column))
    return pa.table(cleaned, names=names)


def _clean_text(column: Any) -> Any:
    """One text array trimmed, blanks null; the array itself when it has nothing to change."""
    if _nothing_to_trim(column):
        return column
    trimmed = pc.utf8_trim_whitespace(column)
    blank = pc.equal(trimmed, "")
    if pc.any(blank).as_py():
        return pc.if_else(blank, pa.scalar(None, pa.string()), trimmed)
    # trimming only removes bytes: as many bytes left means the same cells
    if pc.sum(pc.binary_length(trimmed)).as_py() == pc.sum(pc.binary_length(column)).as_py():
        return column
    return trimmed


#: What a cell's first or last byte says about trimming it: 1 for the ASCII characters
#: ``utf8_trim_whitespace`` trims (tab to carriage return, the separators 0x1C–0x1F, space; a
#: test holds this to Arrow's answer), 2 for a byte of a longer UTF-8 character, 0 otherwise.
_EDGE = np.zeros(256, dtype=np.uint8)
_EDGE[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = 1
_EDGE[0x80:] = 2


def _nothing_to_trim(column: Any) -> bool:
    """Whether a text array has no cell to trim and no empty cell, read from its buffers (each
    non-empty cell's first and last byte) instead of the trimmed copy ``utf8_trim_whitespace``
    would make: the usual export's columns, a million rows in a few milliseconds. Cells that
    start or end with a longer UTF-8 character (``€5``, a no-break space) are asked of Arrow
    itself, alone. False for anything else than a text array: the caller then trims."""
    if not isinstance(column, pa.Array) or len(column) == 0:
        return False
    if column.type == pa.string():
        width: type[np.integer[Any]] = np.int32
    elif column.type == pa.large_string():
        width = np.int64
    else:
        return False
    _, offsets_buffer, data_buffer = column.buffers()
    if offsets_buffer is None or data_buffer is None:
        return False
    offsets = np.frombuffer(offsets_buffer, dtype=width)[
        column.offset : column.offset + len(column) + 1
    ]
    starts, ends = offsets[:-1], offsets[1:]
    filled = ends > starts
    cells: np.ndarray | None = None
    if column.null_count:
        valid = np.asarray(pc.is_valid(column).to_numpy(zero_copy_only=False), dtype=bool)
        if (valid & ~filled).any():
            return False  # an empty cell becomes null
        cells = np.flatnonzero(valid)
        starts, ends = starts[cells], ends[cells]
    elif not filled.all():
        return False
    data = np.frombuffer(data_buffer, dtype=np.uint8)
    edge = _EDGE[data[starts]]
    edge |= _EDGE[data[ends - 1]]
    if not edge.any():
        return True
    if (edge & 1).any():
        return False
    wide = np.flatnonzero(edge)
    some = column.take(pa.array(wide if cells is None else cells[wide]))
    trimmed = pc.utf8_trim_whitespace(some)
    return bool(pc.sum(pc.binary_length(trimmed)).as_py() == pc.sum(pc.binary_length(some)).as_py())


def finish_sheet(
    name: str | None,
    header: list[Any],
    body: pd.DataFrame,
    *,
    excel: bool,
    cell_errors: list[tuple[int, int, str, str]],
) -> RawSheet:
    """Trim trailing empty columns and all-empty rows; strip cells."""
    header = ["" if h is None else str(h).strip() for h in header]
    if len(body.columns) and not body.attrs.get("clean"):
        body = body.apply(lambda col: col.str.strip()).replace("", pd.NA)
    keep = len(header)
    while keep and not header[keep - 1] and body[f"c{keep - 1}"].isna().all():
        keep -= 1
    header = header[:keep]
    if keep < len(body.columns):
        body = body[[f"c{i}" for i in range(keep)]]
    filled = body.notna().any(axis=1)
    if not filled.all():
        body = body[filled]
    return RawSheet(name=name, header=header, body=body, excel=excel, cell_errors=cell_errors)


def finish_table(name: str | None, header: list[Any], table: pa.Table) -> RawSheet:
    """`finish_sheet` for a body already cleaned in Arrow (`clean_arrow`): trailing empty
    columns and all-empty rows go, the rest stays in Arrow (see `RawSheet`)."""
    header = ["" if h is None else str(h).strip() for h in header]
    keep = len(header)
    while keep and not header[keep - 1] and table.column(keep - 1).null_count == len(table):
        keep -= 1
    header = header[:keep]
    if keep < table.num_columns:
        table = table.select(list(range(keep)))
    rows = None
    if table.num_columns and len(table):
        filled = pc.is_valid(table.column(0))
        for column in table.columns[1:]:
            filled = pc.or_(filled, pc.is_valid(column))
        if not pc.all(filled).as_py():
            keep_rows = np.asarray(filled.to_numpy(zero_copy_only=False), dtype=bool)
            rows = np.flatnonzero(keep_rows).astype(np.int32) + 2
            table = table.filter(filled)
    return RawSheet(name, header, table=table, rows=rows, excel=False)


def text_by_code(codes: np.ndarray, names: list[str | None], index: pd.Index) -> pd.Series:
    """A ``str`` column holding ``names[code]`` per row (<NA> where the code is -1 or the name
    None), built in Arrow: a million Python strings turned into a ``str`` column one by one cost
    a tenth of a second, the dictionary take a few milliseconds."""
    codes = np.asarray(codes, dtype=np.int32)
    dictionary = pa.DictionaryArray.from_arrays(
        pa.array(codes, mask=codes < 0), pa.array(names, type=pa.string())
    )
    column: pd.Series = pd.Series(dictionary.cast(pa.string()).to_pandas(), dtype="str")
    column.index = index
    return column


def use_system_allocator() -> None:
    """Let Arrow allocate with the C library's ``malloc`` for the rest of the process.

    Arrow's bundled mimalloc spends most of a second in the kernel the first time a process
    fills a few hundred MiB (measured on 2 cores: reading and validating a 1M-row CSV took
    ~2.2 s in a fresh process with mimalloc, ~1.6 s with ``malloc``; later runs in the same
    process are equal), and a CLI or flow run reads each sheet once. A process-wide choice, so
    entry points make it (the CLI, the flows, the benchmarks), never the library; an explicit
    ``ARROW_DEFAULT_MEMORY_POOL`` in the environment wins.
    """
    if not os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        pa.set_memory_pool(pa.system_memory_pool())
    _return_large_blocks_at_once()


#: glibc's ``mallopt`` parameter for the size from which ``malloc`` maps memory of its own
_M_MMAP_THRESHOLD = -3

#: That size while a large file is parsed (`small_blocks_mapped`) and for the rest of the work.
_PARSE_MAPPED_FROM = 128 * 1024
_WORK_MAPPED_FROM = 1 * MiB

#: Whether the entry point fixed that size (`use_system_allocator`): only then is it moved.
_mapped_sizes_chosen = False

#: Parses under way (`small_blocks_mapped`), and the lock that counts them.
_parsing = 0
_parsing_lock = threading.Lock()


def _return_large_blocks_at_once() -> None:
    """Fix the size from which glibc's ``malloc`` gives a block its own mapping (handed back to
    the system when freed) at `_WORK_MAPPED_FROM`; `small_blocks_mapped` lowers it while a
    large file is parsed. Nothing elsewhere than glibc.

    By default glibc raises that size to the largest block freed so far (up to 32 MiB), so once
    a sheet's first columns are freed, the next ones come from its heap, which keeps what is
    freed: a 1,000,000-row CSV read by pyarrow then peaked at twice its Arrow size; with
    128 KiB while it is read, at about its Arrow size. Afterwards the checks allocate and free
    the same few hundred KiB slice after slice: taken from the heap up to 1 MiB rather than
    mapped afresh each time, they touch fewer new pages (`benchmarks/validate.py`'s million
    rows: about 310,000 page faults instead of 441,000, 0.2 s less CPU, for 3 % more peak RSS).
    """
    global _mapped_sizes_chosen
    if _mallopt() is None:
        return
    _mapped_sizes_chosen = True
    _set_mapped_from(_WORK_MAPPED_FROM)


@contextmanager
def small_blocks_mapped() -> Iterator[None]:
    """While the body parses a large file: every ``malloc`` block of 128 KiB or more its own
    mapping, handed back when freed (see `_return_large_blocks_at_once`). Changes nothing unless
    the entry point chose the sizes (`use_system_allocator`)."""
    global _parsing
    if not _mapped_sizes_chosen:
        yield
        return
    # organizations of a fan-out read in threads of one process: the size goes back up when
    # the last parse ends
    with _parsing_lock:
        _parsing += 1
        _set_mapped_from(_PARSE_MAPPED_FROM)
    try:
        yield
    finally:
        with _parsing_lock:
            _parsing -= 1
            if not _parsing:
                _set_mapped_from(_WORK_MAPPED_FROM)


@functools.cache
def _mallopt() -> Callable[[int, int], int] | None:
    try:
        mallopt: Callable[[int, int], int] = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return None
    return mallopt


def _set_mapped_from(size: int) -> None:
    mallopt = _mallopt()
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, size)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc: nothing to call
        return None
    return trim


def give_back_freed_memory() -> None:
    """Hand the pages the C library's ``malloc`` holds free back to the system (glibc's
    ``malloc_trim``; nothing elsewhere).

    Reading a large CSV frees a few hundred MiB at once (the file's bytes, Arrow's parse
    buffers); ``malloc`` keeps them for later, so every step after the read would start from the
    read's high-water mark and the process's peak would be the sum of both (measured on the
    1,000,000-row benchmark sheet: 805 MiB peak without, 625 MiB with, 143 MiB before the file).
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def quiet_fastexcel() -> None:
    """Keep fastexcel's warnings off the console for the rest of the process.

    fastexcel warns when it falls back to text for a column; that fallback is a decision the
    XLSX reader makes and handles itself, so on an analyst's console the warning is noise. A
    logger's level is process-wide, so entry points set it (the CLI's commands that read sheets,
    the flows), never the library at import.
    """
    logging.getLogger("fastexcel").setLevel(logging.ERROR)
