"""Reconciliation: run the warehouse views for an as-of date, export them, summarise.

`reconcile()` opens the warehouse read-only just long enough to stream each view
(`schemas/warehouse.sql`: funding, sheet_vs_service, balance_movement, rollforward,
rollforward_movements,
distribution_tieout, exceptions) into typed
Parquet files; everything after — the summary and the workbook — reads those files, so the
warehouse is free again while the workbook is written.

Longer than ~400 lines because the run, its summary and where its reports are filed (by as-of,
`latest`) are one contract that the CLI, the flows and the period close rely on together.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

import duckdb

from fundpipe.arrowpandas import spare_pandas
from fundpipe.cents import format_cents
from fundpipe.config import Settings
from fundpipe.reconcile.lifecycle import Lifecycle, track
from fundpipe.reconcile.periods import PeriodState, period_of, period_state
from fundpipe.reconcile.tabs import SHEET_LAYOUT, SHEETS, tie_out_lines
from fundpipe.reports.headers import kind_words
from fundpipe.reports.workbook import SheetSource, WorkbookSummary, export_query, write_workbook
from fundpipe.warehouse.connection import connect
from fundpipe.warehouse.file import Warehouse

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["VIEWS", "ReconcileResult", "ReconcileSummary", "export_views", "reconcile"]

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


@dataclass(frozen=True, slots=True)
class ReconcileSummary:
    """The run's facts, totals and exception counts (what the CLI table and Summary sheet show)."""

    as_of: date
    run_at: datetime
    organization: str
    last_sync_id: str | None
    last_sync_at: datetime | None
    vehicles: int
    vehicles_short: int
    available_cents: int
    obligations_cents: int
    shortfall_cents: int
    unexplained_cents: int
    sheet_rows: int
    service_payments: int
    payments_ok: int
    exception_counts: dict[str, int] = field(default_factory=dict)
    #: Exceptions open after this run (acknowledged ones are not counted) and acknowledged.
    open_exceptions: int = 0
    acknowledged_exceptions: int = 0
    #: The distribution tie-out's Total row: (payments, cents) for sheet, service, disbursed,
    #: failed, cancelled, outstanding; and how many distributions there are and do not tie.
    tie_out: dict[str, tuple[int, int]] = field(default_factory=dict)
    distributions: int = 0
    distributions_not_tying: int = 0
    #: Reconciling items open (depository accounts, this month's and carried) and their dollars,
    #: as the Roll-forward lists and totals them.
    reconciling_items: int = 0
    reconciling_cents: int = 0
    #: The zone the as-of date is read in (the books at the end of `as_of` there).
    reporting_timezone: str = "UTC"
    #: Reconciling items smaller than this (absolute cents) are listed but open no exception.
    materiality_cents: int = 0
    #: True for an as-of before the run's own date: the run only read (the exception log as of
    #: that day, nothing changed).
    historical: bool = False
    #: Vehicles with no balance seen by the as-of date ("no balance yet").
    vehicles_without_balance: int = 0
    #: Failed payments not cancelled or paid again (still owed), and staged ones past due.
    failed_owed_cents: int = 0
    past_due_cents: int = 0
    #: The as-of date's period (month): open, or closed (prepared by, reviewed by, manifest),
    #: as it stood at the knowledge time.
    period: PeriodState | None = None
    #: The organization's name (its FUNDPIPE_ORGS `name` or the service's organization read);
    #: None: only its id (`organization`) is known.
    organization_name: str | None = None
    #: The knowledge time: the report shows what fundpipe knew at this instant (a run for today:
    #: its own clock; a past as-of: the end of that day; `--as-known-at`: the time given).
    known_at: datetime | None = None

    @property
    def exceptions(self) -> int:
        """Every exception, whatever its kind."""
        return sum(self.exception_counts.values())


@dataclass(frozen=True, slots=True)
class ReconcileResult:
    """Where a reconciliation wrote its reports, and its summary."""

    summary: ReconcileSummary
    out_dir: Path
    parquet: dict[str, Path]
    rows: dict[str, int]
    workbook: Path
    sheets: list[str]
    #: What this run did to the exception log: opened, resolved, still open (with ids).
    lifecycle: Lifecycle | None = None

    def frame(self, view: str) -> pd.DataFrame:
        """One view's rows as a DataFrame (read from its Parquet file)."""
        import pandas as pd

        return pd.read_parquet(self.parquet[view])


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


