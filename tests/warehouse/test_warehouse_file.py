"""The warehouse file: migrations recorded once, edits refused, a held file named and retried."""

from __future__ import annotations

from pathlib import Path

import pytest

from fundpipe.warehouse.file import (
    SCHEMA_FILE,
    MigrationError,
    Warehouse,
    WarehouseLockedError,
    load_migrations,
)
from worlds.locks import hold_until_released, release


def test_migrations_are_applied_once_in_order_and_recorded(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.migrate()
    wh.migrate()
    with wh.read() as con:
        recorded = con.execute("SELECT number, name FROM _migrations ORDER BY number").fetchall()
        views = {
            r[0]
            for r in con.execute(
                "SELECT view_name FROM duckdb_views() WHERE NOT internal"
            ).fetchall()
        }
    expected = [(m.number, m.name) for m in load_migrations(SCHEMA_FILE.read_text())]
    assert recorded == expected
    assert {"funding", "sheet_vs_service", "balance_movement", "exceptions"} <= views


def test_a_failing_migration_leaves_nothing_behind(tmp_path: Path) -> None:
    schema = tmp_path / "schema.sql"
    schema.write_text(
        "-- migration: 001 good\nCREATE TABLE a (x INTEGER);\n"
        "-- migration: 002 bad\nCREATE TABLE b (x INTEGER);\nSELECT * FROM no_such_table;\n"
    )
    wh = Warehouse(tmp_path / "w.duckdb", schema_file=schema)
    with pytest.raises(Exception, match="no_such_table"), wh.write():
        pass
    schema.write_text(schema.read_text().replace("SELECT * FROM no_such_table;\n", ""))
    # 002 was rolled back whole (else CREATE TABLE b would now fail): it applies cleanly.
    with wh.write() as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        numbers = [
            r[0] for r in con.execute("SELECT number FROM _migrations ORDER BY 1").fetchall()
        ]
    assert {"a", "b"} <= tables
    assert numbers == [1, 2]


def test_an_applied_migration_that_was_edited_is_refused(tmp_path: Path) -> None:
    schema = tmp_path / "schema.sql"
    schema.write_text("-- migration: 001 one\nCREATE TABLE a (x INTEGER);\n")
    wh = Warehouse(tmp_path / "w.duckdb", schema_file=schema)
    wh.migrate()
    schema.write_text("-- migration: 001 one\nCREATE TABLE a (x BIGINT);\n")
    with pytest.raises(MigrationError, match="migration 1 \\(one\\) was changed"):
        wh.migrate()


def test_a_held_warehouse_names_the_holder_then_is_retried_until_free(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    Warehouse(path).migrate()
    holder = hold_until_released(path)
    try:
        # an injected clock: each wait moves it on by what was slept, nothing else does
        now = [0.0]
        slept: list[float] = []

        def wait(seconds: float) -> None:
            slept.append(seconds)
            now[0] += seconds

        with (
            pytest.raises(WarehouseLockedError) as caught,
            Warehouse(
                path, lock_timeout_s=0.3, retry_interval_s=0.1, sleep=wait, monotonic=lambda: now[0]
            ).write(),
        ):
            pass
        # bounded: it waited out its 0.3 s deadline, a few retries, and gave up right then
        assert sum(slept) == pytest.approx(0.3)
        assert len(slept) == 3
        assert f"PID {holder.pid}" in str(caught.value)
        assert str(path) in str(caught.value)

        def release_on_first_wait(seconds: float) -> None:
            release(holder)  # held until now: the retry below must wait, then get the file

        retrying = Warehouse(
            path, lock_timeout_s=10, retry_interval_s=0.1, sleep=release_on_first_wait
        )
        with retrying.write() as con:
            applied = con.execute("SELECT count(*) FROM _migrations").fetchone()
            assert applied == (len(load_migrations(SCHEMA_FILE.read_text())),)
        assert holder.wait(timeout=5) == 0
    finally:
        holder.kill()
        holder.wait()
