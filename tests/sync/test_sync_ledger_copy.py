"""The ledger ↔ warehouse seam: the real ledger's tables copy into the warehouse."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb

from fundpipe.submit.ledger import open_ledger
from fundpipe.sync.merge import copy_ledger
from fundpipe.warehouse.file import Warehouse


def test_the_ledgers_files_land_in_the_warehouse_and_a_rejected_one_is_an_exception(
    tmp_path: Path, warehouse: Warehouse
) -> None:
    ledger_file = tmp_path / "ledger.duckdb"
    with open_ledger(ledger_file) as ledger:
        ledger.record_file("hash1", "q4.csv", "rejected", rows=3)
    with warehouse.write() as con:
        copied = copy_ledger(con, ledger_file)
        files = con.execute(
            "SELECT file_hash, source_file, state, rows FROM ledger_files"
        ).fetchall()
        # the views' as-of is the test's day (unset, DuckDB would take the machine's)
        con.execute("SET VARIABLE as_of = ?", [datetime.now(UTC).date()])
        exceptions = con.execute("SELECT kind, object_id FROM exceptions").fetchall()
    assert copied == 0
    assert files == [("hash1", "q4.csv", "rejected", 3)]
    assert exceptions == [("file_rejected", "hash1")]


def test_without_a_ledger_file_the_ledger_tables_are_emptied(
    tmp_path: Path, warehouse: Warehouse
) -> None:
    with warehouse.write() as con:
        con.execute("INSERT INTO ledger_files (file_hash, state) VALUES ('old', 'processed')")
        assert copy_ledger(con, tmp_path / "no-ledger.duckdb") == 0
        assert con.execute("SELECT count(*) FROM ledger_files").fetchone() == (0,)
    assert not (tmp_path / "no-ledger.duckdb").exists()


def test_the_warehouse_copy_of_the_ledger_matches_the_ledger_ddl(
    tmp_path: Path, warehouse: Warehouse
) -> None:
    """Drift: every column of the warehouse's ledger tables exists in schemas/ledger.sql, same type."""
    query = (
        "SELECT table_name, column_name, data_type FROM duckdb_columns() "
        "WHERE database_name = current_database() AND table_name LIKE 'ledger_%'"
    )
    ledger_file = tmp_path / "ledger.duckdb"
    with open_ledger(ledger_file):
        pass
    con = duckdb.connect(str(ledger_file), read_only=True)
    try:
        in_ledger = set(con.execute(query).fetchall())
        migrations = con.execute("SELECT number, name FROM _migrations").fetchall()
    finally:
        con.close()
    with warehouse.read() as wcon:
        in_warehouse = {
            row for row in wcon.execute(query).fetchall() if row[0] != "ledger_requests"
        }
    assert {t for t, _c, _d in in_warehouse} == {
        "ledger_files",
        "ledger_payments",
        "ledger_file_distributions",
    }
    assert in_warehouse <= in_ledger
    assert migrations == [
        (1, "ledger tables"),
        (2, "own references"),
        (3, "a rejected file's distributions"),
        (4, "files dropped again"),
    ]


def test_a_ledger_is_migrated_once_and_keeps_its_rows(tmp_path: Path) -> None:
    ledger_file = tmp_path / "ledger.duckdb"
    with open_ledger(ledger_file) as ledger:
        ledger.record_file("hash1", "q4.csv", "processed", rows=3)
    with open_ledger(ledger_file) as ledger:
        assert ledger.file_state("hash1") == "processed"


def test_a_ledger_from_before_migrations_is_adopted(tmp_path: Path) -> None:
    """Ledgers written when the DDL was inline (no `_migrations`) keep their rows."""
    from fundpipe.submit.ledger import SCHEMA_FILE

    ledger_file = tmp_path / "ledger.duckdb"
    con = duckdb.connect(str(ledger_file))
    con.execute(SCHEMA_FILE.read_text())
    con.execute("INSERT INTO ledger_files (file_hash, state) VALUES ('old', 'processed')")
    con.close()
    with open_ledger(ledger_file) as ledger:
        assert ledger.file_state("old") == "processed"
