"""Is a DuckDB file whole? Read every block once, and name the machine's faults at its edges.

DuckDB keeps a checksum per block and checks it when it reads the block: a damaged block fails
only the query that reads it, and a write that reads nothing of it succeeds and goes on writing
into the damaged file. DuckDB has no ``integrity_check``, so :func:`damage_in` reads every row of
every table (one hash per row: the column data, not only the statistics a ``count(*)`` or
``min()`` answers from), about 0.2 s for 5 million rows. The ledger and the warehouse run it
when they are opened for writing, before anything is written.

:func:`faults_named` turns what fails inside a block that holds a DuckDB file open into the
machine's fault that names it (``fundpipe.errors.machine_fault``), and :func:`writing` a full
disk met while any other file is written (a report, an error report).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from fundpipe.errors import DamagedFileError, DiskFullError, MachineFault, machine_fault
from fundpipe.machine import damage_of, disk_full, written_path

__all__ = ["damage_in", "faults_named", "refuse_damaged", "writing"]


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def damage_in(con: duckdb.DuckDBPyConnection) -> str | None:
    """What is wrong with the file ``con`` opened ("table vehicles: a block at byte 12288 fails
    its checksum"), reading every row of every table once; None when it is whole."""
    tables = con.execute(
        "SELECT database_name, schema_name, table_name FROM duckdb_tables() "
        "WHERE database_name = current_database() AND NOT temporary "
        "ORDER BY schema_name, table_name"
    ).fetchall()
    for database, schema, table in tables:
        name = ".".join(_quoted(part) for part in (database, schema, table))
        try:
            con.execute(f"SELECT bit_xor(hash(_row)) FROM {name} AS _row").fetchall()
        except duckdb.Error as exc:
            problem = damage_of(exc)
            if problem is None:
                raise
            return f"table {table}: {problem}"
    return None


def refuse_damaged(
    con: duckdb.DuckDBPyConnection, path: Path, what: str, *, org: str | None = None
) -> None:
    """Raise :class:`DamagedFileError` naming ``path`` (the ``what``) when :func:`damage_in`
    finds damage in the file ``con`` opened: before anything is written to it or read from it."""
    problem = damage_in(con)
    if problem is not None:
        raise DamagedFileError(path, problem, what=what, org=org)


@contextmanager
def faults_named(
    path: Path,
    what: str,
    *,
    org: str | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> Iterator[None]:
    """Raise the machine's fault for what fails inside the block: a full disk names the file
    being written (``path``, the ``what`` — "warehouse", "ledger" — when DuckDB names none); a
    damaged block is told as ``path``'s when ``con`` (open on it) finds damage in it, or when
    there is no ``con`` to ask. Everything else passes unchanged."""
    try:
        yield
    except MachineFault:
        raise
    except Exception as exc:
        fault = machine_fault(exc, path=path, what=what, org=org)
        if fault is None:
            raise
        if con is not None and damage_of(exc) is not None and written_path(exc) is None:
            # DuckDB's checksum error names no file: ask the one this block holds
            try:
                found = damage_in(con)
            except duckdb.Error:  # the connection itself failed: the file is what is damaged
                found = damage_of(exc)
            if found is None:  # not this file (another one attached to the connection)
                fault = machine_fault(exc) or fault
            else:
                fault = DamagedFileError(path, found, what=what, org=org)
        raise fault from exc


@contextmanager
def writing(path: Path, what: str) -> Iterator[None]:
    """Tell a full disk met inside the block as :class:`DiskFullError` naming ``path`` and
    ``what`` it is ("the reconciliation workbook"): a write that fails for want of space often
    names no file (``write()`` has none to name). Everything else passes unchanged."""
    try:
        yield
    except MachineFault:
        raise
    except Exception as exc:
        if not disk_full(exc):
            raise
        raise DiskFullError(written_path(exc) or path, what) from exc
