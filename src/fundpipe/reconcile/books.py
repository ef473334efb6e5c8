"""What a report shows, as one fingerprint: a reconciliation for today whose books have not
changed since the newest report of the same reporting day writes no new folder.

The fingerprint is a hash over every table of the warehouse a report reads, without the columns
that only say when a sync saw a row (`last_seen_at`, `seen_at`, `sync_id`, …) and without the
tables that only record that a sync or a run happened (`syncs`, `sync_lists`, `exception_runs`,
the migrations' own). Balances are appended at every sync: only each account's newest snapshot
counts, by its figures. The views' text is in it (`_repeatable_migrations`), and so are the
settings a report states (reporting timezone, materiality, the organization's name) and
fundpipe's version. Rows are hashed one by one and summed, so the order they are stored in does
not count and a duplicate row does.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb

from fundpipe.config import Settings

__all__ = ["books_fingerprint", "unchanged_report"]

#: tables that only record that a sync or a run took place, never what a report shows
_BOOKKEEPING = frozenset({"syncs", "sync_lists", "exception_runs", "balance_snapshots"})
#: columns that only say when (or by which sync) a row was seen again
_SEEN = frozenset({"last_seen_at", "seen_at", "sync_id", "last_sync_id", "first_seen_sync_id"})


def _tables(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    rows = con.execute(
        "SELECT c.table_name, c.column_name FROM information_schema.columns c "
        "JOIN information_schema.tables t USING (table_schema, table_name) "
        "WHERE t.table_type = 'BASE TABLE' AND c.table_schema = 'main' "
        "ORDER BY c.table_name, c.ordinal_position"
    ).fetchall()
    tables: dict[str, list[str]] = {}
    for table, column in rows:
        if table in _BOOKKEEPING or (table.startswith("_") and table != "_repeatable_migrations"):
            continue
        if column not in _SEEN:
            tables.setdefault(table, []).append(column)
    return tables


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def books_fingerprint(con: duckdb.DuckDBPyConnection, settings: Settings) -> str:
    """The fingerprint of what a report for today would show (see the module docstring)."""
    from fundpipe import __version__

    parts = []
    for table, columns in _tables(con).items():
        cols = ", ".join(_quoted(c) for c in columns)
        parts.append(
            f"SELECT {table!r} AS t, count(*) AS n, "
            f"coalesce(sum(hash(struct_pack({cols}))::HUGEINT), 0) AS h FROM {_quoted(table)}"
        )
    parts.append(
        "SELECT 'balances' AS t, count(*) AS n, "
        "coalesce(sum(hash(financial_account, vehicle, type, total_cents, available_cents, "
        "total_end_of_last_month_cents, currency, account_updated_at)::HUGEINT), 0) AS h "
        "FROM (SELECT * FROM balance_snapshots "
        "QUALIFY row_number() OVER (PARTITION BY financial_account ORDER BY seen_at DESC) = 1)"
    )
    found = con.execute(" UNION ALL ".join(parts) + " ORDER BY t").fetchall()
    pipeline = settings.pipeline
    stated = [
        __version__,
        pipeline.reporting_timezone,
        pipeline.materiality,
        settings.service.org_name,
        settings.service.org_id,
        [[str(t), int(n), str(h)] for t, n, h in found],
    ]
    return hashlib.sha256(json.dumps(stated, default=str).encode()).hexdigest()


def unchanged_report(reports: Path, as_of: str, fingerprint: str) -> Path | None:
    """The folder `reports/latest` points at when it is a report for `as_of` (ISO) built from
    books with this `fingerprint`, its workbook and files still there; else None."""
    link = reports / "latest"
    if not link.is_symlink():
        return None
    folder = link.resolve()
    try:
        issued = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if issued.get("as_of") != as_of or issued.get("books") != fingerprint:
        return None
    if not (folder / "reconciliation.xlsx").is_file():
        return None
    return folder