def _last_sync(
    con: duckdb.DuckDBPyConnection, as_of: date, zone: str, known_at: datetime | None = None
) -> tuple[str | None, datetime | None]:
    """The last sync that started by the knowledge time (the one the report reads)."""
    set_point_in_time(con, as_of, timezone=zone, known_at=known_at)
    row = con.execute(
        "SELECT sync_id, finished_at FROM syncs WHERE finished_at IS NOT NULL "
        "AND started_at < reconcile_cutoff() ORDER BY finished_at DESC LIMIT 1"
    ).fetchone()
    return (str(row[0]), row[1]) if row else (None, None)


def summarise(
    parquet: dict[str, Path],
    *,
    as_of: date,
    run_at: datetime,
    last_sync: tuple[str | None, datetime | None],
    organization: str = "",
) -> ReconcileSummary:
    """Totals and exception counts, computed from the exported Parquet files."""
    con = connect()  # in-memory: a query over the exported Parquet files
    try:

        def one(sql: str) -> tuple[int, ...]:
            row = con.execute(sql).fetchone()
            assert row is not None
            return tuple(int(v or 0) for v in row)

        funding = str(parquet["funding"])
        vehicles, short, available, obligations, shortfall, no_balance, failed, past_due = one(
            "SELECT count(*), count(*) FILTER (WHERE shortfall_cents > 0), sum(available_cents), "
            "sum(obligations_cents), sum(shortfall_cents), "
            "count(*) FILTER (WHERE available_cents IS NULL), sum(failed_owed_cents), "
            f"sum(past_due_cents) FROM read_parquet('{_q(funding)}')"
        )
        open_, acknowledged = one(
            "SELECT count(*) FILTER (WHERE state IS DISTINCT FROM 'acknowledged'), "
            "count(*) FILTER (WHERE state = 'acknowledged') "
            f"FROM read_parquet('{_q(str(parquet['exceptions']))}')"
        )
        # the Roll-forward's own totals: this month's unexplained (only depository accounts
        # have any: brokerage moves with the market) and the reconciling items open, carried
        # ones included — the figures of its Total row, and the items it lists
        unexplained, reconciling, reconciling_cents = one(
            "SELECT sum(unexplained_cents), "
            "count(*) FILTER (WHERE unexplained_cents <> 0) + coalesce(sum(carried_items), 0), "
            "sum(reconciling_items_cents) "
            f"FROM read_parquet('{_q(str(parquet['rollforward']))}')"
        )
        sheet_rows, service_payments, ok = one(
            "SELECT count(*) FILTER (WHERE match <> 'extra'), "
            "count(*) FILTER (WHERE match NOT IN ('missing')), count(*) FILTER (WHERE match = 'ok') "
            f"FROM read_parquet('{_q(str(parquet['sheet_vs_service']))}')"
        )
        tieout = f"read_parquet('{_q(str(parquet['distribution_tieout']))}')"
        parts = ("sheet", "service", "disbursed", "failed", "cancelled", "outstanding")
        total = one(
            "SELECT "
            + ", ".join(f"{p}_payments, {p}_cents" for p in parts)
            + f" FROM {tieout} WHERE is_total"
        )
        tie_out = {p: (total[2 * i], total[2 * i + 1]) for i, p in enumerate(parts)}
        distributions, not_tying = one(
            f"SELECT count(*), count(*) FILTER (WHERE NOT ties) FROM {tieout} WHERE NOT is_total"
        )
        counts = {
            str(kind): int(n)
            for kind, n in con.execute(
                "SELECT kind, count(*) FROM "
                f"read_parquet('{_q(str(parquet['exceptions']))}') GROUP BY kind ORDER BY kind"
            ).fetchall()
        }
    finally:
        con.close()
    return ReconcileSummary(
        as_of=as_of,
        run_at=run_at,
        organization=organization,
        last_sync_id=last_sync[0],
        last_sync_at=last_sync[1],
        vehicles=vehicles,
        vehicles_short=short,
        available_cents=available,
        obligations_cents=obligations,
        shortfall_cents=shortfall,
        unexplained_cents=unexplained,
        sheet_rows=sheet_rows,
        service_payments=service_payments,
        payments_ok=ok,
        exception_counts=counts,
        tie_out=tie_out,
        distributions=distributions,
        distributions_not_tying=not_tying,
        reconciling_items=reconciling,
        reconciling_cents=reconciling_cents,
        open_exceptions=open_,
        acknowledged_exceptions=acknowledged,
        vehicles_without_balance=no_balance,
        failed_owed_cents=failed,
        past_due_cents=past_due,
    )


