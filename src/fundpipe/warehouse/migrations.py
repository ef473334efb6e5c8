"""Ordered, recorded schema migrations for a DuckDB file (the warehouse's and the ledger's).

A schema file is split into `-- migration: NNN name` sections. Each section is applied once, in
order, in its own transaction, and recorded in `_migrations` with a checksum; an applied section
whose text later changes is refused rather than silently re-run (as `sqlite_utils/migrations.py`
does for SQLite). A section may name the checksum its text had before (a line
`-- earlier checksum: <sha256>`, written when the warehouse's views moved out of its sections):
a file that recorded that one is still accepted, and its record is brought to the new text.

The views and macros live apart, in one repeatable file (`schemas/views.sql`, as Flyway's `R__`
migrations): after the versioned sections, `apply_views` drops every view and macro and runs the
file again whenever its checksum differs from the one recorded in `_repeatable_migrations`.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass

import duckdb

from fundpipe.warehouse.connection import transaction

__all__ = [
    "Migration",
    "MigrationError",
    "Repeatable",
    "applied_numbers",
    "apply_migrations",
    "apply_views",
    "load_migrations",
    "views_current",
]

log = logging.getLogger(__name__)

_MIGRATION_HEADER = re.compile(r"^--\s*migration:\s*(\d+)\s+(.+?)\s*$", re.MULTILINE)
_EARLIER_CHECKSUM = re.compile(r"^--.*\bearlier checksum:\s*([0-9a-f]{64})\b", re.MULTILINE)


class MigrationError(RuntimeError):
    """The migrations file is malformed, or an applied migration's text has changed."""


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered section of the migrations file."""

    number: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        """SHA-256 of the section's SQL, to detect edits after it was applied."""
        return hashlib.sha256(self.sql.strip().encode()).hexdigest()

    @property
    def earlier_checksums(self) -> frozenset[str]:
        """The checksums this section's text had before, which an applied file may record."""
        return frozenset(_EARLIER_CHECKSUM.findall(self.sql))


def load_migrations(text: str) -> list[Migration]:
    """Split a migrations file into its numbered sections, checking they are in order."""
    headers = list(_MIGRATION_HEADER.finditer(text))
    if not headers:
        raise MigrationError("no '-- migration: NNN name' sections found")
    migrations: list[Migration] = []
    for i, header in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(text)
        number = int(header.group(1))
        if migrations and number <= migrations[-1].number:
            raise MigrationError(f"migration {number} is out of order")
        migrations.append(Migration(number, header.group(2), text[header.end() : end]))
    return migrations


def apply_migrations(con: duckdb.DuckDBPyConnection, migrations: list[Migration]) -> list[int]:
    """Apply every migration not yet recorded, each in its own transaction; return their numbers."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS _migrations (number INTEGER PRIMARY KEY, name VARCHAR, "
        "checksum VARCHAR, applied_at TIMESTAMPTZ DEFAULT current_timestamp)"
    )
    applied = {
        int(n): str(c)
        for n, c in con.execute("SELECT number, checksum FROM _migrations").fetchall()
    }
    done: list[int] = []
    for migration in migrations:
        if migration.number in applied:
            if applied[migration.number] in migration.earlier_checksums:
                con.execute(
                    "UPDATE _migrations SET checksum = ? WHERE number = ?",
                    [migration.checksum, migration.number],
                )
                log.info(
                    "migration %03d %s: record brought to its text",
                    migration.number,
                    migration.name,
                )
            elif applied[migration.number] != migration.checksum:
                raise MigrationError(
                    f"migration {migration.number} ({migration.name}) was changed after it was "
                    "applied; add a new migration instead"
                )
            continue
        with transaction(con):
            con.execute(migration.sql)
            con.execute(
                "INSERT INTO _migrations (number, name, checksum) VALUES (?, ?, ?)",
                [migration.number, migration.name, migration.checksum],
            )
        done.append(migration.number)
        log.info("migration %03d %s applied", migration.number, migration.name)
    return done


def applied_numbers(con: duckdb.DuckDBPyConnection) -> set[int]:
    """The migration numbers recorded in ``con``'s ``_migrations`` (none when it is absent)."""
    exists = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = '_migrations'"
    ).fetchone()
    if not exists or not exists[0]:
        return set()
    return {int(n) for (n,) in con.execute("SELECT number FROM _migrations").fetchall()}


@dataclass(frozen=True, slots=True)
class Repeatable:
    """A file of views and macros, run again (all of them dropped first) when its text changes."""

    name: str
    sql: str

    @property
    def checksum(self) -> str:
        """SHA-256 of the file's SQL, compared with the one recorded when it was last run."""
        return hashlib.sha256(self.sql.strip().encode()).hexdigest()


_REPEATABLES_TABLE = (
    "CREATE TABLE IF NOT EXISTS _repeatable_migrations (name VARCHAR PRIMARY KEY, "
    "checksum VARCHAR NOT NULL, applied_at TIMESTAMPTZ DEFAULT current_timestamp)"
)


def views_current(con: duckdb.DuckDBPyConnection, views: Repeatable) -> bool:
    """Whether ``con`` last ran exactly this text of ``views`` (works on a read-only one)."""
    exists = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = '_repeatable_migrations'"
    ).fetchone()
    if not exists or not exists[0]:
        return False
    row = con.execute(
        "SELECT checksum FROM _repeatable_migrations WHERE name = ?", [views.name]
    ).fetchone()
    return row is not None and row[0] == views.checksum


def apply_views(con: duckdb.DuckDBPyConnection, views: Repeatable) -> bool:
    """Unless ``con`` already ran this text of ``views``: drop every view and macro of its
    schema and run the file (in the order it defines them), in one transaction, and record its
    checksum. True when it ran."""
    con.execute(_REPEATABLES_TABLE)
    if views_current(con, views):
        return False
    with transaction(con):
        for (name,) in con.execute(
            "SELECT view_name FROM duckdb_views() WHERE NOT internal AND NOT temporary "
            "AND database_name = current_database() AND schema_name = current_schema()"
        ).fetchall():
            con.execute(f'DROP VIEW "{name}"')
        for name, kind in con.execute(
            "SELECT DISTINCT function_name, function_type FROM duckdb_functions() "
            "WHERE NOT internal AND function_type IN ('macro', 'table_macro') "
            "AND database_name = current_database() AND schema_name = current_schema()"
        ).fetchall():
            con.execute(f'DROP MACRO {"TABLE " if kind == "table_macro" else ""}"{name}"')
        con.execute(views.sql)
        con.execute(
            "INSERT OR REPLACE INTO _repeatable_migrations (name, checksum, applied_at) "
            "VALUES (?, ?, current_timestamp)",
            [views.name, views.checksum],
        )
    log.info("repeatable %s applied", views.name)
    return True
