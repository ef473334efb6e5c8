"""The warehouse's views for one point in time → typed Parquet files.

:func:`export_views` sets the point in time (:func:`set_point_in_time`: the books at the end of
an as-of day, as fundpipe knew them at a knowledge time) and streams each view of
:data:`VIEWS` (`schemas/views.sql`) into `<view>.parquet`, computing the views the others read
once each (:data:`MATERIALISED`); :func:`with_states` adds each exported exception's state at the
knowledge time.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb

from fundpipe.reports import export_query

__all__ = [
    "MATERIALISED",
    "MEMORY_LIMIT",
    "VIEWS",
    "end_of_day",
    "export_views",
    "materialise",
    "set_point_in_time",
    "sql_literal",
    "with_states",
]


#: The views exported, with the order their rows are written in (None: the warehouse's order).
VIEWS: dict[str, str | None] = {
    "exceptions": 'kind, vehicle NULLS FIRST, object_id, source_file, "row"',
    "funding": "shortfall_cents DESC, vehicle",
    "balance_movement": "vehicle, type DESC, financial_account",
    "rollforward": "vehicle, type DESC, financial_account",
    "rollforward_movements": "vehicle, financial_account, kind, "
    "distribution_external_reference, distribution_id",
    # the distributions that do not tie first, the Total row last
    "distribution_tieout": "is_total, ties, payment_date NULLS LAST, "
    "distribution_external_reference, distribution_id",
    # exceptions first (a payment that is not ok), then by distribution and sheet row
    "sheet_vs_service": "match = 'ok', distribution_external_reference, \"row\", payment_id",
    "after_close_adjustments": "period, learned_at, payment_id",
}


#: DuckDB's memory ceiling while exporting; beyond it joins and sorts spill to a temporary
#: directory.
MEMORY_LIMIT = "4GB"


#: Views computed once per export, in dependency order, as temporary tables of the same name:
#: a temporary table shadows the view for the rest of the connection — inside other views'
#: bodies too — so `exceptions`, which reads most of them (some several times over, through
#: its layers of migrations), reads each once computed instead of planning and running the
#: whole stack again. `exceptions` itself comes last: its export asks for its columns first
#: (`export_query`), and planning its stack of layers twice cost more than running it once.
#: The temporary tables are dropped when the export ends; the views themselves
#: (schemas/warehouse.sql) are unchanged.
MATERIALISED = (
    "payments_effective",
    "as_of_ledger_files",
    "sheet_vs_service",
    "balances_as_of",
    "funding",
    "balance_movement",
    "rollforward_snapshots",
    "rollforward_movement_lines",
    "closed_periods",
    "rollforward_periods",
    "reconciling_items",
    "rollforward",
    "rollforward_movements",
    "distribution_tieout",
    "after_close_adjustments",
    "adjusted_payments",
    "superseded_files",
    "conflict_rows",
    "exceptions",
)


def set_point_in_time(
    con: duckdb.DuckDBPyConnection,
    as_of: date,
    *,
    timezone: str = "UTC",
    known_at: datetime | None = None,
    materiality_cents: int | None = None,
) -> None:
    """Make `con`'s views show the books at the end of `as_of` in `timezone` (valid time) as
    fundpipe knew them at `known_at`, everything recorded at that instant included (knowledge
    time; None: the end of `as_of`). A reconciling item smaller than `materiality_cents` is
    listed on the roll-forward but is no exception (None: as the connection has it)."""
    con.execute("SET VARIABLE as_of = ?", [as_of])
    con.execute("SET VARIABLE reporting_timezone = ?", [timezone])
    if materiality_cents is not None:
        con.execute("SET VARIABLE materiality_cents = ?", [materiality_cents])
    knowledge = None if known_at is None else known_at + timedelta(microseconds=1)
    con.execute("SET VARIABLE known_at = ?::TIMESTAMPTZ", [knowledge])


def end_of_day(day: date, timezone: str) -> datetime:
    """The first instant after `day` in `timezone`."""
    return datetime.combine(day + timedelta(days=1), time(), ZoneInfo(timezone))


def export_views(
    con: duckdb.DuckDBPyConnection,
    as_of: date,
    out_dir: Path,
    *,
    timezone: str = "UTC",
    known_at: datetime | None = None,
    materiality_cents: int = 0,
) -> dict[str, int]:
    """Stream every view for `as_of` (the end of that day in `timezone`, as known at
    `known_at`) into `out_dir/<view>.parquet`; return rows per view. A reconciling item
    smaller than `materiality_cents` is listed on the roll-forward but is no exception."""
    set_point_in_time(
        con, as_of, timezone=timezone, known_at=known_at, materiality_cents=materiality_cents
    )
    con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
    rows: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="fundpipe-reconcile-") as spill:
        con.execute("SET temp_directory = ?", [spill])
        with _materialised(con):
            for view, order in VIEWS.items():
                query = f"SELECT * FROM {view}" + (f" ORDER BY {order}" if order else "")
                rows[view] = export_query(con, query, out_dir / f"{view}.parquet")
    return rows


@contextmanager
def _materialised(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Within the block, each exported view (VIEWS) that is in MATERIALISED is a temporary table
    holding the view's rows for the connection's point in time (set before); after it, the views
    again.

    The views only others read are dropped once every table is made, before any export: the
    exports read their own tables, and the largest one's sort (`sheet_vs_service`, the run's peak
    of memory) may then reuse what they held.
    """
    database = con.execute("SELECT current_database()").fetchall()[0][0]
    source = '"' + str(database).replace('"', '""') + '".main'
    made: list[str] = []
    try:
        for view in MATERIALISED:
            materialise(con, f"{source}.{view}", view)
            made.append(view)
        for view in [v for v in made if v not in VIEWS]:
            con.execute(f"DROP TABLE temp.main.{view}")
            made.remove(view)
        yield
    finally:
        for view in reversed(made):
            con.execute(f"DROP TABLE IF EXISTS temp.main.{view}")


def materialise(con: duckdb.DuckDBPyConnection, source: str, view: str) -> None:
    """Compute `source` (a qualified view) once into the temporary table `view`."""
    con.execute(f"CREATE TEMPORARY TABLE {view} AS SELECT * FROM {source}")


def with_states(
    con: duckdb.DuckDBPyConnection,
    exceptions: Path,
    as_of: date,
    *,
    timezone: str = "UTC",
    known_at: datetime | None = None,
) -> None:
    """Rewrite the exported exceptions with their state at the knowledge time (from the events
    recorded by then; default the end of `as_of`): state, first seen, age, who acknowledged, the
    note, the owner."""
    staged = exceptions.with_suffix(".staged.parquet")
    source, target = sql_literal(str(exceptions)), sql_literal(str(staged))
    set_point_in_time(con, as_of, timezone=timezone, known_at=known_at)
    con.execute(
        f"""
        COPY (
            SELECT x.*, l.state, l.first_seen, (CAST(? AS DATE) - l.first_seen) AS age_days,
                   l.acknowledged_by, l.acknowledged_at, l.note, l.owner,
                   l.acknowledged_amount_cents
            FROM read_parquet('{source}') x
            LEFT JOIN exception_states(reconcile_cutoff()) l ON l.id = x.exception_id
            ORDER BY {VIEWS["exceptions"]}
        ) TO '{target}' (FORMAT parquet, COMPRESSION zstd)
        """,
        [as_of],
    )
    staged.replace(exceptions)


def sql_literal(path: str) -> str:
    """`path` as the inside of a SQL string literal (its quotes doubled)."""
    return path.replace("'", "''")
