"""The CSV reader (``.csv``/``.txt``/``.tsv``): a file → one text sheet, never raising on bad input.

The delimiter is sniffed from the first line (comma, semicolon or tab). Valid UTF-8 is read by
pyarrow from the file a block at a time and stays in Arrow; UTF-16 with a BOM, or cp1252 with a
warning, is decoded whole first. Rows pyarrow cannot take as they are go through the standard
library's reader, which names each row with too many cells. A binary or empty file, or one over
the row limit, gets a file-level error instead of a sheet.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import re
from pathlib import Path
from typing import BinaryIO

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from fundpipe.keys import content_hash
from fundpipe.sheets.frames import (
    MiB,
    RawSheet,
    ReadLimits,
    ReadResult,
    clean_arrow,
    clean_table,
    finish_sheet,
    finish_table,
    give_back_freed_memory,
    small_blocks_mapped,
)

#: control characters that never appear in text (tab, LF and CR do)
_CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 13))


def _looks_binary(head: bytes) -> bool:
    """A NUL byte, or control bytes in more than 1 % of the file's first bytes."""
    controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
    return b"\x00" in head or controls > len(head) // 100


def _decode(data: bytes, result: ReadResult) -> str | None:
    """Decode CSV bytes: UTF-8 (± BOM), UTF-16 with BOM, else cp1252 with a warning."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            result.errors.append(
                ("file_encoding", "the file claims UTF-16 but is not valid UTF-16", None)
            )
            return None
    if _looks_binary(data[:65536]):
        result.errors.append(
            (
                "file_not_text",
                "the file is not text (binary data); export the sheet as CSV or XLSX",
                None,
            )
        )
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        result.errors.append(
            (
                "file_encoding",
                "the file is neither UTF-8 nor Windows-1252 text; export it as UTF-8 CSV",
                None,
            )
        )
        return None
    result.warnings.append(
        (
            "file_encoding_cp1252",
            "the file is not UTF-8; it was read as Windows-1252 (cp1252) — check accented names, "
            "or export as 'CSV UTF-8'",
            None,
        )
    )
    return text


def _sniff_delimiter(first_line: str) -> str:
    counts = {d: first_line.count(d) for d in (",", ";", "\t")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","


def read_csv(path: Path, limits: ReadLimits, result: ReadResult) -> None:
    """Read the CSV file at ``path`` into ``result`` (its sheet, its hash, or the file-level
    errors and warnings), within ``limits``."""
    with open(path, "rb") as handle:
        head = handle.read(4 * MiB)
    with small_blocks_mapped():
        fast = _csv_utf8(head, path) if head[:65536].strip() else None
        if fast is not None:
            # valid UTF-8 read by pyarrow from the file, a block at a time: neither the file's
            # bytes nor a decoded copy (up to four bytes a character in Python) are ever held
            # whole, and the sheet stays in Arrow (`RawSheet`)
            header, table, digest = fast
            result.sha256 = digest
            table = clean_arrow(table)
            give_back_freed_memory()
            _add_sheet(result, finish_table(None, header, table), limits)
            return
        _read_csv_whole(path, limits, result)


def _read_csv_whole(path: Path, limits: ReadLimits, result: ReadResult) -> None:
    """`read_csv` for any file the streaming UTF-8 path does not take: its bytes read whole."""
    data = path.read_bytes()
    result.sha256 = content_hash(data)
    if not data[:65536].strip() and not data.strip():
        result.errors.append(("file_empty", "the file is empty", None))
        return
    text = _decode(data, result)
    if text is None:
        return
    text = text.removeprefix("\ufeff")
    # Whole-text copies (strip, split) cost a tenth of a second each on a 100 MiB file.
    if not text[:65536].strip() and not text.strip():
        result.errors.append(("file_empty", "the file is empty", None))
        return
    end = text.find("\n")
    first_line = text if end < 0 else text[:end]
    delimiter = _sniff_delimiter(first_line)
    header = next(csv.reader(io.StringIO(text[:1_048_576]), delimiter=delimiter), [])
    raw = (
        data.removeprefix(b"\xef\xbb\xbf")
        if not result.warnings and not data.startswith((b"\xff\xfe", b"\xfe\xff"))
        else text.encode("utf-8")
    )
    fast_body = _csv_fast(raw, delimiter, len(header))
    cell_errors: list[tuple[int, int, str, str]] = []
    if fast_body is None:
        body, cell_errors = _csv_slow(text, delimiter, len(header))
    else:
        body = fast_body
    _add_sheet(
        result, finish_sheet(None, header, body, excel=False, cell_errors=cell_errors), limits
    )


def _add_sheet(result: ReadResult, sheet: RawSheet, limits: ReadLimits) -> None:
    if len(sheet) > limits.max_rows:
        result.errors.append(
            (
                "file_too_many_rows",
                f"the file has {len(sheet):,} rows, over the {limits.max_rows:,} limit",
                None,
            )
        )
        return
    result.sheets.append(sheet)


def _csv_utf8(head: bytes, path: Path) -> tuple[list[str], pa.Table, str] | None:
    """The header, the Arrow table and the SHA-256 of a UTF-8 CSV (± BOM) read by pyarrow from
    the file (``head``: its first bytes), never holding the whole file's bytes; None for
    anything else (UTF-16, binary, another encoding, a file the careful reader must read): the
    general path then reads it as before.

    pyarrow checks every cell is valid UTF-8 (the body rows); the header row is decoded here.
    """
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or _looks_binary(head[:65536]):
        return None
    raw = head.removeprefix(b"\xef\xbb\xbf")
    try:
        start = codecs.getincrementaldecoder("utf-8")().decode(raw)
    except UnicodeDecodeError:
        return None
    start = start.removeprefix("\ufeff")
    if not start[:65536].strip():
        return None
    end = start.find("\n")
    delimiter = _sniff_delimiter(start if end < 0 else start[:end])
    header = next(csv.reader(io.StringIO(start[:1_048_576]), delimiter=delimiter), [])
    if not header:
        return None
    with open(path, "rb") as handle:
        scan = _ScanningReader(handle)
        table = _csv_arrow(scan, delimiter, len(header))
    if table is None or scan.blank:
        return None
    return header, table, scan.digest.hexdigest()


class _ScanningReader(io.RawIOBase):
    """The file as pyarrow's reader reads it, hashed (SHA-256) and watched for a blank line
    before the last non-blank byte (pyarrow skips blank lines, which would shift Excel row
    numbers): one pass over the file's bytes for the three."""

    def __init__(self, handle: BinaryIO) -> None:
        super().__init__()
        self._handle = handle
        self.digest = hashlib.sha256()
        #: a blank line found with something after it: the careful reader must read the file
        self.blank = False
        self._blank_seen = False
        # the last line of the previous piece, for a blank line straddling two pieces
        self._tail = b""

    def readable(self) -> bool:
        """Always (a file opened for reading)."""
        return True

    def read(self, size: int = -1) -> bytes:
        """The next ``size`` bytes of the file (all the rest for -1), seen on the way."""
        piece = self._handle.read(size)
        self.digest.update(piece)
        if not self.blank and piece:
            self._see(piece)
        return piece

    def _see(self, piece: bytes) -> None:
        if self._blank_seen:
            self.blank = bool(piece.strip())
            return
        first = piece.find(b"\n")
        # a blank line that starts in the previous piece ends at this piece's first newline
        if self._tail and first >= 0:
            found = _BLANK_LINE.search(self._tail + piece[: first + 1])
            if found is not None:
                self._after_blank(piece[first + 1 :])
                return
        found = _BLANK_LINE.search(piece)
        if found is not None:
            self._after_blank(piece[found.end() :])
            return
        cut = piece.rfind(b"\n")
        if cut >= 0:
            self._tail = piece[cut:] if len(piece) - cut < MiB else b""
        elif self._tail:
            self._tail = self._tail + piece if len(self._tail) + len(piece) < MiB else b""

    def _after_blank(self, rest: bytes) -> None:
        self._blank_seen = True
        self.blank = bool(rest.strip())


