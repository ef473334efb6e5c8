"""Ingest: inbox → validate → plan → pre-flight → submit, exactly once; returns data.

:func:`ingest` is the library entry point the CLI and the flows call; it prints nothing (the
CLI renders its result with ``fundpipe.app.render``) and never starts a sandbox (``settings``
must name a service). Every run first settles what a previous run left
open (files in ``processing/``, requests without an outcome), then plans against a fresh
snapshot of the service, so a crash at any point is resumed, never repeated.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import duckdb
import httpx
import pandas as pd

from fundpipe.config import Settings, require_service
from fundpipe.errors import ConfigurationError
from fundpipe.keys import file_hash
from fundpipe.plan import (
    MAX_BATCH,
    FileInput,
    Plan,
    build_plan,
)
from fundpipe.plan.preflight import Preflight, preflight
from fundpipe.progress import ProgressSink
from fundpipe.submit.execute import SubmitResult, execute, settle
from fundpipe.submit.inbox import InboxDirs, InboxLock, move_into, stable_files
from fundpipe.submit.ledger import Ledger, open_ledger
from fundpipe.submit.snapshot import load_state
from fundpipe.validate.issues import FileReport, Issue

log = logging.getLogger(__name__)

FileState = Literal[
    "processed", "rejected", "conflict", "duplicate", "incomplete", "refused", "planned"
]


@dataclass
class FileOutcome:
    """What happened to one file."""

    source_file: str
    file_hash: str
    state: FileState
    rows: int = 0
    distributions: int = 0
    total_cents: int = 0
    payment_states: dict[str, int] = field(default_factory=dict)
    message: str | None = None
    moved_to: Path | None = None


@dataclass
class IngestResult:
    """The outcome of one `ingest` call."""

    files: list[FileOutcome] = field(default_factory=list)
    plan: Plan | None = None
    preflight: Preflight | None = None
    dry_run: bool = False
    submit: SubmitResult | None = None

    @property
    def exit_code(self) -> int:
        """0 all done; 1 a file was rejected, refused or in conflict; 3 outcomes still unknown.

        (``python -m fundpipe.submit.ingest`` exits 4 when another ingest holds the inbox lock.)
        """
        states = {f.state for f in self.files}
        if "incomplete" in states:
            return 3
        if states & {"rejected", "conflict", "refused"}:
            return 1
        return 0

    def by_state(self, state: FileState) -> list[FileOutcome]:
        """The files that ended in ``state``."""
        return [f for f in self.files if f.state == state]


# --------------------------------------------------------------------------- reports


def write_report(report: FileReport, sheet_path: Path) -> list[Path]:
    """Write ``report``'s issues beside ``sheet_path`` (``<name>.errors.csv`` and ``.xlsx``)."""
    from fundpipe.reports.rejected import write_error_report

    return write_error_report(replace(report, file=str(sheet_path)), sheet_path.parent)


# --------------------------------------------------------------------------- the run


class _ValidationCache:
    """Canonical payment frames of valid files waiting in ``processing/``, by content hash.

    Only distribution sheets are kept (roster frames hold account numbers, which are never
    copied to disk): a run resumed after a crash does not validate them again.
    """

    def __init__(self, directory: Path, *, enabled: bool) -> None:
        self.directory = directory
        self.enabled = enabled

    def _path(self, file_hash: str) -> Path:
        return self.directory / f"{file_hash}.parquet"

    def load(self, file_hash: str) -> FileReport | None:
        path = self._path(file_hash)
        if not self.enabled or not path.exists():
            return None
        try:
            frame = pd.read_parquet(path)
        except (OSError, ValueError):
            return None
        return FileReport(
            file=str(frame["source_file"].iloc[0]), rows=len(frame), distributions=frame
        )

    def store(self, file_hash: str, report: FileReport) -> None:
        roster = (report.entities, report.contacts, report.payment_instructions)
        frame = report.distributions
        if not self.enabled or frame is None or frame.empty or any(f is not None for f in roster):
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self._path(file_hash).with_suffix(".tmp")
        frame.to_parquet(tmp, index=False)
        tmp.replace(self._path(file_hash))  # atomic: a half-written cache is never read

    def drop(self, file_hash: str) -> None:
        self._path(file_hash).unlink(missing_ok=True)


@dataclass
class _Candidate:
    path: Path
    original_name: str
    file_hash: str


def _collect(
    settings: Settings, paths: Sequence[Path] | None, *, dry_run: bool, settle_s: float
) -> tuple[list[_Candidate], bool]:
    """Files to ingest and whether they live in the inbox tree (and so are moved)."""
    if paths is not None:
        return [_Candidate(Path(p), Path(p).name, file_hash(Path(p))) for p in paths], False
    dirs = InboxDirs(settings.data_dir)
    if not dry_run:
        dirs.create()
    found = [(p, p.name) for p in stable_files(dirs.processing, settle_s=0)]
    for p in stable_files(dirs.inbox, settle_s=settle_s):
        if dry_run:
            found.append((p, p.name))
        else:
            found.append((move_into(p, dirs.processing, settings.data_dir), p.name))
    return [_Candidate(p, name, file_hash(p)) for p, name in found], True


