"""Stage ⑦: the reconciliation views → Parquet exports and the summary numbers, the exception
history, the period close and the auditor's export.

By job: `export` (views → Parquet at a point in time), `summary` (the summary numbers, the
Summary sheet), `folders` (where reports are filed), `run` (`reconcile()`), `lifecycle` (the
exception history), `periods` (period decisions), `close` (the period close), `audit`.

Other packages import from here, never from a module of this package:

- `reconcile` — run the views for an as-of date → Parquet, workbook, exception log
- `ReconcileResult` — where a reconciliation wrote its reports, and its summary
- `ReconcileSummary` — the run's facts, totals and exception counts
- `latest_as_of` — the as-of date of an organization's newest reports (`reports/latest`)
- `FiledReport` — one run's report folder and its `report.json`
- `filed_reports` — every report filed, newest as-of and knowledge time first
- `latest_report` — the report `reports/latest` points at (else the newest)
- `filed_summary` — a filed report's summary, read from its Parquet files
- `workbook_summary` — what the workbook's Summary sheet shows of a summary
- `SHEETS` — the workbook's tabs after the Summary, each with its view
- `SHEET_LAYOUT` — how each tab lays out its view
- `export_views` — stream every view for an as-of date into Parquet files
- `ExceptionEvent` — one event of an exception's history
- `ExceptionNotFoundError` — no exception has that id
- `STATES` — the exception states a listing may filter on
- `acknowledge` — acknowledge an exception (its amount at that moment)
- `assign` — give an exception an owner
- `comment` — a person's comment on an exception
- `LOG_COLUMNS` — the exception log's columns (CLI and desk)
- `log_row` — one exception as a row of the log, in words
- `HISTORY_COLUMNS` — an exception's history's columns (CLI and desk)
- `history_row` — one event as a row of the history, in words
- `RIGHT_ALIGNED` — the columns of either that are figures
- `history` — an exception's events
- `list_exceptions` — the exceptions and their states
- `tally_exceptions` — one page of them, filtered and ordered, with the counts around it
- `ExceptionTally` — what `tally_exceptions` returns: the page and the counts around it
- `PeriodDecision` — one decision about a period (closed, reviewed, …)
- `record_decision` — record a period decision as an event
- `export_audit` — an auditor's export of a span's exception and period events and syncs
- `span` — `[start of first, end of last)` of days in a timezone
- `close_period` — close a month: build its package, file it, record the decision
- `review_period` — the second person signs a closed month
- `reject_period` — the second person sends a closed month back, with a reason
- `reopen_period` — reopen a closed month for a new version
- `list_periods` — every period and where it stands
- `verify_period` — check a closed package and its review against their hashes
- `CloseResult` — what a close or a review wrote
- `CloseError` — a close or review refused, and why
- `SignOff` — a month's state with its changes after sign-off
- `signoffs` — each period with its changes after sign-off, as known now
- `ChangeAfterSignOff` — one payment of a closed month changed after its close
- `acknowledge_changes` — a person saw a closed month's changes after sign-off
- `identity_of` — the signed-in identity a decision records (`desk:oidc:…`), else None
- `person_name` — the name in what a decision records, without who typed it
- `report_problems` — the first problems of a rejected file's error report, in words
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fundpipe.faces import lazy_face

if TYPE_CHECKING:
    from fundpipe.reconcile.audit import export_audit, span
    from fundpipe.reconcile.close import (
        CloseError,
        CloseResult,
        close_period,
        identity_of,
        list_periods,
        person_name,
        reject_period,
        reopen_period,
        review_period,
        verify_period,
    )
    from fundpipe.reconcile.export import export_views
    from fundpipe.reconcile.folders import (
        FiledReport,
        filed_reports,
        latest_as_of,
        latest_report,
    )
    from fundpipe.reconcile.history_words import (
        HISTORY_COLUMNS,
        LOG_COLUMNS,
        RIGHT_ALIGNED,
        history_row,
        log_row,
    )
    from fundpipe.reconcile.lifecycle import (
        STATES,
        ExceptionEvent,
        ExceptionNotFoundError,
        ExceptionTally,
        acknowledge,
        assign,
        comment,
        history,
        list_exceptions,
        tally_exceptions,
    )
    from fundpipe.reconcile.nightfiles import report_problems
    from fundpipe.reconcile.periods import PeriodDecision, record_decision
    from fundpipe.reconcile.run import ReconcileResult, reconcile
    from fundpipe.reconcile.signoff import (
        ChangeAfterSignOff,
        SignOff,
        acknowledge_changes,
        signoffs,
    )
    from fundpipe.reconcile.summary import ReconcileSummary, filed_summary, workbook_summary
    from fundpipe.reconcile.tabs import SHEET_LAYOUT, SHEETS

__all__ = [
    "HISTORY_COLUMNS",
    "LOG_COLUMNS",
    "RIGHT_ALIGNED",
    "SHEETS",
    "SHEET_LAYOUT",
    "STATES",
    "ChangeAfterSignOff",
    "CloseError",
    "CloseResult",
    "ExceptionEvent",
    "ExceptionNotFoundError",
    "ExceptionTally",
    "FiledReport",
    "PeriodDecision",
    "ReconcileResult",
    "ReconcileSummary",
    "SignOff",
    "acknowledge",
    "acknowledge_changes",
    "assign",
    "close_period",
    "comment",
    "export_audit",
    "export_views",
    "filed_reports",
    "filed_summary",
    "history",
    "history_row",
    "identity_of",
    "latest_as_of",
    "latest_report",
    "list_exceptions",
    "list_periods",
    "log_row",
    "person_name",
    "reconcile",
    "record_decision",
    "reject_period",
    "reopen_period",
    "report_problems",
    "review_period",
    "signoffs",
    "span",
    "tally_exceptions",
    "verify_period",
    "workbook_summary",
]

#: Where each public name lives: its module is imported when the name is first used.
_HOMES = {
    "reconcile": "run",
    "ReconcileResult": "run",
    "ReconcileSummary": "summary",
    "export_views": "export",
    "ExceptionEvent": "lifecycle",
    "ExceptionNotFoundError": "lifecycle",
    "STATES": "lifecycle",
    "acknowledge": "lifecycle",
    "assign": "lifecycle",
    "comment": "lifecycle",
    "HISTORY_COLUMNS": "history_words",
    "LOG_COLUMNS": "history_words",
    "RIGHT_ALIGNED": "history_words",
    "history_row": "history_words",
    "log_row": "history_words",
    "history": "lifecycle",
    "list_exceptions": "lifecycle",
    "tally_exceptions": "lifecycle",
    "ExceptionTally": "lifecycle",
    "latest_as_of": "folders",
    "FiledReport": "folders",
    "filed_reports": "folders",
    "latest_report": "folders",
    "filed_summary": "summary",
    "workbook_summary": "summary",
    "SHEETS": "tabs",
    "SHEET_LAYOUT": "tabs",
    "PeriodDecision": "periods",
    "record_decision": "periods",
    "export_audit": "audit",
    "span": "audit",
    "CloseError": "close",
    "CloseResult": "close",
    "close_period": "close",
    "list_periods": "close",
    "reject_period": "close",
    "reopen_period": "close",
    "review_period": "close",
    "verify_period": "close",
    "identity_of": "close",
    "person_name": "close",
    "SignOff": "signoff",
    "ChangeAfterSignOff": "signoff",
    "acknowledge_changes": "signoff",
    "signoffs": "signoff",
    "report_problems": "nightfiles",
}

__getattr__ = lazy_face(__name__, _HOMES)