def _q(path: str) -> str:
    return path.replace("'", "''")


def workbook_summary(
    summary: ReconcileSummary,
    out_dir: Path,
    *,
    prepared_by: str | None = None,
    reviewed_by: str | None = None,
) -> WorkbookSummary:
    """What the workbook's Summary sheet shows for `summary`; `prepared_by` / `reviewed_by` fill
    its sign-off block (None: the period's, as it stood at the knowledge time; a blank line to
    sign on when nobody did)."""
    sync_at = summary.last_sync_at.isoformat() if summary.last_sync_at else "never"
    named = summary.organization_name or summary.organization
    ids = (
        [("Organization id", summary.organization)]
        if summary.organization and summary.organization != named
        else []
    )
    period = summary.period
    known = summary.known_at.astimezone(UTC).isoformat() if summary.known_at else "the as-of's end"
    return WorkbookSummary(
        organization=named,
        as_of=summary.as_of.isoformat(),
        prepared_by=prepared_by or (period.prepared_by if period else None),
        reviewed_by=reviewed_by or (period.reviewed_by if period else None),
        prepared_on=_on(period.prepared_at if period else None),
        reviewed_on=_on(period.reviewed_at if period else None),
        run_facts=[
            *ids,
            ("As of", summary.as_of.isoformat()),
            ("Reporting timezone", summary.reporting_timezone),
            (
                "Materiality",
                f"{format_cents(summary.materiality_cents)}: a reconciling item below it is "
                "listed on the Roll-forward but opens no exception"
                if summary.materiality_cents
                else "$0.00: every reconciling item is an exception",
            ),
            (
                "Period",
                f"{summary.period.period}: {summary.period.describe()}"
                if summary.period
                else period_of(summary.as_of),
            ),
            (
                "Point in time",
                "a past as-of: the books at the end of that day as fundpipe knew them at the "
                "knowledge time below (this run changed nothing)"
                if summary.historical
                else "today: this run updated the exception log",
            ),
            ("Run at (UTC)", summary.run_at.astimezone(UTC).isoformat(timespec="seconds")),
            ("Known at (UTC)", known),
            ("Last sync", summary.last_sync_id or "none"),
            ("Last sync finished (UTC)", sync_at),
            ("Parquet files", str(out_dir)),
        ],
        totals_cents=[
            ("Depository available", summary.available_cents),
            ("Open obligations", summary.obligations_cents),
            ("Failed payments still owed", summary.failed_owed_cents),
            ("Staged payments past due", summary.past_due_cents),
            ("Shortfall", summary.shortfall_cents),
            ("Unexplained this month (Roll-forward)", summary.unexplained_cents),
            ("Reconciling items open, incl. carried (Roll-forward)", summary.reconciling_cents),
        ],
        counts=[
            ("Vehicles", summary.vehicles),
            ("Vehicles short of funds", summary.vehicles_short),
            ("Vehicles with no balance yet", summary.vehicles_without_balance),
            ("Sheet rows (ledger)", summary.sheet_rows),
            ("Service payments", summary.service_payments),
            ("Payments matching", summary.payments_ok),
            ("Reconciling items open", summary.reconciling_items),
            ("Distributions", summary.distributions),
            ("Distributions not tying out", summary.distributions_not_tying),
        ],
        notes=[
            "Notes on figures that are not what their name may suggest:",
            "Every figure above is the total of the sheet it summarizes: the unexplained and "
            "the reconciling items are the Roll-forward's Total row (credits positive, debits "
            "negative; Reconciling items open counts them), the money of funding the Funding "
            "sheet's, the tie-out the Tie-out's. Only depository accounts have unexplained "
            "differences: brokerage accounts move with the market (the Roll-forward's Market "
            "movement; the Balances sheet lists every account's difference from the service's "
            "month-end total).",
            "Open obligations are service payments not yet disbursed, failed or cancelled, "
            "whatever their date. Failed payments still owed are failed payments not cancelled "
            "or paid again (a later payment of the same amount to the same investor from the "
            "same vehicle); the shortfall counts both. A vehicle with no balance seen by the "
            "as-of date shows no available amount (no balance yet), never $0 or a shortfall.",
            "Every figure is as fundpipe knew it at the end of the as-of date in the reporting "
            "timezone: a fact synced later (a payment executed late that evening) counts from "
            "the day it was synced, so re-running a past as-of gives this report again.",
            "Service payments counts each payment at the service once, however many sheet rows "
            "(re-saved copies of a file) point at it; Sheet rows (ledger) counts those payments "
            "and the rows sent that the service does not have. Rows of rejected, refused or "
            "conflicting files are their file's exception, not a payment.",
            "Exceptions by kind count every current problem; Open leaves out the ones a person "
            "acknowledged (fundpipe exceptions list --state acknowledged).",
            "Times are UTC unless a header says otherwise; payment dates are the distribution's "
            "local date.",
        ],
        tie_out=tie_out_lines(summary.tie_out),
        tie_out_title="Distribution tie-out (all distributions)",
        exception_counts=[
            *((kind_words(kind), n) for kind, n in summary.exception_counts.items()),
            ("Total", summary.exceptions),
            ("Open (not acknowledged)", summary.open_exceptions),
            ("Acknowledged", summary.acknowledged_exceptions),
        ],
    )


