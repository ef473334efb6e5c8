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
- `export_views` — stream every view for an as-of date into Parquet files
- `ExceptionEvent` — one event of an exception's history
- `ExceptionNotFoundError` — no exception has that id
- `STATES` — the exception states a listing may filter on
- `acknowledge` — acknowledge an exception (its amount at that moment)
- `assign` — give an exception an owner
- `history` — an exception's events
- `list_exceptions` — the exceptions and their states
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
        list_periods,
        reject_period,
        reopen_period,
        review_period,
        verify_period,
    )
    from fundpipe.reconcile.export import export_views
    from fundpipe.reconcile.folders import latest_as_of
    from fundpipe.reconcile.lifecycle import (
        STATES,
        ExceptionEvent,
        ExceptionNotFoundError,
        acknowledge,
        assign,
        history,
        list_exceptions,
    )
    from fundpipe.reconcile.periods import PeriodDecision, record_decision
    from fundpipe.reconcile.run import ReconcileResult, reconcile
    from fundpipe.reconcile.summary import ReconcileSummary

__all__ = [
    "STATES",
    "CloseError",
    "CloseResult",
    "ExceptionEvent",
    "ExceptionNotFoundError",
    "PeriodDecision",
    "ReconcileResult",
    "ReconcileSummary",
    "acknowledge",
    "assign",
    "close_period",
    "export_audit",
    "export_views",
    "history",
    "latest_as_of",
    "list_exceptions",
    "list_periods",
    "reconcile",
    "record_decision",
    "reject_period",
    "reopen_period",
    "review_period",
    "span",
    "verify_period",
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
    "history": "lifecycle",
    "list_exceptions": "lifecycle",
    "latest_as_of": "folders",
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
}

__getattr__ = lazy_face(__name__, _HOMES)
