"""A new warehouse starts as a copy of the empty one kept per schema: the same schema, the same
checks on opening, and the migrations as before whenever the cache cannot help."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from fundpipe.warehouse.file import SCHEMA_FILE, VIEWS_FILE, MigrationError, Warehouse
from fundpipe.warehouse.template import template_file

SMALL_SCHEMA = (
    "-- migration: 001 tables\nCREATE TABLE a (x INTEGER);\n"
    "-- migration: 002 views\nCREATE VIEW v AS SELECT x + 1 AS y FROM a;\n"
)


_EXCLUDED = re.compile(r"EXCLUDE \(([^)]*)\)")


def _sorted_names(match: re.Match[str]) -> str:
    # DuckDB keeps a `* EXCLUDE (...)` list as a set: each time it writes its catalog out again
    # (any write to a file it read back, as a sync's merge) the names may come in another order
    return "EXCLUDE (" + ", ".join(sorted(n.strip() for n in match[1].split(","))) + ")"


def _schema(con: duckdb.DuckDBPyConnection) -> dict[str, object]:
    """Every object of the warehouse as DuckDB describes it, and the migrations recorded."""
    return {
        "tables": con.execute(
            "SELECT table_name, sql FROM duckdb_tables() ORDER BY ALL"
        ).fetchall(),
        "columns": con.execute(
            "SELECT table_name, column_index, column_name, data_type, column_default, is_nullable "
            "FROM duckdb_columns() ORDER BY ALL"
        ).fetchall(),
        "views": [
            (name, _EXCLUDED.sub(_sorted_names, sql))
            for name, sql in con.execute(
                "SELECT view_name, sql FROM duckdb_views() WHERE NOT internal ORDER BY ALL"
            ).fetchall()
        ],
        "macros": con.execute(
            "SELECT function_name, macro_definition FROM duckdb_functions() "
            "WHERE NOT internal AND function_type LIKE '%macro' ORDER BY ALL"
        ).fetchall(),
        "constraints": con.execute(
            "SELECT table_name, constraint_type, constraint_text FROM duckdb_constraints() "
            "ORDER BY ALL"
        ).fetchall(),
        "indexes": con.execute(
            "SELECT index_name, sql FROM duckdb_indexes() ORDER BY ALL"
        ).fetchall(),
        "sequences": con.execute(
            "SELECT sequence_name, start_value FROM duckdb_sequences() ORDER BY ALL"
        ).fetchall(),
        "migrations": con.execute(
            "SELECT number, name, checksum FROM _migrations ORDER BY number"
        ).fetchall(),
    }


def test_a_warehouse_copied_from_the_kept_one_has_the_migrated_schema(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    Warehouse(tmp_path / "first.duckdb", cache_dir=cache).migrate()  # migrated, then kept
    schema_text, views_text = (f.read_text(encoding="utf-8") for f in (SCHEMA_FILE, VIEWS_FILE))
    assert template_file(cache, schema_text, views_text).is_file()
    copied = Warehouse(tmp_path / "second.duckdb", cache_dir=cache)
    copied.migrate()
    plain = Warehouse(tmp_path / "plain.duckdb")  # no cache: every migration applied
    plain.migrate()
    with copied.read() as con, plain.read() as plain_con:
        assert _schema(con) == _schema(plain_con)
        assert con.execute("SELECT count(*) FROM exceptions").fetchone() == (0,)


def test_a_new_warehouse_starts_as_the_kept_copy_and_says_when_it_was_made(
    tmp_path: Path,
) -> None:
    schema, cache = tmp_path / "schema.sql", tmp_path / "cache"
    schema.write_text(SMALL_SCHEMA)
    kept = template_file(cache, SMALL_SCHEMA)
    Warehouse(tmp_path / "first.duckdb", schema_file=schema, cache_dir=cache).migrate()
    with duckdb.connect(str(kept)) as con:  # mark the kept copy: the next warehouse has it
        con.execute("CREATE TABLE marker (x INTEGER)")
        con.execute("UPDATE _migrations SET applied_at = TIMESTAMPTZ '2000-01-01 00:00:00+00'")
    with Warehouse(tmp_path / "second.duckdb", schema_file=schema, cache_dir=cache).write() as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        years = {r[0] for r in con.execute("SELECT year(applied_at) FROM _migrations").fetchall()}
    assert "marker" in tables
    assert years != {2000}  # applied_at is the new warehouse's, not the template's


def test_a_kept_copy_whose_migration_record_differs_is_refused(tmp_path: Path) -> None:
    schema, cache = tmp_path / "schema.sql", tmp_path / "cache"
    schema.write_text(SMALL_SCHEMA)
    Warehouse(tmp_path / "first.duckdb", schema_file=schema, cache_dir=cache).migrate()
    with duckdb.connect(str(template_file(cache, SMALL_SCHEMA))) as con:
        con.execute("UPDATE _migrations SET checksum = 'edited' WHERE number = 2")
    with pytest.raises(MigrationError, match=r"migration 2 .*changed after it was applied"):
        Warehouse(tmp_path / "second.duckdb", schema_file=schema, cache_dir=cache).migrate()


def test_a_cache_folder_that_cannot_be_written_still_gives_a_migrated_warehouse(
    tmp_path: Path,
) -> None:
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("a file where the cache folder should be")
    schema = tmp_path / "schema.sql"
    schema.write_text(SMALL_SCHEMA)
    wh = Warehouse(tmp_path / "w.duckdb", schema_file=schema, cache_dir=not_a_folder)
    with wh.write() as con:
        con.execute("INSERT INTO a VALUES (1)")
        assert con.execute("SELECT y FROM v").fetchall() == [(2,)]
        numbers = [
            r[0] for r in con.execute("SELECT number FROM _migrations ORDER BY 1").fetchall()
        ]
    assert numbers == [1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "schema.sql", "w.duckdb"]


def test_a_changed_schema_is_kept_apart_from_the_old_one(tmp_path: Path) -> None:
    schema, cache = tmp_path / "schema.sql", tmp_path / "cache"
    schema.write_text(SMALL_SCHEMA)
    Warehouse(tmp_path / "first.duckdb", schema_file=schema, cache_dir=cache).migrate()
    grown = SMALL_SCHEMA + "-- migration: 003 more\nCREATE TABLE b (x INTEGER);\n"
    schema.write_text(grown)
    with Warehouse(tmp_path / "second.duckdb", schema_file=schema, cache_dir=cache).write() as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert {"a", "b"} <= tables
    assert template_file(cache, SMALL_SCHEMA).is_file()
    assert template_file(cache, grown).is_file()
