"""The machine failing under fundpipe: a 4 KB block of a DuckDB file overwritten, a full disk."""

from __future__ import annotations

import errno
import os
import random
import shutil
from pathlib import Path

import duckdb

from fundpipe.warehouse.integrity import damage_in

BLOCK = 4096
#: DuckDB's file: three 4 KB headers, then blocks of 256 KB, each with its own checksum.
HEADERS, STORAGE_BLOCK = 3 * 4096, 256 * 1024


def damage(path: Path, table: str | None = None) -> str:
    """Overwrite 4 KB of the DuckDB file at ``path`` (of ``table``'s data when given) with noise,
    as a failing disk would; returns what DuckDB then finds wrong. The block is chosen where it
    holds data (a block in free space would damage nothing)."""
    noise = random.Random(30).randbytes(BLOCK)
    trial = path.with_name(path.name + ".trial")
    size = path.stat().st_size
    try:
        # past the file's headers (a damaged header is found at open; the harder case is a
        # damaged block of one table, found only when it is read): 4 KB inside each block
        for offset in range(HEADERS + 2 * BLOCK, size - BLOCK, STORAGE_BLOCK):
            shutil.copyfile(path, trial)
            _overwrite(trial, offset, noise)
            try:
                con = duckdb.connect(str(trial), read_only=True)
            except duckdb.Error:
                continue
            try:
                found = damage_in(con)
            finally:
                con.close()
            if found is not None and (table is None or found.startswith(f"table {table}:")):
                _overwrite(path, offset, noise)
                return found
    finally:
        trial.unlink(missing_ok=True)
    raise AssertionError(f"no block of {path} holds {table or 'any table'}'s data")


def _overwrite(path: Path, offset: int, data: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(data)


def no_space(filename: str | None = None) -> OSError:
    """The error a write raises on a full disk (``write()`` names no file)."""
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), *([filename] if filename else []))


def duckdb_no_space(path: Path) -> duckdb.IOException:
    """DuckDB's error when the disk fills under one of its files (its words, DuckDB 2.0)."""
    return duckdb.IOException(f'IO Error: Could not write file "{path}": No space left on device')
