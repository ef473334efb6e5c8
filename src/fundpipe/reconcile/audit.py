"""What an auditor takes away: the exception events, the period events and the syncs, as
Parquet and CSV, for a span of time.

`export_audit` writes them for `fundpipe audit export`; `write_events` is the same export on an
open connection, which the period close uses to put its month's events in the closed package.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

import duckdb

from fundpipe.config import Settings
from fundpipe.warehouse import Warehouse

__all__ = ["AUDIT_TABLES", "AuditExport", "export_audit", "span", "write_events"]

#: What is exported: (file stem, query over one span `[$start, $end)`, order).
AUDIT_TABLES: tuple[tuple[str, str], ...] = (
    (
        "exception_events",
        "SELECT * FROM exception_events WHERE event_at >= $start AND event_at < $end ORDER BY seq",
    ),
    (
        "period_events",
        "SELECT * FROM period_events WHERE event_at >= $start AND event_at < $end ORDER BY seq",
    ),
    (
        "syncs",
        "SELECT * FROM syncs WHERE started_at >= $start AND started_at < $end "
        "ORDER BY started_at, sync_id",
    ),
)


@dataclass(frozen=True, slots=True)
class AuditExport:
    """Where an audit export wrote its files, and how many rows each holds."""

    folder: Path
    start: datetime
    end: datetime
    rows: dict[str, int]
    files: tuple[Path, ...]


def write_events(
    con: duckdb.DuckDBPyConnection, out: Path, *, start: datetime, end: datetime
) -> dict[str, int]:
    """Write every table of `AUDIT_TABLES` for `[start, end)` into `out` as `<name>.parquet`
    and `<name>.csv`; return rows per table."""
    out.mkdir(parents=True, exist_ok=True)
    rows: dict[str, int] = {}
    params = {"start": start, "end": end}
    for name, query in AUDIT_TABLES:
        for suffix, options in (
            ("parquet", "FORMAT parquet, COMPRESSION zstd"),
            ("csv", "FORMAT csv, HEADER true"),
        ):
            target = str(out / f"{name}.{suffix}").replace("'", "''")
            con.execute(f"COPY ({query}) TO '{target}' ({options})", params)
        counted = con.execute(f"SELECT count(*) FROM ({query})", params).fetchone()
        rows[name] = int(counted[0]) if counted else 0
    return rows


def export_audit(settings: Settings, out: Path, *, start: datetime, end: datetime) -> AuditExport:
    """Export the organization's exception events, period events and syncs of `[start, end)`
    into `out` (Parquet and CSV each); the warehouse is only read."""
    if end <= start:
        raise ValueError(f"the span is empty: {start.isoformat()} is not before {end.isoformat()}")
    with Warehouse(settings.local.warehouse_file).read() as con:
        rows = write_events(con, out, start=start, end=end)
    files = tuple(
        out / f"{name}.{suffix}" for name, _ in AUDIT_TABLES for suffix in ("parquet", "csv")
    )
    return AuditExport(folder=out, start=start, end=end, rows=rows, files=files)


def span(
    first: date | None, last: date | None, timezone: str, *, now: datetime
) -> tuple[datetime, datetime]:
    """`[start of first, end of last)` in `timezone` (no first: the beginning; no last: now)."""
    from fundpipe.reconcile.views import end_of_day

    start = (
        end_of_day(date.fromordinal(first.toordinal() - 1), timezone)
        if first
        else datetime.fromisoformat("1970-01-01T00:00:00+00:00")
    )
    end = end_of_day(last, timezone) if last else now
    return start, end
