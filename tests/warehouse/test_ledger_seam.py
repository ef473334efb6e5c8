"""The ledger ↔ warehouse seam: the real ledger's tables copy into the warehouse."""

from __future__ import annotations

from pathlib import Path

from fundpipe.submit.ledger import open_ledger
from fundpipe.sync.pull import copy_ledger
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