@contextmanager
def _maybe_ledger(settings: Settings, *, dry_run: bool) -> Iterator[Ledger | None]:
    if not dry_run:
        with open_ledger(settings.ledger_file) as ledger:
            yield ledger
        return
    if not settings.ledger_file.exists():
        yield None
        return
    try:
        con = duckdb.connect(str(settings.ledger_file), read_only=True)
    except duckdb.Error:  # another run holds it: a dry run can do without
        yield None
        return
    try:
        yield Ledger(con, read_only=True)
    finally:
        con.close()


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
) -> IngestResult:
    """Ingest ``paths`` (None → the inbox): validate, plan, pre-flight and submit exactly once.

    ``progress`` hears the files read and validated and the requests submitted.

    ``dry_run`` plans and sends nothing (no file moves, no ledger writes); the plan is in
    the result for the caller to show.
    ``require_funds`` (default ``settings.require_funds``) turns the funding warning into a
    refusal of the file. ``transport`` replaces the network (tests pass the sandbox's ASGI
    app). ``settle_s`` (seconds an inbox file must be unchanged) and ``batch_size``
    (distributions per create request, at most 100) override ``settings.inbox_settle_s`` and
    ``settings.submit_batch_size``. Raises :class:`fundpipe.submit.inbox.InboxBusyError` when another
    ingest holds the lock.
    """
    require = settings.require_funds if require_funds is None else require_funds
    settle_s = settings.inbox_settle_s if settle_s is None else settle_s
    batch_size = settings.submit_batch_size if batch_size is None else batch_size
    if not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"batch_size must be between 1 and {MAX_BATCH}, not {batch_size}")
    require_service(settings, transport)
    lock: AbstractContextManager[Any] = nullcontext() if dry_run else InboxLock(settings.data_dir)
    with lock:
        candidates, in_inbox = _collect(settings, paths, dry_run=dry_run, settle_s=settle_s)
        result = IngestResult(dry_run=dry_run)
        if not candidates:
            return result
        with _maybe_ledger(settings, dry_run=dry_run) as ledger:
            done = _run_sync(
                _run(
                    settings,
                    candidates,
                    ledger,
                    result,
                    in_inbox=in_inbox,
                    require_funds=require,
                    transport=transport,
                    progress=progress,
                    batch_size=batch_size,
                )
            )
    return done


