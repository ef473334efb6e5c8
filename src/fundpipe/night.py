"""One organization's night as a plain library call: ingest → sync → reconcile → reports.

```python
result = night(settings)            # settings of one organization, naming a running service
result.exit_code                    # the one table, fundpipe.errors.ExitCode
result.files_processed, result.distributions_created, result.reports_dir
```

:func:`night` returns a frozen :class:`NightResult`; the shells (the `org-night` Prefect flow,
its artifacts, run-log lines and events) read its attributes. :meth:`NightResult.of` builds the
same result from the three steps' own results, for a shell that runs them as separate steps (a
Prefect task each). Nothing here prints, imports Prefect or touches process-wide state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from fundpipe.errors import ExitCode

if TYPE_CHECKING:
    import httpx

    from fundpipe.config import Settings
    from fundpipe.progress import ProgressSink
    from fundpipe.reconcile.views import ReconcileResult
    from fundpipe.submit.verdicts import FileOutcome, IngestResult
    from fundpipe.sync.pull import SyncResult

__all__ = ["NightResult", "night"]


@dataclass(frozen=True)
class NightResult:
    """What one organization's night did, typed (the steps' own results are kept too)."""

    organization: str | None
    as_of: date
    files: tuple[FileOutcome, ...]
    distributions_created: int
    cents_created: int
    exceptions_opened: int
    exceptions_resolved: int
    exceptions_open: int
    reports_dir: Path
    workbook: Path
    parquet: Mapping[str, Path]
    exit_code: ExitCode
    ingest: IngestResult
    sync: SyncResult
    reconcile: ReconcileResult

    @classmethod
    def of(
        cls,
        organization: str | None,
        ingested: IngestResult,
        synced: SyncResult,
        reconciled: ReconcileResult,
    ) -> NightResult:
        """The night's result from its three steps' results."""
        processed = [f for f in ingested.files if f.state == "processed"]
        life = reconciled.lifecycle
        return cls(
            organization=organization,
            as_of=reconciled.summary.as_of,
            files=tuple(ingested.files),
            distributions_created=sum(f.distributions for f in processed),
            cents_created=sum(f.total_cents for f in processed),
            exceptions_opened=len(life.opened) if life else 0,
            exceptions_resolved=len(life.resolved) if life else 0,
            exceptions_open=life.open if life else reconciled.summary.exceptions,
            reports_dir=reconciled.out_dir,
            workbook=reconciled.workbook,
            parquet=dict(reconciled.parquet),
            exit_code=ExitCode(ingested.exit_code),
            ingest=ingested,
            sync=synced,
            reconcile=reconciled,
        )

    def in_state(self, *states: str) -> tuple[FileOutcome, ...]:
        """The files that ended in one of ``states``."""
        return tuple(f for f in self.files if f.state in states)

    @property
    def files_seen(self) -> int:
        """Every file of the drop."""
        return len(self.files)

    @property
    def files_processed(self) -> int:
        """Files submitted now (new); a re-dropped file is a duplicate, not counted here."""
        return len(self.in_state("processed"))

    @property
    def files_rejected(self) -> int:
        """Files rejected by validation (each with its error report)."""
        return len(self.in_state("rejected"))


def night(
    settings: Settings,
    *,
    as_of: date | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    progress: ProgressSink | None = None,
    around_submit: Callable[[], AbstractContextManager[object]] = nullcontext,
    around_cells: Callable[[], AbstractContextManager[object]] = nullcontext,
) -> NightResult:
    """Run one organization's night: ingest its inbox, sync the service into its warehouse,
    reconcile and write its reports; return what happened.

    ``settings`` are the organization's (``Settings.for_org``) and name a running service;
    ``transport`` replaces the network (tests pass the sandbox's ASGI app); ``around_submit``
    and ``around_cells`` are the entry point's process-wide choices around sending and around
    an XLSX sheet's cells (see ``fundpipe.submit.ingest``).
    Failures raise the error trees' exceptions (a locked inbox, the service down).
    """
    from fundpipe.reconcile.views import reconcile
    from fundpipe.submit.ingest import ingest
    from fundpipe.sync.pull import sync

    ingested = ingest(
        settings,
        None,
        transport=transport,
        progress=progress,
        around_submit=around_submit,
        around_cells=around_cells,
    )
    synced = sync(settings, transport=transport, progress=progress)
    reconciled = reconcile(settings, as_of=as_of)
    return NightResult.of(settings.org_id, ingested, synced, reconciled)
