"""The warehouse as tables plus views: each view defined once, in one file run again when it
changes, and a warehouse made before the views moved out opens with its data and the same views.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import duckdb

from fundpipe.resources import SCHEMAS_DIR
from fundpipe.warehouse.file import SCHEMA_FILE, VIEWS_FILE, Warehouse
from fundpipe.warehouse.migrations import apply_migrations, load_migrations
from worlds.warehouse import seed_known_world

#: schemas/warehouse.sql as it stood at migration 041, each change to a view another copy.
BEFORE_VIEWS = Path(__file__).with_name("before_views") / "warehouse.sql"

_DEFINED = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP\w*\s+)?(VIEW|MACRO)\s+(?:IF\s+NOT\s+EXISTS\s+)?"
    r"\"?(\w+)",
    re.IGNORECASE | re.MULTILINE,
)
_EXCLUDED = re.compile(r"EXCLUDE \(([^)]*)\)")


def _definitions(path: Path) -> list[tuple[str, str]]:
    return [(kind.upper(), name) for kind, name in _DEFINED.findall(path.read_text("utf-8"))]


def _sorted_names(match: re.Match[str]) -> str:
    # DuckDB keeps a `* EXCLUDE (...)` list as a set: written out again, it may come reordered
    return "EXCLUDE (" + ", ".join(sorted(n.strip() for n in match[1].split(","))) + ")"


def _views_and_macros(con: duckdb.DuckDBPyConnection) -> dict[str, object]:
    return {
        "views": [
            (name, _EXCLUDED.sub(_sorted_names, sql))
            for name, sql in con.execute(
                "SELECT view_name, sql FROM duckdb_views() WHERE NOT internal ORDER BY ALL"
            ).fetchall()
        ],
        "columns": con.execute(
            "SELECT c.table_name, c.column_index, c.column_name, c.data_type "
            "FROM duckdb_columns() c JOIN duckdb_views() v ON v.view_name = c.table_name "
            "WHERE NOT v.internal ORDER BY ALL"
        ).fetchall(),
        "macros": con.execute(
            "SELECT function_name, macro_definition FROM duckdb_functions() "
            "WHERE NOT internal AND function_type LIKE '%macro' ORDER BY ALL"
        ).fetchall(),
    }


def _contents(con: duckdb.DuckDBPyConnection, *, as_of: str) -> dict[str, list[str]]:
    """Every view's and table's rows (sorted), the reconciliation as of `as_of`."""
    con.execute(f"SET VARIABLE as_of = DATE '{as_of}'")
    names = [
        str(n)
        for (n,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE NOT internal "
            "AND table_name NOT IN ('_migrations', '_repeatable_migrations') "
            "UNION ALL SELECT view_name FROM duckdb_views() WHERE NOT internal "
            # the layers under `exceptions` are in it: planned each on its own, they took most
            # of this test's minute
            "AND view_name NOT LIKE 'exceptions\\_before\\_%' ESCAPE '\\' ORDER BY 1"
        ).fetchall()
    ]
    return {n: sorted(map(repr, con.execute(f'SELECT * FROM "{n}"').fetchall())) for n in names}


def test_each_view_and_macro_is_defined_once_in_schemas() -> None:
    everywhere = Counter(d for sql in sorted(SCHEMAS_DIR.glob("*.sql")) for d in _definitions(sql))
    assert [d for d, n in everywhere.items() if n > 1] == []
    assert {d for d, _ in everywhere.items()} == set(_definitions(VIEWS_FILE))
    # the migrations hold tables and data changes only
    assert _definitions(SCHEMA_FILE) == []
    assert "ALTER VIEW" not in SCHEMA_FILE.read_text(encoding="utf-8").upper()


def test_a_warehouse_made_before_the_views_moved_keeps_its_data_and_ends_with_the_same_views(
    tmp_path: Path,
) -> None:
    old = tmp_path / "old.duckdb"
    con = duckdb.connect(str(old))
    try:  # as fundpipe made it then: every section applied, views and all, and a night's data
        con.execute("SET TimeZone = 'UTC'")
        apply_migrations(con, load_migrations(BEFORE_VIEWS.read_text(encoding="utf-8")))
        seed_known_world(con)
        before = {as_of: _contents(con, as_of=as_of) for as_of in ("2026-10-31", "2026-11-30")}
    finally:
        con.close()
    fresh = Warehouse(tmp_path / "fresh.duckdb")
    fresh.migrate()

    with Warehouse(old).read() as con, fresh.read() as fresh_con:
        recorded = con.execute("SELECT number, name, checksum FROM _migrations ORDER BY 1")
        assert recorded.fetchall() == [
            (m.number, m.name, m.checksum) for m in load_migrations(SCHEMA_FILE.read_text("utf-8"))
        ]
        assert _views_and_macros(con) == _views_and_macros(fresh_con)
        assert {as_of: _contents(con, as_of=as_of) for as_of in before} == before


def test_the_views_file_runs_again_when_it_changes_and_only_then(tmp_path: Path) -> None:
    schema, views = tmp_path / "schema.sql", tmp_path / "views.sql"
    schema.write_text("-- migration: 001 tables\nCREATE TABLE a (x INTEGER);\n")
    views.write_text(
        "CREATE MACRO plus(x) AS x + 1;\nCREATE VIEW v AS SELECT plus(x) AS y FROM a;\n"
        "CREATE VIEW gone AS SELECT 1 AS z;\n"
    )
    wh = Warehouse(tmp_path / "w.duckdb", schema_file=schema, views_file=views)
    with wh.write() as con:
        con.execute("INSERT INTO a VALUES (1)")
        ran_at = con.execute("SELECT applied_at FROM _repeatable_migrations").fetchall()
    with wh.write() as con:  # the same text: not run again
        assert con.execute("SELECT applied_at FROM _repeatable_migrations").fetchall() == ran_at
    views.write_text(
        "CREATE MACRO plus(x) AS x + 2;\nCREATE VIEW v AS SELECT plus(x) AS y FROM a;\n"
    )
    with wh.read() as con:  # a read of a file whose views are older brings them up to date
        assert con.execute("SELECT y FROM v").fetchall() == [(3,)]
        left = con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
        assert left == [("v",)]
        assert con.execute("SELECT x FROM a").fetchall() == [(1,)]


def test_the_views_file_makes_the_very_views_the_migration_log_made(tmp_path: Path) -> None:
    """Text for text, column for column: every view and macro as the old sections left them."""
    logged = Warehouse(tmp_path / "logged.duckdb", schema_file=BEFORE_VIEWS)
    logged.migrate()
    split = Warehouse(tmp_path / "split.duckdb")
    split.migrate()
    with logged.read() as con, split.read() as split_con:
        before, after = _views_and_macros(con), _views_and_macros(split_con)
    for name in CHANGED_SINCE_THE_SPLIT:  # each change is there, and only those
        assert _one(before, name) != _one(after, name), name
    assert _without(before) == _without(after)


#: the views and macros views.sql has changed on purpose since it was split from the log
CHANGED_SINCE_THE_SPLIT = {
    "exception_states": "a person's event (acknowledged, assigned, commented) is no sighting",
    "exception_states_of": "the same fold for some exceptions only (a page of the desk's queue)",
}


def _one(found: dict[str, object], name: str) -> list[object]:
    return [row for rows in found.values() for row in rows if row[0] == name]  # type: ignore[attr-defined]


def _without(found: dict[str, object]) -> dict[str, object]:
    return {
        part: [row for row in rows if row[0] not in CHANGED_SINCE_THE_SPLIT]  # type: ignore[attr-defined]
        for part, rows in found.items()
    }
