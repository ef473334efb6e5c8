"""A reconciliation's summary numbers, read from its exported Parquet files, and what the
workbook's Summary sheet shows of them.

:func:`summarise` → :class:`ReconcileSummary` (the CLI's table, the flows' artifacts, the
period close; :func:`filed_summary` for a report filed before, the desk's); :func:`workbook_summary` → the Summary sheet's `WorkbookSummary`.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import duckdb

from fundpipe.cents import format_cents
from fundpipe.config import Settings
from fundpipe.reconcile.export import set_point_in_time, sql_literal
from fundpipe.reconcile.folders import FiledReport
from fundpipe.reconcile.nightfiles import NightFile
from fundpipe.reconcile.periods import PeriodState, period_of, period_state
from fundpipe.reconcile.signoff import SignOff, signed_months
from fundpipe.reconcile.tabs import tie_out_lines
from fundpipe.reports import RejectedLine, WorkbookSummary
from fundpipe.vocabulary import kind_words
from fundpipe.warehouse import scratch

__all__ = [
    "ReconcileSummary",
    "filed_summary",
    "last_sync_of",
    "organization_of",
    "summarise",
    "workbook_summary",
]


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
    #: The files rejected (or in conflict) on the as-of date, oldest first.
    rejected_files: tuple[NightFile, ...] = ()
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
    #: Every month closed as the knowledge time knew it, each with its changes after sign-off
    #: (after-close adjustments nobody acknowledged), as known then.
    signed_months: tuple[SignOff, ...] = ()

    @property
    def exceptions(self) -> int:
        """Every exception, whatever its kind."""
        return sum(self.exception_counts.values())


def last_sync_of(
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
    con: duckdb.DuckDBPyConnection | None = None,
) -> ReconcileSummary:
    """Totals and exception counts, computed from the exported Parquet files (on ``con``, an
    open connection, when given; else on an in-memory one)."""
    with scratch() if con is None else nullcontext(con) as con:

        def one(sql: str) -> tuple[int, ...]:
            row = con.execute(sql).fetchone()
            assert row is not None
            return tuple(int(v or 0) for v in row)

        funding = str(parquet["funding"])
        vehicles, short, available, obligations, shortfall, no_balance, failed, past_due = one(
            "SELECT count(*), count(*) FILTER (WHERE shortfall_cents > 0), sum(available_cents), "
            "sum(obligations_cents), sum(shortfall_cents), "
            "count(*) FILTER (WHERE available_cents IS NULL), sum(failed_owed_cents), "
            f"sum(past_due_cents) FROM read_parquet('{sql_literal(funding)}')"
        )
        # each kind's count, and how many of them are acknowledged (the rest are open)
        by_kind = con.execute(
            "SELECT kind, count(*), count(*) FILTER (WHERE state = 'acknowledged') FROM "
            f"read_parquet('{sql_literal(str(parquet['exceptions']))}') GROUP BY kind ORDER BY kind"
        ).fetchall()
        counts = {str(kind): int(n) for kind, n, _ in by_kind}
        acknowledged = sum(int(a) for _, _, a in by_kind)
        open_ = sum(counts.values()) - acknowledged
        # the Roll-forward's own totals: this month's unexplained (only depository accounts
        # have any: brokerage moves with the market) and the reconciling items open, carried
        # ones included — the figures of its Total row, and the items it lists
        unexplained, reconciling, reconciling_cents = one(
            "SELECT sum(unexplained_cents), "
            "count(*) FILTER (WHERE unexplained_cents <> 0) + coalesce(sum(carried_items), 0), "
            "sum(reconciling_items_cents) "
            f"FROM read_parquet('{sql_literal(str(parquet['rollforward']))}')"
        )
        sheet_rows, service_payments, ok = one(
            "SELECT count(*) FILTER (WHERE match <> 'extra'), "
            "count(*) FILTER (WHERE match NOT IN ('missing')), count(*) FILTER (WHERE match = 'ok') "
            f"FROM read_parquet('{sql_literal(str(parquet['sheet_vs_service']))}')"
        )
        tieout = f"read_parquet('{sql_literal(str(parquet['distribution_tieout']))}')"
        parts = ("sheet", "service", "disbursed", "failed", "cancelled", "outstanding")
        # the Total row's figures and the distributions' counts, in one pass over the tab
        *total, distributions, not_tying = one(
            "SELECT "
            + ", ".join(
                f"first({p}_{x}) FILTER (WHERE is_total)"
                for p in parts
                for x in ("payments", "cents")
            )
            + ", count(*) FILTER (WHERE NOT is_total), "
            + f"count(*) FILTER (WHERE NOT is_total AND NOT ties) FROM {tieout}"
        )
        tie_out = {p: (total[2 * i], total[2 * i + 1]) for i, p in enumerate(parts)}
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


def _written(at: datetime) -> str:
    """An instant as a person writes it on a signed page: ``2026-12-01 21:35 UTC``."""
    return f"{at.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


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
    sync_at = _written(summary.last_sync_at) if summary.last_sync_at else "never"
    named = summary.organization_name or summary.organization
    ids = (
        [("Organization id", summary.organization)]
        if summary.organization and summary.organization != named
        else []
    )
    period = summary.period
    known = _written(summary.known_at) if summary.known_at else "the end of the as-of date"
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
            ("Run at", _written(summary.run_at)),
            ("Known at", known),
            ("Last sync finished", sync_at),
            # where this page's files are, whole (a relative path means nothing on paper)
            ("Parquet files", str(out_dir.resolve())),
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
        rejected_files=[
            RejectedLine(f.title, f.why, f.report_text) for f in summary.rejected_files
        ],
        rejected_title=f"Files rejected on {summary.as_of.isoformat()}",
        changed_after_signoff=_changed_after_signoff(summary.signed_months)
        if summary.signed_months
        else None,
        exception_counts=[
            *((kind_words(kind), n) for kind, n in summary.exception_counts.items()),
            ("Total", summary.exceptions),
            ("Open (not acknowledged)", summary.open_exceptions),
            ("Acknowledged", summary.acknowledged_exceptions),
        ],
    )


#: The adjustments listed per month on the Summary (the desk's close page lists them all).
_CHANGES_LISTED = 10


def _changed_after_signoff(months: tuple[SignOff, ...]) -> list[tuple[str, str]]:
    """The Summary's "changed after sign-off" lines: per closed month that changed, its count
    and sum, then its adjustments (payment, distribution, closed amount → now, when learned)."""
    lines: list[tuple[str, str]] = []
    for month in months:
        if not month.changed_after_signoff:
            continue
        state = month.state
        lines.append(
            (
                f"{state.period}: CHANGED AFTER SIGN-OFF",
                f"{len(month.changes)} adjustment(s), {month.change_total}, since it was "
                f"prepared by {state.prepared_by}"
                + (f" and reviewed by {state.reviewed_by}" if state.reviewed_by else "")
                + "; shown until acknowledged (the desk's Close page) or the month reopened",
            )
        )
        for change in month.changes[:_CHANGES_LISTED]:
            lines.append(
                (
                    f"  {change.distribution}",
                    f"payment {change.payment_id}: {change.closed_amount} → {change.now_amount} "
                    f"({change.change}), learned {_written(change.learned_at)}",
                )
            )
        if len(month.changes) > _CHANGES_LISTED:
            lines.append(
                ("", f"and {len(month.changes) - _CHANGES_LISTED} more (the desk's Close page)")
            )
    return lines


def _on(at: datetime | None) -> str | None:
    """A sign-off date: the day (UTC) and time of a decision."""
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if at else None


def organization_of(con: duckdb.DuckDBPyConnection, settings: Settings) -> str:
    """The organization the reports are for: the settings' id, else the vehicles' own."""
    if settings.service.org_id:
        return settings.service.org_id
    row = con.execute(
        "SELECT organization FROM vehicles WHERE organization IS NOT NULL "
        "GROUP BY organization ORDER BY count(*) DESC, organization LIMIT 1"
    ).fetchone()
    return str(row[0]) if row else ""


def filed_summary(settings: Settings, report: FiledReport) -> ReconcileSummary:
    """The summary of a filed report, read from its own Parquet files as the workbook's was;
    the last sync and the period's state read from the warehouse at its knowledge time."""
    from fundpipe.reconcile.export import VIEWS
    from fundpipe.warehouse import Warehouse

    parquet = {view: report.folder / f"{view}.parquet" for view in VIEWS}
    last_sync: tuple[str | None, datetime | None] = (None, None)
    period = None
    signed: list[SignOff] = []
    organization = settings.service.org_id or ""
    exists = settings.local.warehouse_file.exists()
    with Warehouse(settings.local.warehouse_file).read() if exists else nullcontext() as con:
        if con is not None:
            last_sync = last_sync_of(con, report.as_of, report.reporting_timezone, report.known_at)
            period = period_state(
                con, period_of(report.as_of), before=report.known_at + timedelta(microseconds=1)
            )
            organization = organization or organization_of(con, settings)
            signed = signed_months(con, zone=report.reporting_timezone, known_at=report.known_at)
        summary = summarise(
            parquet,
            as_of=report.as_of,
            run_at=report.run_at,
            last_sync=last_sync,
            organization=organization,
            con=con,
        )
    return replace(
        summary,
        reporting_timezone=report.reporting_timezone,
        materiality_cents=settings.pipeline.materiality,
        organization_name=settings.service.org_name,
        historical=report.known_at < report.run_at,
        period=period,
        known_at=report.known_at,
        signed_months=tuple(signed),
    )
