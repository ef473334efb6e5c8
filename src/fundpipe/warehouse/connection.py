"""The one door to DuckDB: every connection is opened, and every transaction run, here.

- :func:`connect` opens a DuckDB file (or, without a path, an in-memory database): the only
  ``duckdb.connect`` of fundpipe. What a connection is for — the warehouse's lock wait and
  migrations (``fundpipe.warehouse.file.Warehouse``), the ledger's
  (``fundpipe.submit.ledger.open_ledger``), the damaged-file checks
  (``fundpipe.warehouse.integrity``) — is its opener's; this opens, nothing more.
- :func:`scratch` is an in-memory database for one block: a query over exported Parquet files
  that are not the warehouse.
- :func:`transaction` runs a block as one transaction: committed when the block ends, rolled
  back when it raises. ``Warehouse.transaction()`` and ``Ledger.transaction()`` are built on it;
  nothing else writes BEGIN, COMMIT or ROLLBACK (``tests/warehouse/test_warehouse_door.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

__all__ = ["connect", "scratch", "transaction"]


def connect(path: Path | None = None, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A new connection to the DuckDB file at ``path`` (read-only when asked), or to a new
    in-memory database when ``path`` is None. DuckDB's own errors (a lock held by another
    process, a file that is not a database) are raised as they are, for the opener to tell."""
    if path is None:
        return duckdb.connect()
    return duckdb.connect(str(path), read_only=read_only)


@contextmanager
def scratch() -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory DuckDB for the block (queries over Parquet files), closed after it."""
    con = connect()
    try:
        yield con
    finally:
        con.close()


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """Run the block as one transaction on ``con``: COMMIT when it ends, ROLLBACK (and the
    exception raised on) when it raises. Nothing the block wrote is kept unless all of it is."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    try:
        con.execute("COMMIT")
    except BaseException:
        # never leave the connection inside a transaction; DuckDB has usually rolled a
        # failed commit back already, and then there is nothing left to roll back
        with contextlib.suppress(duckdb.Error):
            con.execute("ROLLBACK")
        raise