def _run_sync(coro: Coroutine[Any, Any, IngestResult]) -> IngestResult:
    """Run ``coro`` to completion, also when called from a thread with a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


async def _run(
    settings: Settings,
    candidates: list[_Candidate],
    ledger: Ledger | None,
    result: IngestResult,
    *,
    in_inbox: bool,
    require_funds: bool,
    transport: httpx.AsyncBaseTransport | None,
    batch_size: int,
    progress: ProgressSink | None = None,
) -> IngestResult:
    from fundpipe.client import FundClient
    from fundpipe.validate.files import validate_files

    dirs = InboxDirs(settings.data_dir)
    dry_run = result.dry_run

    def finish(c: _Candidate, outcome: FileOutcome, dest: Path | None) -> None:
        if in_inbox and not dry_run and dest is not None:
            outcome.moved_to = move_into(c.path, dest, settings.data_dir, c.original_name)
            _ValidationCache(dirs.processing / ".validated", enabled=True).drop(c.file_hash)
        result.files.append(outcome)

    # 1. the same bytes again: recognised, not re-submitted
    todo: list[_Candidate] = []
    seen: set[str] = set()
    for c in candidates:
        known = ledger.file_state(c.file_hash) if ledger is not None else None
        if known == "processed" or c.file_hash in seen:
            finish(
                c,
                FileOutcome(
                    c.original_name,
                    c.file_hash,
                    "duplicate",
                    message="same content as a file already processed: nothing sent",
                ),
                dirs.processed,
            )
            continue
        seen.add(c.file_hash)
        todo.append(c)
    if not todo:
        return result

    async with FundClient(settings, transport=transport) as client:
        org_id = settings.org_id or await _only_organization(client)
        state = await load_state(client, org_id)

        # 2. validation: a file with any error is rejected whole (a resumed run reuses the
        #    frames of files it validated before, kept beside them in processing/)
        cache = _ValidationCache(dirs.processing / ".validated", enabled=in_inbox and not dry_run)
        cached = {c.file_hash: cache.load(c.file_hash) for c in todo}
        fresh = [c for c in todo if cached[c.file_hash] is None]
        fresh_reports = iter(
            validate_files(
                [c.path for c in fresh],
                known_entity_refs=set(state.entities_by_ref),
                progress=progress,
            )
            if fresh
            else []
        )
        reports = [cached[c.file_hash] or next(fresh_reports) for c in todo]
        for c, report in zip(todo, reports, strict=True):
            if cached[c.file_hash] is None and report.valid:
                cache.store(c.file_hash, report)
        inputs: list[FileInput] = []
        valid: list[_Candidate] = []
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
                continue
            outcome = FileOutcome(
                c.original_name,
                c.file_hash,
                "rejected",
                rows=report.rows,
                message=f"{len(report.errors)} validation error(s)",
            )
            if not dry_run and ledger is not None:
                ledger.record_file(
                    c.file_hash,
                    c.original_name,
                    "rejected",
                    rows=report.rows,
                    message=outcome.message,
                )
            finish(c, outcome, dirs.rejected)
            if outcome.moved_to is not None:
                write_report(report, outcome.moved_to)

        # 3. plan + pre-flight (refused files stay in the plan, marked, with no request)
        plan = build_plan(inputs, state, batch_size=batch_size)
        checked = preflight(plan, state, require_funds=require_funds)
        if checked.refused:
            plan = build_plan(inputs, state, batch_size=batch_size, exclude=checked.refused)
        result.plan, result.preflight = plan, checked
        if dry_run or ledger is None:
            for c, f in zip(valid, plan.files, strict=True):
                result.files.append(
                    FileOutcome(
                        c.original_name,
                        c.file_hash,
                        "planned",
                        rows=f.rows,
                        distributions=f.distributions,
                        total_cents=f.total_cents,
                    )
                )
            return result

        # 4. intent of the whole plan, then settle what an earlier run left open
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

        # 5. send
        submitted = await execute(
            client, ledger, plan, state, concurrency=settings.max_concurrency, progress=progress
        )
        result.submit = submitted
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

    # 6. file verdicts
    for c, f in zip(valid, plan.files, strict=True):
        issues: list[Issue] = []
        state_name: FileState
        if f.conflict:
            state_name, ledger_state, dest = "conflict", "conflict", dirs.rejected
            for d in plan.distributions:
                if d.file_hash == f.file_hash and d.action == "conflict":
                    first = d.payments[0] if d.payments else None
                    issues.append(
                        Issue(
                            c.original_name,
                            first.sheet if first else None,
                            first.row if first else None,
                            "external_reference",
                            d.external_reference,
                            "distribution_conflict",
                            f"{d.external_reference} already exists at the service as "
                            f"{d.existing_id or 'another file of this run'} and does not match "
                            f"({d.reason}); nothing of this file was sent — resolve it by hand",
                        )
                    )
            _mark_unsent(ledger, plan, f.file_hash, "conflict")
            message = f"{len(issues)} distribution(s) in conflict: nothing sent"
        elif f.excluded:
            state_name, ledger_state, dest = "refused", "rejected", dirs.rejected
            for issue in checked.errors:
                if issue.file_hash == f.file_hash:
                    issues.append(
                        Issue(c.original_name, None, None, None, None, issue.check, issue.message)
                    )
            _mark_unsent(ledger, plan, f.file_hash, "failed")
            message = "; ".join(i.reason for i in issues) or "refused by pre-flight"
        elif f.file_hash in submitted.unknown:
            state_name, ledger_state, dest = "incomplete", "processing", None
            message = "outcome unknown, the next run settles it: " + submitted.unknown[f.file_hash]
        elif f.file_hash in submitted.failed:
            state_name, ledger_state, dest = "rejected", "rejected", dirs.rejected
            message = "the service refused: " + submitted.failed[f.file_hash]
            issues.append(
                Issue(c.original_name, None, None, None, None, "service_refused", message)
            )
        else:
            state_name, ledger_state, dest = "processed", "processed", dirs.processed
            message = None
        ledger.record_file(f.file_hash, f.source_file, ledger_state, message=message)
        outcome = FileOutcome(
            c.original_name,
            c.file_hash,
            state_name,
            rows=f.rows,
            distributions=f.distributions,
            total_cents=f.total_cents,
            payment_states=ledger.payment_states(f.file_hash),
            message=message,
        )
        finish(c, outcome, dest)
        if issues and outcome.moved_to is not None:
            write_report(
                FileReport(file=c.original_name, valid=False, rows=f.rows, errors=issues),
                outcome.moved_to,
            )
    return result


def _mark_unsent(ledger: Ledger, plan: Plan, file_hash: str, state: str) -> None:
    refs = [
        d.external_reference
        for d in plan.distributions
        if d.file_hash == file_hash and d.action != "link"
    ]
    ledger.mark_distributions(file_hash, refs, state)


async def _only_organization(client: Any) -> str:
    orgs = [o.id async for o in client.list_organizations()]
    if len(orgs) != 1:
        raise ConfigurationError(
            "FUNDPIPE_ORG_ID is required: the client reaches several organizations"
        )
    return str(orgs[0])