def _on(at: datetime | None) -> str | None:
    """A sign-off date: the day (UTC) and time of a decision."""
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if at else None


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
    source, target = _q(str(exceptions)), _q(str(staged))
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


def run_folder(reports: Path, as_of: date, run_at: datetime) -> Path:
    """`reports/<as-of>/<run time>Z` (run time in UTC): reports are filed by the date they are
    as of, each run in its own folder (a suffix when it already exists)."""
    at = run_at.astimezone(UTC)
    folder = reports / as_of.isoformat() / at.strftime("%Y%m%dT%H%M%SZ")
    n = 1
    while folder.exists():
        n += 1
        folder = reports / as_of.isoformat() / f"{at.strftime('%Y%m%dT%H%M%SZ')}-{n}"
    return folder


def latest_as_of(reports: Path) -> date | None:
    """The as-of date `reports/latest` points at (None when there is no latest yet)."""
    link = reports / "latest"
    if not link.is_symlink():
        return None
    try:
        return date.fromisoformat(link.readlink().parts[0])
    except (ValueError, IndexError):
        return None


def point_latest(reports: Path, out_dir: Path) -> None:
    """Point `reports/latest` at `out_dir` (a relative symlink, replaced atomically)."""
    link = reports / "latest"
    staged = reports / f".latest-{os.getpid()}"
    staged.unlink(missing_ok=True)
    staged.symlink_to(out_dir.relative_to(reports), target_is_directory=True)
    staged.replace(link)


def _organization(con: duckdb.DuckDBPyConnection, settings: Settings) -> str:
    """The organization the reports are for: the settings' id, else the vehicles' own."""
    if settings.service.org_id:
        return settings.service.org_id
    row = con.execute(
        "SELECT organization FROM vehicles WHERE organization IS NOT NULL "
        "GROUP BY organization ORDER BY count(*) DESC, organization LIMIT 1"
    ).fetchone()
    return str(row[0]) if row else ""


