"""The old home of `reconcile()` and its parts, split by job since: the export
(:mod:`~fundpipe.reconcile.export`), the summary (:mod:`~fundpipe.reconcile.summary`), the report
folders (:mod:`~fundpipe.reconcile.folders`) and the entry point (:mod:`~fundpipe.reconcile.run`).

Only `fundpipe.reconcile.close` still imports from here; every other caller imports from
:mod:`fundpipe.reconcile`. Once close imports from the modules above, this module goes.
"""

from fundpipe.reconcile.export import VIEWS, end_of_day, export_views, set_point_in_time
from fundpipe.reconcile.run import ReconcileResult, reconcile
from fundpipe.reconcile.summary import ReconcileSummary

__all__ = [
    "VIEWS",
    "ReconcileResult",
    "ReconcileSummary",
    "end_of_day",
    "export_views",
    "reconcile",
    "set_point_in_time",
]
