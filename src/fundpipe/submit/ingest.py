"""`fundpipe ingest`: inbox → validate → plan → pre-flight → submit, exactly once.

:func:`ingest` is the library entry point the CLI and the flows call; ``python -m
fundpipe.submit.ingest`` runs it on the inbox with settings from ``FUNDPIPE_*`` variables (the chaos
test kills that process and starts it again). Every run first settles what a previous run left
open (files in ``processing/``, requests without an outcome), then plans against a fresh
snapshot of the service, so a crash at any point is resumed, never repeated.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import sys
from collections.abc import Coroutine, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import duckdb
import httpx
import pandas as pd
from rich.console import Console
from rich.table import Table

from fundpipe.config import Settings
from fundpipe.plan import (
    MAX_BATCH,
    PHASES,
    FileInput,
    Plan,
    build_plan,
    display_body,
)
from fundpipe.progress import ProgressSink
from fundpipe.submit.execute import Preflight, SubmitResult, execute, load_state, preflight, settle
from fundpipe.submit.inbox import InboxBusyError, InboxDirs, InboxLock, move_into, stable_files
from fundpipe.submit.ledger import Ledger, open_ledger
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


def file_hash(path: Path) -> str:
    """SHA-256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# --------------------------------------------------------------------------- rendering


def _money(cents: int) -> str:
    return f"{cents // 100:,}.{cents % 100:02d}"


def render_plan(plan: Plan, console: Console) -> None:
    """Print a plan: counts, totals per vehicle and per distribution, and its requests.

    Account numbers are masked; placeholders show as ``<entity:REF>``.
    """
    counts = plan.counts()
    console.print(
        f"[bold]Plan[/bold] for {plan.org_id}: {len(plan.files)} file(s), "
        f"{counts['distributions_create']} distribution(s) to create "
        f"({counts['payments_to_create']} payments), {counts['distributions_link']} already "
        f"at the service, {counts['distributions_conflict']} in conflict; "
        + ", ".join(f"{counts[p]} {p} request(s)" for p in plan_phases(plan))
    )
    vehicles = Table(title="Totals per vehicle (to create)")
    vehicles.add_column("vehicle")
    vehicles.add_column("USD", justify="right")
    for vehicle, cents in plan.totals_by_vehicle().items():
        vehicles.add_row(vehicle, _money(cents))
    console.print(vehicles)
    dists = Table(title="Distributions")
    for col in (
        "file",
        "external_reference",
        "name",
        "vehicle",
        "date",
        "payments",
        "USD",
        "action",
    ):
        dists.add_column(col, justify="right" if col in {"payments", "USD"} else "left")
    excluded = {f.file_hash for f in plan.files if f.excluded}
    for d in plan.distributions:
        action = d.action if d.file_hash not in excluded else f"{d.action} (refused)"
        dists.add_row(
            d.source_file,
            d.external_reference,
            d.name,
            d.vehicle,
            d.distribution_date,
            str(len(d.payments)),
            _money(d.total_cents),
            action + (f": {d.reason}" if d.reason else ""),
        )
    console.print(dists)
    reqs = Table(title="Requests it would send")
    for col in ("#", "phase", "request", "elements", "what", "Idempotency-Key"):
        reqs.add_column(col)
    for n, r in enumerate(plan.requests, 1):
        key = (
            r.resolve_key(plan.org_id)
            if not r.placeholders
            else "after " + ", ".join(sorted(str(p) for p in r.placeholders)[:3])
        )
        what = r.label
        if r.phase != "distributions":
            what += " " + json.dumps(display_body(list(r.body)), sort_keys=True)[:160]
        reqs.add_row(str(n), r.phase, f"{r.method} {r.path}", str(len(r.body)), what, key)
    console.print(reqs)


def plan_phases(plan: Plan) -> list[str]:
    """The phases the plan has requests in, in order."""
    return [p for p in PHASES if plan.phase(p)]


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
    console: Console | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    settle_s: float | None = None,
    batch_size: int | None = None,
    progress: ProgressSink | None = None,
) -> IngestResult:
    """Ingest ``paths`` (None → the inbox): validate, plan, pre-flight and submit exactly once.

    ``progress`` hears the files read and validated and the requests submitted.

    ``dry_run`` prints the plan and sends nothing (no file moves, no ledger writes).
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
    if settings.embedded and transport is None:
        from fundpipe.app.embedded import service

        with service(settings) as live:
            return ingest(
                live,
                paths,
                dry_run=dry_run,
                require_funds=require,
                console=console,
                transport=transport,
                progress=progress,
                settle_s=settle_s,
                batch_size=batch_size,
            )
    lock: AbstractContextManager[Any] = (
        nullcontext() if dry_run else InboxLock(settings.data_dir, settings.inbox_lock_wait_s)
    )
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
                    console=console,
                    transport=transport,
                    progress=progress,
                    batch_size=batch_size,
                )
            )
    if console is not None and not dry_run:
        render_result(done, console)
    return done


def _run_sync(coro: Coroutine[Any, Any, IngestResult]) -> IngestResult:
    """Run ``coro`` to completion, also when called from a thread with a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def render_result(result: IngestResult, console: Console) -> None:
    """Print one line per file: its verdict, rows by ledger state, and why."""
    for f in result.files:
        states = ", ".join(f"{n} {s}" for s, n in sorted(f.payment_states.items()))
        style = {"processed": "green", "duplicate": "cyan", "incomplete": "yellow"}.get(
            f.state, "red"
        )
        line = f"[{style}]{f.state}[/{style}] {f.source_file}"
        if f.distributions:
            line += (
                f": {f.distributions} distribution(s), {f.rows} row(s), {_money(f.total_cents)} USD"
            )
        if states:
            line += f" ({states})"
        if f.message:
            line += f" — {f.message}"
        console.print(line, highlight=False)


async def _run(
    settings: Settings,
    candidates: list[_Candidate],
    ledger: Ledger | None,
    result: IngestResult,
    *,
    in_inbox: bool,
    require_funds: bool,
    console: Console | None,
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
        if console is not None:
            for issue in checked.issues:
                style = "red" if issue.level == "error" else "yellow"
                console.print(
                    f"[{style}]{issue.level}[/{style}] {issue.source_file}: {issue.message}"
                )
            if dry_run:
                render_plan(plan, console)
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
        raise RuntimeError("FUNDPIPE_ORG_ID is required: the client reaches several organizations")
    return str(orgs[0])


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m fundpipe.submit.ingest [FILE...]``: ingest with settings from the environment.

    ``FUNDPIPE_INBOX_SETTLE_S`` (seconds a file must be unchanged) and
    ``FUNDPIPE_SUBMIT_BATCH_SIZE`` tune the run (see :class:`fundpipe.config.Settings`); the exit
    code is :attr:`IngestResult.exit_code`.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    settings = Settings()
    # WARNING unless FUNDPIPE_LOG_LEVEL is set: this entry point is scripted (and killed) by tests
    level = settings.log_level if "log_level" in settings.model_fields_set else "WARNING"
    logging.basicConfig(level=level)
    try:
        result = ingest(settings, [Path(a) for a in args] or None)
    except InboxBusyError as exc:
        print(f"busy: {exc}", file=sys.stderr)
        return 4
    for f in result.files:
        print(f"{f.state}\t{f.source_file}\t{f.message or ''}")
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
