"""One organization's night as a plain library call: ingest → sync → reconcile → reports.

```python
result = night(settings)            # settings of one organization, naming a running service
result.exit_code                    # the one table, fundpipe.errors.ExitCode
result.files_processed, result.distributions_created, result.reports_dir
```

:func:`night` is the one sequence of a night (:data:`STEPS`): the `org-night` Prefect flow runs
it too, handing it a ``step`` runner that makes each step a Prefect task (and tells its lines),
and an ``around_service`` that holds the service host's slot while ingest and sync talk to it.
It returns a frozen :class:`NightResult`; the shells (the flow, its artifacts, run-log lines and
events) read its attributes. Nothing here prints, imports Prefect or touches process-wide state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from fundpipe.errors import ExitCode
from fundpipe.record.restore import in_durable_record
from fundpipe.vocabulary import ExceptionRecord, ExceptionState, what_to_do

if TYPE_CHECKING:
    import httpx

    from fundpipe.config import Settings
    from fundpipe.progress import ProgressSink
    from fundpipe.reconcile import ReconcileResult
    from fundpipe.record import RestoreResult
    from fundpipe.submit import FileOutcome, IngestResult
    from fundpipe.sync import SyncResult

__all__ = [
    "STEPS",
    "NightResult",
    "StepRunner",
    "exceptions_of",
    "night",
    "of_view_row",
    "run_step",
]

_R = TypeVar("_R")

#: A night's steps, in the order :func:`night` runs them (each a Prefect task under the flow).
STEPS = ("ingest", "sync", "reconcile")


class StepRunner(Protocol):
    """How an entry point runs one step of the night: ``step(name, work)`` calls ``work()``
    (one of :data:`STEPS`, by ``name``) and returns its result, or raises."""

    def __call__(self, name: str, work: Callable[[], _R], /) -> _R:
        """Run ``work`` as the step ``name``; its result."""
        ...


def run_step(name: str, work: Callable[[], _R], /) -> _R:
    """The plain step runner: calls ``work`` (the library's and the CLI's)."""
    return work()


def of_view_row(row: Mapping[str, Any]) -> ExceptionRecord:
    """One exception from a row of the `exceptions` view's Parquet (a reconciliation without a
    lifecycle, one for a past as-of date): an id hashed from its kind and subject, open, opened
    tonight, and what to do as its kind says."""
    kind = str(row.get("kind") or "exception")
    subject = str(row.get("object_id") or row.get("source_file") or row.get("vehicle") or "")
    digest = hashlib.sha256(f"{kind}|{row.get('object_type')}|{subject}".encode()).hexdigest()
    where = row.get("source_file") or row.get("vehicle") or subject
    reason, label = str(row.get("reason") or ""), kind.replace("_", " ")
    what = reason if reason.startswith(label) else f"{label}: {reason}".strip(": ")
    if where:
        what = f"{what} ({Path(str(where)).name})"
    return ExceptionRecord(
        id=f"exc_{digest[:10]}",
        state=ExceptionState.OPEN,
        age_days=0,
        what=what,
        amount_cents=int(row.get("amount_cents") or 0),
        what_to_do=what_to_do(kind),
        kind=kind,
        opened_tonight=True,
    )


def exceptions_of(reconciled: ReconcileResult) -> tuple[ExceptionRecord, ...]:
    """A reconciliation's exceptions: those its lifecycle opened tonight, those still open
    (aged) and those it resolved — or, without a lifecycle (a past as-of date only reads), the
    `exceptions` view's rows (at most 500), each open."""
    life = reconciled.lifecycle
    if life is not None:
        return (
            *(e.tonight(opened_tonight=True) for e in life.opened),
            *(e.tonight(opened_tonight=False) for e in life.still_open),
            *(e.tonight(opened_tonight=False) for e in life.resolved),
        )
    path = reconciled.parquet.get("exceptions")
    if path is None or not Path(path).exists():
        return ()
    frame = reconciled.frame("exceptions").head(500)
    rows = frame.astype(object).where(frame.notna(), None).to_dict("records")
    return tuple(of_view_row({str(k): v for k, v in row.items()}) for row in rows)


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
    #: tonight's exceptions (see `exceptions_of`): opened, still open, resolved
    exceptions: tuple[ExceptionRecord, ...] = ()
    #: what the night's start restored from the record before anything ran (None: nothing)
    restored: RestoreResult | None = None

    def with_restored(self, restored: RestoreResult) -> NightResult:
        """This night, saying what its start restored (`fundpipe.record.restore.catch_up`)."""
        return replace(self, restored=restored)

    def in_state(self, *states: str) -> tuple[FileOutcome, ...]:
        """The files that ended in one of ``states``."""
        return tuple(f for f in self.files if f.state in states)

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
            exceptions=exceptions_of(reconciled),
        )

    @property
    def nothing_new(self) -> str:
        """One line when the night found no new file and nothing the report shows changed at
        the service (today's report stays the latest, no folder written), else ""."""
        if self.files_processed or not self.reconcile.unchanged:
            return ""
        return (
            "nothing new: no new file and no change at the service since the last sync; "
            f"{self.reports_dir} stays the latest report"
        )

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


@in_durable_record  # one machine at a time; restored first when the record has more; snapshot
def night(
    settings: Settings,
    *,
    as_of: date | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    progress: ProgressSink | None = None,
    around_submit: Callable[[], AbstractContextManager[object]] = nullcontext,
    around_cells: Callable[[], AbstractContextManager[object]] = nullcontext,
    around_planning: Callable[[], AbstractContextManager[object]] = nullcontext,
    around_service: Callable[[], AbstractContextManager[object]] = nullcontext,
    step: StepRunner = run_step,
    clock: Callable[[], datetime] | None = None,
) -> NightResult:
    """Run one organization's night: ingest its inbox, sync the service into its warehouse,
    reconcile and write its reports; return what happened.

    ``settings`` are the organization's (``Settings.for_org``) and name a running service;
    ``transport`` replaces the network (tests pass the sandbox's ASGI app); ``around_submit``,
    ``around_cells`` and ``around_planning`` are the entry point's process-wide choices around
    sending, around an XLSX sheet's cells and around building the plan (see
    ``fundpipe.submit.ingest``; a fan-out of organizations in threads passes none); ``around_service`` is held while
    ingest and sync talk to the service (the flow's slot of the host's concurrency limit);
    ``step`` runs each of :data:`STEPS` (the flow's makes each a Prefect task); ``clock``
    is the reconciliation's (its run time and reporting day; tests set it).
    Failures raise the error trees' exceptions (a locked inbox, the service down).
    """
    # imported at each night, through the faces: a test replacing `fundpipe.sync.pull.sync`
    # (or the others at home) is the one the night runs
    from fundpipe.reconcile import reconcile
    from fundpipe.submit import ingest
    from fundpipe.sync import sync

    with around_service():
        ingested = step(
            "ingest",
            lambda: ingest.ingest(
                settings,
                None,
                transport=transport,
                progress=progress,
                around_submit=around_submit,
                around_cells=around_cells,
                around_planning=around_planning,
            ),
        )
        synced = step("sync", lambda: sync(settings, transport=transport, progress=progress))
    reconciled = step("reconcile", lambda: reconcile(settings, as_of=as_of, clock=clock))
    return NightResult.of(settings.service.org_id, ingested, synced, reconciled)
