"""Ordered, recorded schema migrations for a DuckDB file (the warehouse's and the ledger's).

A schema file is split into `-- migration: NNN name` sections. Each section is applied once, in
order, in its own transaction, and recorded in `_migrations` with a checksum; an applied section
whose text later changes is refused rather than silently re-run (as `sqlite_utils/migrations.py`
does for SQLite).
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass

import duckdb

from fundpipe.warehouse.connection import transaction

__all__ = ["Migration", "MigrationError", "applied_numbers", "apply_migrations", "load_migrations"]

log = logging.getLogger(__name__)

_MIGRATION_HEADER = re.compile(r"^--\s*migration:\s*(\d+)\s+(.+?)\s*$", re.MULTILINE)


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
            if applied[migration.number] != migration.checksum:
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
