"""Reconciliation: run the warehouse views for an as-of date, export them, summarise.

`reconcile()` opens the warehouse read-only just long enough to stream each view
(`schemas/warehouse.sql`: funding, sheet_vs_service, balance_movement, rollforward,
distribution_tieout, exceptions) into typed
Parquet files; everything after — the summary and the workbook — reads those files, so the
warehouse is free again while the workbook is written.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from fundpipe.config import Settings
from fundpipe.reconcile.lifecycle import Lifecycle, track
from fundpipe.reconcile.tabs import SHEET_LAYOUT, SHEETS, tie_out_lines
from fundpipe.reports.headers import kind_words
from fundpipe.reports.workbook import SheetSource, WorkbookSummary, export_query, write_workbook
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
    # the distributions that do not tie first, the Total row last
    "distribution_tieout": "is_total, ties, payment_date NULLS LAST, "
    "distribution_external_reference, distribution_id",
    # exceptions first (a payment that is not ok), then by distribution and sheet row
    "sheet_vs_service": "match = 'ok', distribution_external_reference, \"row\", payment_id",
}

#: DuckDB's memory ceiling while exporting; beyond it joins and sorts spill to a temporary
#: directory.
MEMORY_LIMIT = "4GB"


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
    #: Reconciling items open (depository accounts, this month's and carried) and their dollars
    #: (the sum of their absolute values).
    reconciling_items: int = 0
    reconciling_cents: int = 0

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


def export_views(con: duckdb.DuckDBPyConnection, as_of: date, out_dir: Path) -> dict[str, int]:
    """Stream every view for `as_of` into `out_dir/<view>.parquet`; return rows per view."""
    con.execute("SET VARIABLE as_of = ?", [as_of])
    con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
    rows: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="fundpipe-reconcile-") as spill:
        con.execute("SET temp_directory = ?", [spill])
        for view, order in VIEWS.items():
            query = f"SELECT * FROM {view}" + (f" ORDER BY {order}" if order else "")
            rows[view] = export_query(con, query, out_dir / f"{view}.parquet")
    return rows


def _last_sync(con: duckdb.DuckDBPyConnection) -> tuple[str | None, datetime | None]:
    row = con.execute(
        "SELECT sync_id, finished_at FROM syncs WHERE finished_at IS NOT NULL "
        "ORDER BY finished_at DESC LIMIT 1"
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
    con = duckdb.connect()
    try:

        def one(sql: str) -> tuple[int, ...]:
            row = con.execute(sql).fetchone()
            assert row is not None
            return tuple(int(v or 0) for v in row)

        funding = str(parquet["funding"])
        vehicles, short, available, obligations, shortfall = one(
            "SELECT count(*), count(*) FILTER (WHERE shortfall_cents > 0), sum(available_cents), "
            f"sum(obligations_cents), sum(shortfall_cents) FROM read_parquet('{_q(funding)}')"
        )
        (unexplained,) = one(
            # only depository movements are a payment matter (brokerage moves with the market)
            "SELECT sum(abs(unexplained_cents)) "
            f"FROM read_parquet('{_q(str(parquet['balance_movement']))}') "
            "WHERE type = 'depository'"
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
        reconciling, reconciling_cents = one(
            "SELECT count(*), sum(abs(amount_cents)) "
            f"FROM read_parquet('{_q(str(parquet['exceptions']))}') "
            "WHERE kind = 'unexplained_balance'"
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
    its sign-off block (None: a blank line to sign on)."""
    sync_at = summary.last_sync_at.isoformat() if summary.last_sync_at else "never"
    return WorkbookSummary(
        organization=summary.organization,
        as_of=summary.as_of.isoformat(),
        prepared_by=prepared_by,
        reviewed_by=reviewed_by,
        run_facts=[
            ("As of", summary.as_of.isoformat()),
            ("Run at (UTC)", summary.run_at.astimezone(UTC).isoformat(timespec="seconds")),
            ("Last sync", summary.last_sync_id or "none"),
            ("Last sync finished (UTC)", sync_at),
            ("Parquet files", str(out_dir)),
        ],
        totals_cents=[
            ("Depository available", summary.available_cents),
            ("Open obligations", summary.obligations_cents),
            ("Shortfall", summary.shortfall_cents),
            ("Unexplained balance movement (abs)", summary.unexplained_cents),
            ("Reconciling items open, incl. carried (abs)", summary.reconciling_cents),
        ],
        counts=[
            ("Vehicles", summary.vehicles),
            ("Vehicles short of funds", summary.vehicles_short),
            ("Sheet rows (ledger)", summary.sheet_rows),
            ("Service payments", summary.service_payments),
            ("Payments matching", summary.payments_ok),
            ("Reconciling items open", summary.reconciling_items),
            ("Distributions", summary.distributions),
            ("Distributions not tying out", summary.distributions_not_tying),
        ],
        notes=[
            "Notes on figures that are not what their name may suggest:",
            "Unexplained balance movement counts depository accounts only: brokerage accounts "
            "move with the market, so their differences are listed on the Balances sheet "
            "(column Unexplained (USD)) but are not unexplained payments.",
            "Open obligations are service payments not yet disbursed, failed or cancelled, "
            "whatever their date.",
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


def with_states(con: duckdb.DuckDBPyConnection, exceptions: Path, as_of: date) -> None:
    """Rewrite the exported exceptions with their lifecycle: state, first seen, age, who acked."""
    staged = exceptions.with_suffix(".staged.parquet")
    source, target = _q(str(exceptions)), _q(str(staged))
    con.execute(
        f"""
        COPY (
            SELECT x.*, l.state, l.first_seen, (CAST(? AS DATE) - l.first_seen) AS age_days,
                   l.acknowledged_by, l.acknowledged_at, l.note,
                   -- who deals with it: the log keeps no owner yet (issue 21 adds one)
                   NULL::VARCHAR AS owner
            FROM read_parquet('{source}') x
            LEFT JOIN exception_log l ON l.id = x.exception_id
            ORDER BY {VIEWS["exceptions"]}
        ) TO '{target}' (FORMAT parquet, COMPRESSION zstd)
        """,
        [as_of],
    )
    staged.replace(exceptions)


def run_folder(reports: Path, run_at: datetime) -> Path:
    """`reports/<date>/<HHMMSS>Z` for a run at `run_at` (UTC); a suffix when it already exists."""
    at = run_at.astimezone(UTC)
    folder = reports / at.date().isoformat() / at.strftime("%H%M%SZ")
    n = 1
    while folder.exists():
        n += 1
        folder = reports / at.date().isoformat() / f"{at.strftime('%H%M%SZ')}-{n}"
    return folder


def point_latest(reports: Path, out_dir: Path) -> None:
    """Point `reports/latest` at `out_dir` (a relative symlink, replaced atomically)."""
    link = reports / "latest"
    staged = reports / f".latest-{os.getpid()}"
    staged.unlink(missing_ok=True)
    staged.symlink_to(out_dir.relative_to(reports), target_is_directory=True)
    staged.replace(link)


def _organization(con: duckdb.DuckDBPyConnection, settings: Settings) -> str:
    """The organization the reports are for: the settings' id, else the vehicles' own."""
    if settings.org_id:
        return settings.org_id
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
) -> ReconcileResult:
    """Run the views for `as_of` (default: today, UTC) and write Parquet + reconciliation.xlsx.

    `organization` names it on every page (default: `settings.org_id`, else the organization
    of the warehouse's vehicles). Reports go to `out_dir`, by default `<reports>/<run date>/<run time>Z/` (one folder per run,
    never overwritten), with `<reports>/latest` pointing at the newest; `<reports>` is
    `settings.reports_folder` (an organization's `data/reports/<org_id>`, or `<data_dir>/reports`).
    """
    run_at = (clock or (lambda: datetime.now(UTC)))()
    as_of = as_of or run_at.astimezone(UTC).date()
    default = out_dir is None
    if out_dir is None:
        out_dir = run_folder(settings.reports_folder, run_at)
    out_dir.mkdir(parents=True, exist_ok=True)
    warehouse = warehouse or Warehouse(settings.warehouse_file)
    with warehouse.read() as con:
        rows = export_views(con, as_of, out_dir)
        last_sync = _last_sync(con)
        organization = organization or _organization(con, settings)
    parquet = {view: out_dir / f"{view}.parquet" for view in VIEWS}
    with warehouse.write() as con:
        lifecycle = track(
            con,
            f"read_parquet('{_q(str(parquet['exceptions']))}')",
            as_of=as_of,
            now=run_at,
        )
        with_states(con, parquet["exceptions"], as_of)
    summary = replace(
        summarise(
            parquet, as_of=as_of, run_at=run_at, last_sync=last_sync, organization=organization
        ),
        open_exceptions=lifecycle.open,
        acknowledged_exceptions=lifecycle.acknowledged,
    )
    workbook = out_dir / "reconciliation.xlsx"
    sheets = write_workbook(
        workbook,
        workbook_summary(summary, out_dir),
        [SheetSource(name, parquet[view], **SHEET_LAYOUT.get(view, {})) for name, view in SHEETS],
    )
    if default:
        point_latest(settings.reports_folder, out_dir)
    return ReconcileResult(
        summary=summary,
        out_dir=out_dir,
        parquet=parquet,
        rows=rows,
        workbook=workbook,
        sheets=sheets,
        lifecycle=lifecycle,
    )
