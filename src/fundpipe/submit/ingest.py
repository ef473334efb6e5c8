"""Ingest: inbox → validate → plan → pre-flight → submit, exactly once; returns data.

:func:`ingest` is the library entry point the CLI and the flows call; it prints nothing (the
CLI renders its result with ``fundpipe.app.cli.render``) and never starts a sandbox (``settings``
must name a service). Every run first settles what a previous run left open (files in
``processing/``, requests without an outcome), then plans against a fresh snapshot of the
service, so a crash at any point is resumed, never repeated. Longer than ~400 lines: the
steps of one run (`_Run`) read in order in one place.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import replace
from datetime import UTC
from pathlib import Path
from typing import Any, TypeVar

import httpx

from fundpipe.config import DEMO_ORG_ID, Settings, require_service
from fundpipe.plan import MAX_BATCH, FileInput, Plan, ServiceState, build_plan, references
from fundpipe.plan.preflight import Preflight, preflight
from fundpipe.progress import ProgressSink
from fundpipe.submit.binding import check_binding, check_livemode, learned_client
from fundpipe.submit.bucket import BucketInbox
from fundpipe.submit.execute import SubmitResult, execute
from fundpipe.submit.inbox import (
    Candidate,
    InboxDirs,
    InboxLock,
    ValidationCache,
    collect_candidates,
    move_into,
)
from fundpipe.submit.instructions import with_known_instructions
from fundpipe.submit.ledger import Ledger, open_ledger, read_ledger
from fundpipe.submit.settle import settle
from fundpipe.submit.snapshot import (
    load_snapshot,
    only_organization,
    vehicles_of,
    with_distributions,
    with_vehicles,
)
from fundpipe.submit.verdicts import (
    FileOutcome,
    FileState,
    IngestResult,
    SheetColumns,
    first_reasons,
    verdict,
)
from fundpipe.validate import FileReport
from fundpipe.warehouse import read_known

log = logging.getLogger(__name__)

_T = TypeVar("_T")

__all__ = ["FileOutcome", "FileState", "IngestResult", "ingest", "write_report"]

# --------------------------------------------------------------------------- reports


def write_report(report: FileReport, sheet_path: Path) -> list[Path]:
    """Write ``report``'s issues beside ``sheet_path`` (``<name>.errors.csv`` and ``.xlsx``)."""
    from fundpipe.reports import write_error_report

    return write_error_report(replace(report, file=str(sheet_path)), sheet_path.parent)


# --------------------------------------------------------------------------- the run


@contextmanager
def _maybe_ledger(settings: Settings, *, dry_run: bool) -> Iterator[Ledger | None]:
    if not dry_run:
        with open_ledger(settings.local.ledger_file, org=settings.service.org_id) as ledger:
            yield ledger
        return
    # read-only: another run holding it leaves a dry run without it; a damaged one raises
    with read_ledger(settings.local.ledger_file, org=settings.service.org_id) as ledger:
        yield ledger