_BLANK_LINE = re.compile(rb"\n[ \t]*\r?\n")


def _has_blank_line(data: bytes) -> bool:
    """A blank line before the last non-blank byte (trailing blank lines are harmless)."""
    # Searched up to the trailing whitespace instead of on ``data.rstrip()``: no 100 MiB copy.
    tail = data[-4096:]
    kept = tail.rstrip()
    end = len(data) - len(tail) + len(kept) if kept else len(data.rstrip())
    return _BLANK_LINE.search(data, 0, end) is not None


def _csv_fast(data: bytes, delimiter: str, width: int) -> pd.DataFrame | None:
    """pyarrow's reader on UTF-8 bytes, cells cleaned; None when the file needs the careful
    reader (see `_csv_table`)."""
    table = _csv_table(data, delimiter, width)
    return None if table is None else clean_table(table)


def _csv_table(data: bytes, delimiter: str, width: int) -> pa.Table | None:
    """pyarrow's reader on UTF-8 bytes (columns ``c0…``, text); None when the file needs the
    careful reader.

    The careful reader takes over for blank lines (pyarrow skips them, which would shift Excel
    row numbers), ragged rows (reported per row) and cells that are not valid UTF-8.
    """
    if width == 0 or _has_blank_line(data):
        return None
    return _csv_arrow(io.BytesIO(data), delimiter, width)


def _csv_arrow(source: str | io.IOBase, delimiter: str, width: int) -> pa.Table | None:
    """pyarrow's reader on a UTF-8 file or bytes without blank lines (see `_csv_table`)."""
    names = [f"c{i}" for i in range(width)]
    try:
        table = pacsv.read_csv(
            source,
            # One thread: with every large block mapped on its own (`use_system_allocator`),
            # threads mostly wait on each other's page mappings (a 1,000,000-row file read in
            # 1.3 s alone, 1.9 s threaded). A record longer than a block fails here and takes the
            # careful path.
            read_options=pacsv.ReadOptions(
                skip_rows=1, column_names=names, block_size=4 * MiB, use_threads=False
            ),
            parse_options=pacsv.ParseOptions(delimiter=delimiter, newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(
                column_types=dict.fromkeys(names, pa.string()),
                null_values=[""],
                strings_can_be_null=True,
                quoted_strings_can_be_null=True,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowException):
        return None
    return table


def _csv_slow(
    text: str, delimiter: str, width: int
) -> tuple[pd.DataFrame, list[tuple[int, int, str, str]]]:
    """The standard-library reader: exact row numbers, ragged rows reported per row."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    next(reader, None)
    rows: list[list[str]] = []
    numbers: list[int] = []
    errors: list[tuple[int, int, str, str]] = []
    for record in reader:
        number = len(numbers) + 2  # Excel numbering: one row per record, header = row 1
        if not any(cell.strip() for cell in record):
            numbers.append(number)
            rows.append([""] * width)
            continue
        if len(record) > width and any(c.strip() for c in record[width:]):
            errors.append(
                (
                    number,
                    width,
                    "row_too_many_cells",
                    f"the row has {len(record)} cells but the header has {width}",
                )
            )
        record = (record + [""] * width)[:width]
        rows.append(record)
        numbers.append(number)
    frame = pd.DataFrame(rows, columns=[f"c{i}" for i in range(width)], index=numbers, dtype="str")
    return frame.replace("", pd.NA), errors
