"""`reconcile()`, the reconciliation's entry point: the views for an as-of date → Parquet, the
exception log, the summary, the workbook, filed in the run's report folder.

It opens the warehouse read-only just long enough to stream each view (`schemas/views.sql`:
funding, sheet_vs_service, balance_movement, rollforward, rollforward_movements,
distribution_tieout, exceptions) into typed Parquet files (:mod:`fundpipe.reconcile.export`);
everything after — the summary (:mod:`fundpipe.reconcile.summary`) and the workbook — reads
those files, so the warehouse is free again while the workbook is written. Where the reports go
is :mod:`fundpipe.reconcile.folders`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from fundpipe.arrowpandas import spare_pandas
from fundpipe.config import Settings
from fundpipe.reconcile.books import books_fingerprint, unchanged_report
from fundpipe.reconcile.export import VIEWS, end_of_day, export_views, sql_literal, with_states
from fundpipe.reconcile.folders import latest_as_of, point_latest, run_folder
from fundpipe.reconcile.lifecycle import Lifecycle, list_exceptions, track
from fundpipe.reconcile.nightfiles import note_rejected_files, rejected_files
from fundpipe.reconcile.periods import PeriodState, period_of, period_state
from fundpipe.reconcile.signoff import signed_months
from fundpipe.reconcile.summary import (
    ReconcileSummary,
    last_sync_of,
    organization_of,
    summarise,
    workbook_summary,
)
from fundpipe.reconcile.tabs import SHEET_LAYOUT, SHEETS
from fundpipe.reports import SheetSource, write_workbook
from fundpipe.warehouse import Warehouse

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ReconcileResult", "reconcile"]


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
    #: True when nothing the report shows changed since the newest report of the same
    #: reporting day: no folder was written, `out_dir` is that report's (`latest` stays)
    unchanged: bool = False

    @property
    def kept(self) -> str:
        """One line when this run kept today's report (``unchanged``), else ""."""
        if not self.unchanged:
            return ""
        return (
            f"nothing the report shows changed since {self.summary.run_at:%Y-%m-%d %H:%M:%S %Z}: "
            f"no new report folder, {self.out_dir} stays the latest"
        )

    def frame(self, view: str) -> pd.DataFrame:
        """One view's rows as a DataFrame (read from its Parquet file)."""
        import pandas as pd

        return pd.read_parquet(self.parquet[view])


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
    rebuild: bool = False,
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

    Nothing new, nothing done: a run for today into the default folder whose books
    (:func:`fundpipe.reconcile.books.books_fingerprint`) are those of the newest report of the
    same reporting day writes nothing and returns that report (``unchanged``); `rebuild`
    writes a new one anyway. A new reporting day always gets its report.

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
    warehouse = warehouse or Warehouse(settings.local.warehouse_file)
    books: str | None = None
    if default and not historical and closing is None:
        with warehouse.read() as con:
            books = books_fingerprint(con, settings)
        same = unchanged_report(settings.local.reports_folder, as_of.isoformat(), books)
        if same is not None and not rebuild:
            kept = _kept(settings, warehouse, same, as_of, run_at)
            if kept is not None:
                return kept
    if out_dir is None:
        out_dir = run_folder(settings.local.reports_folder, as_of, run_at)
    out_dir.mkdir(parents=True, exist_ok=True)
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
        night_files = rejected_files(con, as_of, zone, settings.local.data_dir, known_at)
        last_sync = last_sync_of(con, as_of, zone, known_at)
        period = period_state(
            con,
            period_of(as_of),
            before=known_at + timedelta(microseconds=1) if known_at else end_of_day(as_of, zone),
        )
        organization = organization or organization_of(con, settings)
        # last: it moves the connection's point in time through each month since a close
        signed = signed_months(con, zone=zone, known_at=knowledge)
    parquet = {view: out_dir / f"{view}.parquet" for view in VIEWS}
    lifecycle: Lifecycle | None = None
    if historical:  # a past as-of (or a report as issued) only reads
        with warehouse.read() as con:
            with_states(con, parquet["exceptions"], as_of, timezone=zone, known_at=known_at)
    else:
        with warehouse.write() as con:
            lifecycle = track(
                con,
                f"read_parquet('{sql_literal(str(parquet['exceptions']))}')",
                as_of=as_of,
                now=run_at,
            )
            with_states(con, parquet["exceptions"], as_of, timezone=zone)
            if books is not None:  # the books as this run leaves them (its events recorded)
                books = books_fingerprint(con, settings)
    note_rejected_files(parquet["exceptions"], night_files)
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
        rejected_files=tuple(night_files),
        signed_months=tuple(signed),
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
    if books is not None:  # what a night with nothing new keeps (see `_kept`)
        issued = json.loads((out_dir / "report.json").read_text(encoding="utf-8"))
        issued |= {"books": books, "rows": rows, "sheets": sheets}
        (out_dir / "report.json").write_text(json.dumps(issued, indent=2) + "\n", encoding="utf-8")
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


def _kept(
    settings: Settings, warehouse: Warehouse, folder: Path, as_of: date, run_at: datetime
) -> ReconcileResult | None:
    """Today's newest report, kept because its books have not changed: its files, its
    summary read again, and the exception log as it stands (nothing opened or resolved)."""
    parquet = {view: folder / f"{view}.parquet" for view in VIEWS}
    issued = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    if "rows" not in issued or not all(path.is_file() for path in parquet.values()):
        return None
    zone = settings.pipeline.reporting_timezone
    with warehouse.read() as con:
        last_sync = last_sync_of(con, as_of, zone, None)
        period = period_state(con, period_of(as_of), before=end_of_day(as_of, zone))
        organization = organization_of(con, settings)
    summary = replace(
        summarise(
            parquet,
            as_of=as_of,
            run_at=datetime.fromisoformat(issued["run_at"]),
            last_sync=last_sync,
            organization=organization,
        ),
        reporting_timezone=zone,
        materiality_cents=settings.pipeline.materiality,
        organization_name=settings.service.org_name,
        historical=False,
        period=period,
        known_at=datetime.fromisoformat(issued["known_at"]),
    )
    standing = list_exceptions(warehouse, as_of=as_of)
    lifecycle = Lifecycle(
        as_of=as_of,
        opened=(),
        resolved=(),
        still_open=tuple(e for e in standing if e.state == "open"),
        acknowledged=sum(1 for e in standing if e.state == "acknowledged"),
    )
    return ReconcileResult(
        summary=summary,
        out_dir=folder,
        parquet=parquet,
        rows={str(k): int(v) for k, v in issued["rows"].items()},
        workbook=folder / "reconciliation.xlsx",
        sheets=[str(name) for name in issued["sheets"]],
        lifecycle=lifecycle,
        unchanged=True,
    )