def ingest(
    settings: Settings,
    paths: Sequence[Path] | None = None,
    *,
    dry_run: bool = False,
    require_funds: bool | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    settle_s: float | None = None,
    batch_size: int | None = None,
    progress: ProgressSink | None = None,
    around_submit: Callable[[], AbstractContextManager[object]] = nullcontext,
    around_cells: Callable[[], AbstractContextManager[object]] = nullcontext,
    around_planning: Callable[[], AbstractContextManager[object]] = nullcontext,
) -> IngestResult:
    """Ingest ``paths`` (None → the inbox): validate, plan, pre-flight and submit exactly once.

    ``progress`` hears the files read and validated and the requests submitted.
    ``around_submit`` wraps the sending, ``around_cells`` an XLSX sheet's turning into cell
    objects and ``around_planning`` the planning and pre-flight (no request is sent in it): the
    entry point's process-wide choices (`fundpipe ingest` freezes the plan out of the garbage
    collector's sight while sending, and pauses the collector while a sheet's cells are made
    and while the plan is built, `fundpipe.app.cli.process.frozen_gc` / `paused_gc`); the
    defaults change nothing.

    ``dry_run`` plans and sends nothing (no file moves, no ledger writes); the plan is in
    the result for the caller to show.
    ``require_funds`` (default ``settings.require_funds``) turns the funding warning into a
    refusal of the file. ``transport`` replaces the network (tests pass the sandbox's ASGI
    app). ``settle_s`` (seconds an inbox file must be unchanged) and ``batch_size``
    (distributions per create request, at most 100) override ``settings.inbox_settle_s`` and
    ``settings.submit_batch_size``. Raises :class:`fundpipe.errors.InboxBusyError` when
    another ingest holds the lock, :class:`fundpipe.errors.ConfigurationError` when
    ``settings`` name no service.
    """
    require = settings.pipeline.require_funds if require_funds is None else require_funds
    settle_s = settings.pipeline.inbox_settle_s if settle_s is None else settle_s
    batch_size = settings.pipeline.submit_batch_size if batch_size is None else batch_size
    if not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"batch_size must be between 1 and {MAX_BATCH}, not {batch_size}")
    require_service(settings, transport)
    check_binding(settings, settings.service.org_id, bind=False)  # before any file is moved
    lock: AbstractContextManager[Any] = (
        nullcontext()
        if dry_run
        else InboxLock(settings.local.data_dir, settings.pipeline.inbox_lock_wait_s)
    )
    with lock:
        bucket = _bucket(settings) if paths is None and not dry_run else None
        if bucket is not None:  # the team's storage: its settled files into processing/
            bucket.pull(settings.local.data_dir, settle_s=settle_s)
        collected = collect_candidates(
            settings.local.data_dir, paths, dry_run=dry_run, settle_s=settle_s
        )
        candidates, in_inbox = collected.candidates, collected.in_inbox
        result = IngestResult(dry_run=dry_run, left_alone=collected.left_alone)
        if not candidates:
            return result
        with _maybe_ledger(settings, dry_run=dry_run) as ledger:
            run = _Run(settings, ledger, result, in_inbox=in_inbox, progress=progress)
            # process-wide: never chosen by the library
            run.around_submit, run.around_cells = around_submit, around_cells
            run.around_planning = around_planning
            steps = run.run(
                candidates, require_funds=require, transport=transport, batch_size=batch_size
            )
            result = _run_sync(steps)
        if bucket is not None:  # the finished files to processed/ or rejected/ there
            bucket.push(settings.local.data_dir, result)
        return result


def _bucket(settings: Settings) -> BucketInbox | None:
    """The organization's inbox on the team's storage (``FUNDPIPE_INBOX_URL``), or None."""
    pipeline = settings.pipeline
    if pipeline.inbox_url is None:
        return None
    org = settings.service.org_id or DEMO_ORG_ID
    return BucketInbox.of(pipeline.inbox_url, org, lease_s=pipeline.inbox_lease_s)


