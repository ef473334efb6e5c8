"""The sync's merge: staged pages → the warehouse, in one transaction; and the ledger copy.

The merge statements live beside the DDL they depend on, in `schemas/warehouse_merge.sql`
(`-- merge: name` sections run in order); the ledger copy carries the columns the warehouse's
own `ledger_*` tables declare in `schemas/warehouse.sql`. Nothing here repeats a column list.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

import duckdb

from fundpipe.errors import DamagedFileError
from fundpipe.machine import damage_of
from fundpipe.resources import SCHEMAS_DIR
from fundpipe.warehouse import connect, lock_holder, transaction

__all__ = ["MERGE_FILE", "copy_ledger", "merge", "merge_statements"]

log = logging.getLogger(__name__)

#: The merge statements, beside the warehouse DDL.
MERGE_FILE = SCHEMAS_DIR / "warehouse_merge.sql"

_SECTION = re.compile(r"^--\s*merge:\s*(.+?)\s*$", re.MULTILINE)
_PARAMETER = re.compile(r"\$([a-z_]+)")


def merge_statements(text: str) -> list[tuple[str, str]]:
    """``(name, sql)`` of every ``-- merge: name`` section of ``text``, in order."""
    headers = list(_SECTION.finditer(text))
    return [
        (h.group(1), text[h.end() : headers[i + 1].start() if i + 1 < len(headers) else None])
        for i, h in enumerate(headers)
    ]


def _staged(path: Path) -> str:
    quoted = str(path).replace("'", "''")
    return (
        f"(SELECT * FROM read_parquet('{quoted}') QUALIFY row_number() OVER (PARTITION BY id) = 1)"
    )


def merge(
    con: duckdb.DuckDBPyConnection,
    staged: Mapping[str, Path],
    sync_id: str,
    seen_at: datetime,
) -> int:
    """Merge the staged Parquet files (by list name) in one transaction; return the number of
    status changes (rows the ``status_history`` statements appended)."""
    values = {"sync_id": sync_id, "seen_at": seen_at}
    statements = merge_statements(MERGE_FILE.read_text(encoding="utf-8"))
    changes = 0
    with transaction(con):
        for name, template in statements:
            params = {p: values[p] for p in dict.fromkeys(_PARAMETER.findall(template))}
            sql = template
            for table, path in staged.items():
                sql = sql.replace("{" + table + "}", _staged(path))
            result = con.execute(sql, params)
            if name.startswith("status_history"):
                row = result.fetchone()
                changes += int(row[0]) if row else 0
    return changes


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> str:
    """The quoted column list of the warehouse's ``table``, as ``schemas/warehouse.sql`` declares
    it: what the ledger copy carries is decided beside the DDL, never repeated here."""
    rows = con.execute(
        "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND table_name = ? ORDER BY column_index",
        [table],
    ).fetchall()
    return ", ".join('"' + str(name).replace('"', '""') + '"' for (name,) in rows)


def _ledger_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The ledger tables the warehouse copies that the attached ledger has (a ledger written
    before `ledger_file_distributions` existed has none of it until it is next written)."""
    wanted = ("ledger_payments", "ledger_files", "ledger_file_distributions")
    present = {
        str(name)
        for (name,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = 'ledger'"
        ).fetchall()
    }
    return [table for table in wanted if table in present]


def _attach_ledger(con: duckdb.DuckDBPyConnection, ledger_file: Path, timeout_s: float) -> None:
    path = str(ledger_file).replace("'", "''")
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            con.execute(f"ATTACH '{path}' AS ledger (READ_ONLY)")
            return
        except duckdb.IOException as error:
            holder = lock_holder(error)
            if holder is None or time.monotonic() >= deadline:
                raise
            log.warning("ledger %s is held by %s; retrying", ledger_file, holder)
            time.sleep(0.5)


def copy_ledger(
    con: duckdb.DuckDBPyConnection,
    ledger_file: Path,
    *,
    timeout_s: float = 60.0,
    stamp: tuple[datetime, str] | None = None,
) -> int:
    """Replace the warehouse's ledger tables with the ledger file's; return ledger payment rows.

    A missing ledger file leaves both tables empty. With `stamp` (the sync's clock and id), each
    file that is new or changed state is appended to `file_sightings`: from then on the
    point-in-time views count it.
    """
    found = ledger_file.exists()
    try:
        return _copy_ledger(con, ledger_file, found, timeout_s, stamp)
    except duckdb.Error as exc:  # the warehouse was read whole when it was opened: the ledger's
        problem = damage_of(exc)
        if problem is None:
            raise
        raise DamagedFileError(ledger_file, problem, what="ledger") from exc


def _copy_ledger(
    con: duckdb.DuckDBPyConnection,
    ledger_file: Path,
    found: bool,
    timeout_s: float,
    stamp: tuple[datetime, str] | None,
) -> int:
    if found:
        _attach_ledger(con, ledger_file, timeout_s)
    try:
        with transaction(con):
            con.execute("DELETE FROM ledger_payments")
            con.execute("DELETE FROM ledger_files")
            con.execute("DELETE FROM ledger_file_distributions")
            if found:
                for table in _ledger_tables(con):
                    columns = _columns(con, table)
                    con.execute(
                        f"INSERT INTO {table} ({columns}) SELECT {columns} FROM ledger.{table}"
                    )
            if stamp is not None:
                con.execute(
                    "INSERT INTO file_sightings SELECT f.file_hash, f.state, ?, ? "
                    "FROM ledger_files f LEFT JOIN (SELECT file_hash, arg_max(state, seen_at) "
                    "AS state FROM file_sightings GROUP BY file_hash) s "
                    "ON s.file_hash = f.file_hash WHERE f.file_hash IS NOT NULL "
                    "AND (s.file_hash IS NULL OR s.state IS DISTINCT FROM f.state)",
                    list(stamp),
                )
    finally:
        if found:
            con.execute("DETACH ledger")
    row = con.execute("SELECT count(*) FROM ledger_payments").fetchone()
    return int(row[0]) if row else 0


def ledger_vehicles(ledger_file: Path) -> set[str]:
    """The vehicles the ledger's sheet rows pay from (empty when the ledger can't be read)."""
    if not ledger_file.exists():
        return set()
    try:
        con = connect(ledger_file, read_only=True)
    except duckdb.Error:  # held by an ingest: the sheets' vehicles then come from the service
        return set()
    try:
        rows = con.execute(
            "SELECT DISTINCT vehicle FROM ledger_payments WHERE vehicle IS NOT NULL"
        ).fetchall()
    except duckdb.Error:
        return set()
    finally:
        con.close()
    return {str(r[0]) for r in rows if r[0]}