def reconcile(
    settings: Settings,
    *,
    as_of: date | None = None,
    organization: str | None = None,
    out_dir: Path | None = None,
    clock: Callable[[], datetime] | None = None,
    warehouse: Warehouse | None = None,
    closing: PeriodState | None = None,
    known_at: datetime | None = None,
) -> ReconcileResult:
    """Run the views for `as_of` (default: today in the reporting timezone) and write Parquet +
    reconciliation.xlsx.

    `organization` names it on every page (default: `settings.org_id`, else the organization
    of the warehouse's vehicles).

    The views show the books at the end of `as_of` in `settings.reporting_timezone`, as fundpipe
    knew them then. Only a run for today (or a later date) changes the exception log; a past
    as-of only reads it, as it stood at the end of that day. `closing`: the period state the
    Summary states instead of the recorded one (the period close's own report).

    `known_at`: reproduce the report issued at that instant — the books at the end of `as_of`
    as fundpipe knew them then (the figures, the exception states, the period's state); such a
    run only reads. Each report folder records its knowledge time (`report.json`, and the
    Summary's "Known at").

    Reports go to `out_dir`, by default `<reports>/<as-of>/<run time>Z/` (one folder per run,
    never overwritten), with `<reports>/latest` pointing at the newest run of the newest as-of
    (never at a re-run of a past as-of); `<reports>` is `settings.reports_folder` (an
    organization's `data/reports/<org_id>`, or `<data_dir>/reports`).
    """
    spare_pandas()  # the views stay Arrow: pyarrow need not import pandas (typed values)
    run_at = (clock or (lambda: datetime.now(UTC)))()
    zone = settings.pipeline.reporting_timezone
    today = run_at.astimezone(ZoneInfo(zone)).date()
    as_of = as_of or today
    historical = as_of < today or known_at is not None
    default = out_dir is None
    if out_dir is None:
        out_dir = run_folder(settings.local.reports_folder, as_of, run_at)
    out_dir.mkdir(parents=True, exist_ok=True)
    warehouse = warehouse or Warehouse(settings.local.warehouse_file)
    # what the report knows: a run for today, everything up to its own clock; a past as-of,
    # everything by the end of that day; else the time asked for
    knowledge = known_at or (end_of_day(as_of, zone) if as_of < today else run_at)
    with warehouse.read() as con:
        rows = export_views(
            con,
            as_of,
            out_dir,
            timezone=zone,
            known_at=known_at,
            materiality_cents=settings.pipeline.materiality,
        )
        last_sync = _last_sync(con, as_of, zone, known_at)
        period = period_state(
            con,
            period_of(as_of),
            before=known_at + timedelta(microseconds=1) if known_at else end_of_day(as_of, zone),
        )
        organization = organization or _organization(con, settings)
    parquet = {view: out_dir / f"{view}.parquet" for view in VIEWS}
    lifecycle: Lifecycle | None = None
    if historical:  # a past as-of (or a report as issued) only reads
        with warehouse.read() as con:
            with_states(con, parquet["exceptions"], as_of, timezone=zone, known_at=known_at)
    else:
        with warehouse.write() as con:
            lifecycle = track(
                con,
                f"read_parquet('{_q(str(parquet['exceptions']))}')",
                as_of=as_of,
                now=run_at,
            )
            with_states(con, parquet["exceptions"], as_of, timezone=zone)
    summary = replace(
        summarise(
            parquet, as_of=as_of, run_at=run_at, last_sync=last_sync, organization=organization
        ),
        reporting_timezone=zone,
        materiality_cents=settings.pipeline.materiality,
        organization_name=settings.service.org_name,
        historical=historical,
        period=closing if closing is not None else period,
        known_at=knowledge,
    )
    (out_dir / "report.json").write_text(
        json.dumps(
            {
                "as_of": as_of.isoformat(),
                "known_at": knowledge.astimezone(UTC).isoformat(),
                "reporting_timezone": zone,
                "run_at": run_at.astimezone(UTC).isoformat(),
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    workbook = out_dir / "reconciliation.xlsx"
    sheets = write_workbook(
        workbook,
        # the sign-off block: who closed the period, as the knowledge time knew it; a closing
        # report names the folder its files are filed in (never the staging one)
        workbook_summary(
            summary, Path(closing.folder) if closing is not None and closing.folder else out_dir
        ),
        [SheetSource(name, parquet[view], **SHEET_LAYOUT.get(view, {})) for name, view in SHEETS],
    )
    newest = latest_as_of(settings.local.reports_folder)
    if default and not historical and (newest is None or as_of >= newest):
        point_latest(settings.local.reports_folder, out_dir)
    return ReconcileResult(
        summary=summary,
        out_dir=out_dir,
        parquet=parquet,
        rows=rows,
        workbook=workbook,
        sheets=sheets,
        lifecycle=lifecycle,
    )