def _run_sync(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` to completion, also when called from a thread with a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


class _Run:
    """One ingest run over its candidates; each step is a method, called in order by `run`."""

    def __init__(
        self,
        settings: Settings,
        ledger: Ledger | None,
        result: IngestResult,
        *,
        in_inbox: bool,
        progress: ProgressSink | None,
    ) -> None:
        self.settings = settings
        self.ledger = ledger
        self.result = result
        self.in_inbox = in_inbox
        self.progress = progress
        self.dry_run = result.dry_run
        self.dirs = InboxDirs(settings.local.data_dir)
        self.around_submit: Callable[[], AbstractContextManager[object]] = nullcontext
        self.around_cells: Callable[[], AbstractContextManager[object]] = nullcontext
        self.around_planning: Callable[[], AbstractContextManager[object]] = nullcontext
        #: a valid roster's counts by file hash (see `FileOutcome.roster`)
        self.rosters: dict[str, dict[str, int]] = {}
        #: a valid file's headers as written and their letters, by file hash (for conflicts)
        self.columns: dict[str, SheetColumns] = {}

    def finish(self, c: Candidate, outcome: FileOutcome, dest: Path | None) -> None:
        """Record ``outcome``; an inbox file moves to ``dest`` (unless a dry run)."""
        if self.in_inbox and not self.dry_run and dest is not None:
            outcome.moved_to = move_into(
                c.path, dest, self.settings.local.data_dir, c.original_name
            )
            ValidationCache(self.dirs.processing / ".validated", enabled=True).drop(c.file_hash)
        outcome.roster = outcome.roster or self.rosters.get(c.file_hash)
        self.result.files.append(outcome)

    async def run(
        self,
        candidates: list[Candidate],
        *,
        require_funds: bool,
        transport: httpx.AsyncBaseTransport | None,
        batch_size: int,
    ) -> IngestResult:
        """Every step, in order; returns the filled-in result."""
        todo = self.set_aside_duplicates(candidates)
        if not todo:
            return self.result
        async with learned_client(self.settings, transport) as client:
            org_id = self.settings.service.org_id or await only_organization(
                client, self.result.warnings
            )
            # before anything is read or sent: this data directory is this service's
            check_binding(self.settings, org_id, bind=not self.dry_run)
            # what the last sync saw is known: the service is asked only for what is newer
            known = read_known(self.settings.local.warehouse_file)
            snap = await load_snapshot(client, org_id, known=known)
            valid, inputs = self.validate(todo, snap.state.entities_by_ref)
            opened = self.ledger.open_requests() if self.ledger is not None else []
            wanted = references(inputs) | {r for o in opened for r in o.distribution_refs}
            state = await with_distributions(client, snap, wanted)
            state = await with_vehicles(
                client, state, vehicles_of(inputs) | set(self.settings.service.vehicles)
            )
            state = await with_known_instructions(client, state, self.ledger, inputs)
            self.result.warnings.extend(state.warnings)
            self.result.livemode = state.livemode
            check_livemode(self.settings, state.livemode)
            # 3. plan + pre-flight (refused files stay in the plan, marked, with no request)
            with self.around_planning():
                plan = build_plan(inputs, state, batch_size=batch_size)
                checked = preflight(plan, state, require_funds=require_funds)
                if checked.refused:
                    plan = build_plan(inputs, state, batch_size=batch_size, exclude=checked.refused)
            del inputs  # the validated frames: the plan holds all that is sent from here on
            self.result.plan, self.result.preflight = plan, checked
            self.result.warnings.extend(plan.held_reasons())
            if self.dry_run or self.ledger is None:
                self.planned(valid, plan)
                return self.result
            submitted = await self.send(client, self.ledger, plan, state)
            self.result.warnings.extend(submitted.warnings)
            self.result.notes.extend(client.notes)
        self.verdicts(self.ledger, valid, plan, checked, submitted)
        return self.result

    def set_aside_duplicates(self, candidates: list[Candidate]) -> list[Candidate]:
        """1. The same bytes again: recognised, not re-submitted, named as a re-drop of the
        earlier file (each drop recorded in the ledger); processed/ keeps one file of that
        content. Returns the rest."""
        todo: list[Candidate] = []
        first: dict[str, str] = {}  # content hash → the name it came with in this drop
        for c in candidates:
            known = self.ledger.file_state(c.file_hash) if self.ledger is not None else None
            if known != "processed" and c.file_hash not in first:
                first[c.file_hash] = c.original_name
                todo.append(c)
                continue
            earlier = None
            if known == "processed" and self.ledger is not None:
                earlier = self.ledger.first_seen(c.file_hash)
            if earlier is not None:
                same_as, at = earlier
                when = f"processed {at.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
            else:  # twice in this drop: the first copy goes on through this run
                same_as, at, when = first.get(c.file_hash, c.original_name), None, "in this drop"
            if self.ledger is not None and not self.dry_run:
                self.ledger.record_redrop(c.file_hash, c.original_name, same_as, at)
            outcome = FileOutcome(
                c.original_name,
                c.file_hash,
                "duplicate",
                message=f"same content as `{same_as}`, {when}: nothing sent",
            )
            kept = _kept_copy(self.dirs.processed, same_as, c.file_hash) if earlier else None
            if self.in_inbox and not self.dry_run and (kept is not None or earlier is None):
                # one file of this content is kept (in processed/, or the first copy of this
                # drop): this one is not copied beside it
                c.path.unlink()
                outcome.moved_to = kept
                self.finish(c, outcome, None)
            else:
                self.finish(c, outcome, self.dirs.processed)
        return todo

    def validate(
        self, todo: list[Candidate], known_refs: Mapping[str, Any]
    ) -> tuple[list[Candidate], list[FileInput]]:
        """2. A file with any error is rejected whole (a resumed run reuses the frames of files
        it validated before, kept beside them in processing/). Returns the valid ones."""
        from fundpipe.validate import validate_files

        enabled = self.in_inbox and not self.dry_run
        cache = ValidationCache(self.dirs.processing / ".validated", enabled=enabled)
        cached = {c.file_hash: cache.load(c.file_hash) for c in todo}
        fresh = [c for c in todo if cached[c.file_hash] is None]
        paths, order, refs = (
            [c.path for c in fresh],
            self.settings.pipeline.date_order,
            set(known_refs),
        )
        fresh_reports = iter(
            validate_files(
                paths,
                known_entity_refs=refs,
                date_order=order,
                progress=self.progress,
                around_cells=self.around_cells,
            )
            if fresh
            else []
        )
        reports = [cached[c.file_hash] or next(fresh_reports) for c in todo]
        for c, report in zip(todo, reports, strict=True):
            if cached[c.file_hash] is None and report.valid:
                cache.store(c.file_hash, report)
        inputs: list[FileInput] = []
        valid: list[Candidate] = []
        for c, report in zip(todo, reports, strict=True):
            if report.valid:
                inputs.append(
                    FileInput(
                        file_hash=c.file_hash,
                        source_file=c.original_name,
                        distributions=report.distributions,
                        entities=report.entities,
                        contacts=report.contacts,
                        payment_instructions=report.payment_instructions,
                    )
                )
                valid.append(c)
                self.columns[c.file_hash] = SheetColumns.of(report)
                held = (report.entities, report.contacts, report.payment_instructions)
                if any(frame is not None for frame in held):
                    self.rosters[c.file_hash] = {
                        name: 0 if frame is None else len(frame)
                        for name, frame in zip(
                            ("entities", "contacts", "payment_instructions"), held, strict=True
                        )
                    }
                self.result.warnings += [f"{c.original_name}: {n}" for n in report.reading_notes()]
            else:
                self.reject(c, report)
        return valid, inputs

    def reject(self, c: Candidate, report: FileReport) -> None:
        """A file that failed validation: recorded, moved to rejected/ with its error report."""
        outcome = FileOutcome(
            c.original_name,
            c.file_hash,
            "rejected",
            rows=report.rows,
            total_cents=report.read_cents or 0,
            message=f"{len(report.errors)} validation error(s)" + first_reasons(report),
        )
        if not self.dry_run and self.ledger is not None:
            self.ledger.record_file(
                c.file_hash,
                c.original_name,
                "rejected",
                rows=report.rows,
                total_cents=report.read_cents,
                message=outcome.message,
            )
            self.ledger.record_references(c.file_hash, report.references)
        self.finish(c, outcome, self.dirs.rejected)
        if outcome.moved_to is not None:
            outcome.error_reports = tuple(write_report(report, outcome.moved_to))

    def planned(self, valid: list[Candidate], plan: Plan) -> None:
        """A dry run (or one without a ledger) ends with every valid file planned — or, when a
        real run would send nothing of it, in conflict or refused (so the exit code says so)."""
        for c, f in zip(valid, plan.files, strict=True):
            state: FileState = "planned"
            message = None
            if f.conflict:
                state, message = "conflict", "distribution(s) in conflict: a real run sends nothing"
            elif f.excluded:
                checked = self.result.preflight
                reasons = [
                    i.message
                    for i in (checked.errors if checked else [])
                    if i.file_hash == f.file_hash
                ]
                state = "refused"
                message = (
                    "; ".join(reasons or ["refused by pre-flight"]) + ": a real run sends nothing"
                )
            self.result.files.append(
                FileOutcome(
                    c.original_name,
                    c.file_hash,
                    state,
                    rows=f.rows,
                    distributions=f.distributions,
                    total_cents=f.total_cents,
                    message=message,
                    roster=self.rosters.get(c.file_hash),
                )
            )

    async def send(
        self, client: Any, ledger: Ledger, plan: Plan, state: ServiceState
    ) -> SubmitResult:
        """4.-5. The intent of the whole plan, settling what an earlier run left open, then send."""
        for f in plan.files:
            ledger.record_file(
                f.file_hash,
                f.source_file,
                "processing",
                rows=f.rows,
                distributions=f.distributions,
                total_cents=f.total_cents,
            )
        ledger.record_distributions(plan.distributions)
        with ledger.batched():  # one commit for everything the lookup settles
            settle(ledger, plan, state)
        with self.around_submit():
            concurrency = self.settings.http.max_concurrency
            submitted = await execute(
                client, ledger, plan, state, concurrency=concurrency, progress=self.progress
            )
        self.result.submit = submitted
        # a reference twice in this drop with the same content: the second is linked to the first
        for d in plan.distributions:
            if (
                d.action == "link"
                and d.existing_id is None
                and d.external_reference in submitted.created
            ):
                ledger.mark_distributions(
                    d.file_hash,
                    [d.external_reference],
                    "linked",
                    distribution_ids={
                        d.external_reference: submitted.created[d.external_reference]
                    },
                )
        if submitted.complete and not submitted.failed:
            # requests a crashed run left open and this run did not need again: what they
            # asked for is at the service now (the snapshot showed it, or this run created it)
            ledger.settle_open(submitted.keys_sent)
        return submitted

    def verdicts(
        self,
        ledger: Ledger,
        valid: list[Candidate],
        plan: Plan,
        checked: Preflight,
        submitted: SubmitResult,
    ) -> None:
        """6. Each file's verdict: recorded, the file moved, its error report written."""
        folders = {"processed": self.dirs.processed, "rejected": self.dirs.rejected}
        for c, f in zip(valid, plan.files, strict=True):
            v = verdict(f, c.original_name, plan, checked, submitted, self.columns.get(c.file_hash))
            if v.unsent_state is not None:
                _mark_unsent(ledger, plan, f.file_hash, v.unsent_state)
            elif plan.held_refs(f.file_hash):  # held for a probable duplicate investor
                ledger.mark_distributions(f.file_hash, plan.held_refs(f.file_hash), "conflict")
            ledger.record_file(f.file_hash, f.source_file, v.ledger_state, message=v.message)
            outcome = FileOutcome(
                c.original_name,
                c.file_hash,
                v.outcome,
                rows=f.rows,
                distributions=f.distributions,
                total_cents=f.total_cents,
                payment_states=ledger.payment_states(f.file_hash),
                message=v.message,
            )
            self.finish(c, outcome, folders[v.destination] if v.destination else None)
            if v.issues and outcome.moved_to is not None:
                outcome.error_reports = tuple(
                    write_report(
                        FileReport(file=c.original_name, valid=False, rows=f.rows, errors=v.issues),
                        outcome.moved_to,
                    )
                )


def _kept_copy(processed: Path, name: str, file_hash: str) -> Path | None:
    """The file in ``processed/`` holding ``file_hash``'s content, first ingested as ``name``
    (moved there as ``name``, or ``name-N`` when that was taken); None when none does."""
    from fundpipe.keys import file_hash as hash_of
    from fundpipe.submit.inbox import sanitize_name

    clean = Path(sanitize_name(name))
    stem, suffix = clean.stem, clean.suffix
    named = [processed / clean.name, *sorted(processed.glob(f"{stem}-*{suffix}"))]
    for path in named:
        if path.is_file() and hash_of(path) == file_hash:
            return path
    return None


def _mark_unsent(ledger: Ledger, plan: Plan, file_hash: str, state: str) -> None:
    refs = [
        d.external_reference
        for d in plan.distributions
        if d.file_hash == file_hash and d.action != "link"
    ]
    ledger.mark_distributions(file_hash, refs, state)
