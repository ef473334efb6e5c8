"""Period close: a month's final report, filed once per version, hashed, prepared and reviewed
by two different people, carrying its own evidence.

`close_period` writes the month's reconciliation as of its last day **as known at the close**
(what was learned or decided before the close — a payment executed late on the last day, an
acknowledgement on the 1st — counts in it; the valid time is the month, the knowledge time the
close) into `<reports>/closed/YYYY-MM/` (version 1; a period reopened and closed again goes to
`closed/YYYY-MM/v2/`, …) with a `manifest.json` — every file's SHA-256, the sync it was built
from, who prepared it and when, the closing balance of every account and the exceptions still
open — and the month's events (`events/`: exception events, period events, syncs). Each
account's closing balance is the service's month-end figure (`total_end_of_last_month`, read by
the first sync after the month); a close made before any sync read it says so and is
*provisional* until that sync certifies it (`fundpipe.sync.monthend`). The files are made
read-only and nothing rewrites them.

`review_period` / `reject_period` record the review of the version closed last — by another
person (names compared normalized, and another operating-system user, unless the
organization allows a one-person close) — in its own read-only file beside the package,
`closed/YYYY-MM.vN.review.json` (its hash kept in the warehouse; `review_file`), never in the
package's read-only folder, so anyone who may write the organization's `closed/` folder (another
OS user of its team) reviews; `reopen_period` opens a reviewed or rejected period again; `verify_period`
re-hashes every version's files, manifest and review. Every decision is written through
`fundpipe.reconcile.periods.record_decision`, then to the organization's durable record when
made (`fundpipe.record.record_decision`, with the files it filed).

A fact learned after the close that belongs to a closed month is an **after-close adjustment**
(the view `after_close_adjustments`, in the reports of the month it was learned in).

Longer than ~400 lines because the close, its review and its verification are one contract on
one folder layout (versions, manifest, review) and must change together.
"""

from __future__ import annotations

import calendar
import json
import os
import re
import shutil
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import duckdb

from fundpipe.config import Settings
from fundpipe.keys import file_hash
from fundpipe.reconcile.audit import write_events
from fundpipe.reconcile.export import end_of_day, set_point_in_time
from fundpipe.reconcile.folders import latest_as_of
from fundpipe.reconcile.lifecycle import os_user
from fundpipe.reconcile.periods import (
    CloseError,
    PeriodDecision,
    PeriodState,
    normalized_name,
    period_of,
    period_state,
    period_states,
    record_decision,
)
from fundpipe.reconcile.run import reconcile
from fundpipe.record import record_decision as keep_in_record
from fundpipe.warehouse import Warehouse, records, scratch, transaction

__all__ = [
    "MANIFEST",
    "REVIEW",
    "CloseError",
    "CloseResult",
    "PeriodState",
    "VerifyResult",
    "close_period",
    "closed_folder",
    "identity_of",
    "list_periods",
    "period_of",
    "period_state",
    "person_name",
    "reject_period",
    "reopen_period",
    "review_file",
    "review_period",
    "verify_period",
    "version_folder",
]

_PERIOD = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")
_VERSION = re.compile(r"^v\d+$")

#: The manifest's name in a closed version's folder; a review's name ends in REVIEW: it is
#: `closed/YYYY-MM.vN.review.json`, beside the package (`review_file`). A close reviewed before
#: that kept it in the package's folder as `review.json`, where it is still read.
MANIFEST = "manifest.json"
REVIEW = "review.json"

_READ_ONLY_DIR = (
    stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH
)


@dataclass(frozen=True, slots=True)
class CloseResult:
    """What a close (review, rejection, reopening) did: the period's state now and whether
    anything changed."""

    state: PeriodState
    changed: bool
    folder: Path
    open_exceptions: list[dict[str, Any]] = field(default_factory=list)
    review: Path | None = None


@dataclass(frozen=True, slots=True)
class VerifyResult:
    """A closed period's files (every version) against their manifests and reviews."""

    period: str
    ok: bool
    checked: int
    problems: list[str]
    versions: int = 1


def parse_period(text: str) -> tuple[date, date]:
    """``YYYY-MM`` → (first day, last day); CloseError for anything else."""
    match = _PERIOD.match(text.strip())
    if not match:
        raise CloseError(f"period {text!r} is not a month written YYYY-MM (e.g. 2026-11)")
    year, month = int(match.group(1)), int(match.group(2))
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def closed_folder(settings: Settings, period: str) -> Path:
    """`<reports>/closed/YYYY-MM`: where a closed period's files are (its first version)."""
    return settings.local.reports_folder / "closed" / period


def version_folder(settings: Settings, period: str, version: int) -> Path:
    """Where version `version` of a period's package is: v1 in `closed/YYYY-MM/`, a later one in
    `closed/YYYY-MM/vN/`."""
    folder = closed_folder(settings, period)
    return folder if version <= 1 else folder / f"v{version}"


def review_file(folder: Path, period: str, version: int | None) -> Path:
    """Where the review (or rejection) of the version of `period` filed in `folder` is: its own
    file `closed/YYYY-MM.vN.review.json`, beside the package and never in its read-only folder,
    so that anyone who may write the organization's `closed/` folder can review. A review made
    before, inside the folder (`closed/YYYY-MM/review.json`), is the one read when it exists."""
    version = version or 1
    closed = folder.parent if version <= 1 else folder.parent.parent
    inside = folder / REVIEW
    beside = closed / f"{period}.v{version}.{REVIEW}"
    return inside if inside.exists() and not beside.exists() else beside


def list_periods(
    settings: Settings, *, clock: Callable[[], datetime] | None = None
) -> list[PeriodState]:
    """Every month from the first sync (or first close, or last night's report) to this one,
    each open or closed."""
    now = (clock or (lambda: datetime.now(UTC)))()
    today = now.astimezone(ZoneInfo(settings.pipeline.reporting_timezone)).date()
    with Warehouse(settings.local.warehouse_file).read() as con:
        decided = {s.period: s for s in period_states(con)}
        row = con.execute("SELECT min(started_at), max(started_at) FROM syncs").fetchone()
    known = [date(int(p[:4]), int(p[5:]), 1) for p in decided]
    zone = ZoneInfo(settings.pipeline.reporting_timezone)
    if row and row[0]:
        known += [row[0].astimezone(zone).date(), row[1].astimezone(zone).date()]
    reported = latest_as_of(settings.local.reports_folder)
    if reported is not None:
        known.append(reported)
    start = min(known, default=today).replace(day=1)
    end = max([*known, today])
    out: list[PeriodState] = []
    cursor = start
    while cursor <= end:
        period = period_of(cursor)
        out.append(decided.get(period, PeriodState(period=period, state="open")))
        cursor = date(cursor.year + (cursor.month == 12), cursor.month % 12 + 1, 1)
    return out


def _freeze(folder: Path) -> None:
    """Make every file and the folder read-only (nothing of fundpipe writes there again)."""
    for path in folder.rglob("*"):
        if path.is_file():
            path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    for path in sorted((p for p in folder.rglob("*") if p.is_dir()), reverse=True):
        path.chmod(_READ_ONLY_DIR)
    folder.chmod(_READ_ONLY_DIR)


@contextmanager
def _adding_to(folder: Path) -> Iterator[Path]:
    """Let one new entry be added to a frozen folder (a review file, a later version's folder);
    its existing files stay as they are, and the folder is read-only again after."""
    folder.chmod(_READ_ONLY_DIR | stat.S_IWUSR)
    try:
        yield folder
    finally:
        folder.chmod(_READ_ONLY_DIR)


def _open_exceptions(exceptions: Path) -> list[dict[str, Any]]:
    """The exceptions of an exported report that nobody acknowledged (by its knowledge time)."""
    with scratch() as con:
        rows = con.execute(
            "SELECT exception_id, kind, coalesce(state, 'open'), amount_cents, what "
            "FROM read_parquet(?) WHERE state IS DISTINCT FROM 'acknowledged' "
            "ORDER BY kind, exception_id",
            [str(exceptions)],
        ).fetchall()
    return [
        {
            "id": str(r[0]),
            "kind": str(r[1]),
            "state": str(r[2]),
            "amount_cents": None if r[3] is None else int(r[3]),
            "what": str(r[4]),
        }
        for r in rows
    ]


def _closing_balances(
    con: duckdb.DuckDBPyConnection, period: str, last_day: date, zone: str, known_at: datetime
) -> list[dict[str, Any]]:
    """Each account's closing balance of `period` as known at `known_at`: the service's
    month-end figure (`month_end`) once a sync read it, else the month's last snapshot."""
    set_point_in_time(con, last_day, timezone=zone, known_at=known_at)
    return records(
        con,
        "SELECT financial_account, type, total_cents AS closing_cents, seen_at AS balance_seen_at, "
        "month_end, sync_id FROM rollforward_snapshots WHERE period = ? "
        "ORDER BY financial_account",
        [period],
    )


def _user(user: str | None) -> str | None:
    return user if user is not None else os_user()


def _name(text: str, option: str) -> str:
    name = " ".join(text.split())
    if not name:
        raise CloseError(f"a name is needed ({option})")
    return name


@dataclass(frozen=True, slots=True)
class _Package:
    """A close's package, built in its staging folder and not yet filed: what filing it and
    recording the decision need."""

    period: str
    version: int
    folder: Path
    staging: Path
    name: str
    preparer_user: str | None
    now: datetime
    last_day: date
    provisional: bool
    balances: list[dict[str, Any]]
    last_sync_id: str | None
    manifest_sha256: str
    still_open: list[dict[str, Any]]


def close_period(
    settings: Settings,
    period: str,
    *,
    prepared_by: str,
    with_open_exceptions: bool = False,
    clock: Callable[[], datetime] | None = None,
    user: str | None = None,
) -> CloseResult:
    """Close `period` (``YYYY-MM``): its final report as known now, a manifest, the month's
    events, a `closed` decision; see the module.

    Three steps: build the package (`_build_package`), file it (`_file_package`), record the
    decision (`_record_close`). Closing a closed period changes nothing (`changed` False); a
    reopened one is closed as a new version beside the old. Raises CloseError when the month has
    not ended, when the name is empty, or when exceptions are still open (unless
    `with_open_exceptions`: they are then listed in the manifest).
    """
    now = (clock or (lambda: datetime.now(UTC)))()
    warehouse = Warehouse(settings.local.warehouse_file)
    built = _build_package(
        settings,
        warehouse,
        period,
        prepared_by=prepared_by,
        with_open_exceptions=with_open_exceptions,
        now=now,
        user=user,
    )
    if isinstance(built, CloseResult):
        return built  # closed already: nothing changed
    _file_package(built)
    return _record_close(settings, warehouse, built)


def _build_package(
    settings: Settings,
    warehouse: Warehouse,
    period: str,
    *,
    prepared_by: str,
    with_open_exceptions: bool,
    now: datetime,
    user: str | None,
) -> _Package | CloseResult:
    """Step 1 of a close: check the month may be closed and build its package (the report as of
    its last day as known at `now`, the month's events, the manifest) in a staging folder beside
    the closed ones. A period closed already is its CloseResult (nothing changed)."""
    first_day, last_day = parse_period(period)
    period = period_of(first_day)
    name = _name(prepared_by, "--prepared-by")
    zone = settings.pipeline.reporting_timezone
    today = now.astimezone(ZoneInfo(zone)).date()
    if last_day >= today:
        raise CloseError(
            f"{period} has not ended yet in {zone} (its last day is {last_day}); close it from "
            f"{date.fromordinal(last_day.toordinal() + 1)}"
        )
    with warehouse.read() as con:
        existing = period_state(con, period)
        balances = _closing_balances(con, period, last_day, zone, now)
    if existing.closed:
        folder = Path(existing.folder) if existing.folder else closed_folder(settings, period)
        return CloseResult(state=existing, changed=False, folder=folder)
    version = (existing.version or 0) + 1
    folder = version_folder(settings, period, version)
    if folder.exists():
        raise CloseError(
            f"{folder} exists but the warehouse has no close of it: move it away first "
            "(nothing was changed)"
        )
    provisional = any(not b["month_end"] for b in balances)
    preparer_user = _user(user)
    staging = closed_folder(settings, period).parent / f".{period}.v{version}.staging-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)
    result = reconcile(
        settings,
        as_of=last_day,
        out_dir=staging,
        clock=lambda: now,
        warehouse=warehouse,
        known_at=now,
        closing=PeriodState(
            period=period,
            state="closed",
            prepared_by=name,
            prepared_at=now,
            prepared_os_user=preparer_user,
            folder=str(folder),
            version=version,
            provisional=provisional,
        ),
    )
    still_open = _open_exceptions(result.parquet["exceptions"])
    if still_open and not with_open_exceptions:
        shutil.rmtree(staging)
        listed = "; ".join(f"{e['id']} ({e['kind']})" for e in still_open[:10])
        more = f" and {len(still_open) - 10} more" if len(still_open) > 10 else ""
        raise CloseError(
            f"{period} has {len(still_open)} open exception(s) as of {last_day}: {listed}{more}. "
            "Acknowledge them (fundpipe exceptions ack), or close with --with-open-exceptions "
            "to list them in the manifest"
        )
    # the month's events, as known at the close, travel with the package
    with warehouse.read() as con:
        write_events(
            con,
            staging / "events",
            start=end_of_day(first_day - timedelta(days=1), zone),
            end=now + timedelta(microseconds=1),
        )
    files = {
        str(path.relative_to(staging)): file_hash(path)
        for path in sorted(staging.rglob("*"))
        if path.is_file()
    }
    manifest = {
        "period": period,
        "version": version,
        "as_of": last_day.isoformat(),
        "known_at": now.astimezone(UTC).isoformat(),
        "reporting_timezone": zone,
        "built_from_sync": {
            "sync_id": result.summary.last_sync_id,
            "finished_at": result.summary.last_sync_at.isoformat()
            if result.summary.last_sync_at
            else None,
        },
        "prepared_by": {
            "name": name,
            "os_user": preparer_user,
            "at": now.astimezone(UTC).isoformat(),
        },
        "closing_balances": {
            "provisional": provisional,
            "note": "provisional: the service's month-end balance was not yet read; the first "
            "sync that reads it certifies the close (fundpipe close --list)"
            if provisional
            else "the service's month-end balances (total_end_of_last_month)",
            "accounts": [
                {
                    "financial_account": b["financial_account"],
                    "type": b["type"],
                    "closing_cents": int(b["closing_cents"]),
                    "source": "month_end" if b["month_end"] else "last_snapshot",
                    "sync_id": b["sync_id"],
                }
                for b in balances
            ],
        },
        "files": files,
        "open_exceptions": still_open,
    }
    (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return _Package(
        period=period,
        version=version,
        folder=folder,
        staging=staging,
        name=name,
        preparer_user=preparer_user,
        now=now,
        last_day=last_day,
        provisional=provisional,
        balances=balances,
        last_sync_id=result.summary.last_sync_id,
        manifest_sha256=file_hash(staging / MANIFEST),
        still_open=still_open,
    )


def _file_package(package: _Package) -> None:
    """Step 2 of a close: move the staged package to its version's folder (v1 `closed/YYYY-MM/`,
    a later one `closed/YYYY-MM/vN/`) and make it read-only."""
    folder = package.folder
    if package.version == 1:
        folder.parent.mkdir(parents=True, exist_ok=True)
        package.staging.rename(folder)
    else:
        with _adding_to(folder.parent):
            package.staging.rename(folder)
    _freeze(folder)


def _record_close(settings: Settings, warehouse: Warehouse, package: _Package) -> CloseResult:
    """Step 3 of a close: the `closed` decision and each account's closing balance in the
    warehouse (one commit), then in the organization's durable record with the filed files."""
    period, version, now, folder = package.period, package.version, package.now, package.folder
    with warehouse.write() as con:
        with transaction(con):  # the decision and its closing balances: one commit
            closed = record_decision(
                con,
                PeriodDecision(
                    period=period,
                    event="closed",
                    at=now,
                    by=package.name,
                    os_user=package.preparer_user,
                    version=version,
                    manifest_sha256=package.manifest_sha256,
                    sync_id=package.last_sync_id,
                    as_of=package.last_day,
                    cutoff=now + timedelta(microseconds=1),
                    folder=str(folder),
                    provisional=package.provisional,
                ),
            )
            # each account's closing balance: the next month's roll-forward opens at it
            closing = [
                {
                    "period": period,
                    "financial_account": b["financial_account"],
                    "closing_cents": b["closing_cents"],
                    "balance_seen_at": b["balance_seen_at"],
                    "recorded_at": now,
                    "version": version,
                    "source": "month_end" if b["month_end"] else "provisional",
                }
                for b in package.balances
            ]
            if closing:
                con.executemany(
                    f"INSERT INTO period_closing_records ({', '.join(closing[0])}) "
                    f"VALUES ({', '.join('?' * len(closing[0]))})",
                    [list(row.values()) for row in closing],
                )
        state = period_state(con, period)
    # the decision and the package it filed, in the organization's durable record as made
    keep_in_record(
        settings,
        "closed",
        {"period_events": [closed], "period_closing_records": closing},
        at=now,
        files=sorted(p for p in folder.rglob("*") if p.is_file()),
    )
    return CloseResult(state=state, changed=True, folder=folder, open_exceptions=package.still_open)


def identity_of(user: str | None) -> str | None:
    """A signed-in identity recorded in the user column (``desk:oidc:<subject>``,
    ``desk:local:<email>``), else None (an operating-system user, or nothing)."""
    return user if user and user.startswith("desk:") and user.count(":") >= 2 else None


def person_name(by: str) -> str:
    """The name in what a decision records: without the CLI's ``(typed at the CLI by OS user
    …)`` or the desk's ``<email>``."""
    name = re.sub(r"\s*\(typed at the CLI by OS user [^)]*\)\s*$", "", by)
    return re.sub(r"\s*<[^>]*>\s*$", "", name).strip()


def _two_people(
    settings: Settings, state: PeriodState, name: str, reviewer_user: str | None
) -> bool:
    """Check the reviewer is not the preparer: by identity when both signed in at the desk,
    else names normalized and operating-system users; True when they are one person and the
    organization allows it (the review says so)."""
    mine, theirs = identity_of(reviewer_user), identity_of(state.prepared_os_user)
    if mine and theirs:
        same_identity = mine == theirs
        same_name = same_user = False
    else:
        same_identity = False
        same_name = normalized_name(person_name(name)) == normalized_name(
            person_name(state.prepared_by or "")
        )
        same_user = reviewer_user is not None and reviewer_user == state.prepared_os_user
    if not (same_identity or same_name or same_user):
        return False
    if settings.pipeline.one_person_close:
        return True
    if same_identity:
        raise CloseError(
            f"you prepared {state.period} (signed in as {state.prepared_by}): the review must "
            "be by another signed-in person"
        )
    if same_name:
        raise CloseError(
            f"{name} prepared {state.period} (as {state.prepared_by}; names are compared "
            "ignoring case, spacing and Unicode forms): the review must be by another person"
        )
    raise CloseError(
        f"the operating-system user {reviewer_user!r} prepared {state.period} (as "
        f"{state.prepared_by}): the review must be by another person at their own login, "
        "unless the organization allows a one-person close (FUNDPIPE_ONE_PERSON_CLOSE=true)"
    )


def _decided(state: PeriodState) -> str:
    if state.reviewed_by:
        return f"reviewed by {state.reviewed_by} on {state.reviewed_at:%Y-%m-%d %H:%M %Z}"
    return (
        f"rejected by {state.rejected_by} on {state.rejected_at:%Y-%m-%d %H:%M %Z} "
        f"({state.rejection_reason})"
    )


def _decide(
    settings: Settings,
    period: str,
    decision: str,
    by: str,
    reason: str | None,
    clock: Callable[[], datetime] | None,
    user: str | None,
) -> CloseResult:
    """Record the review (`reviewed` / `rejected`) of the version closed last: review.json
    beside its manifest, and the decision."""
    first_day, _ = parse_period(period)
    period = period_of(first_day)
    name = _name(by, "--by")
    if decision == "rejected" and not (reason or "").strip():
        raise CloseError("a rejection needs the reason (--reason TEXT)")
    reason = " ".join((reason or "").split()) or None
    now = (clock or (lambda: datetime.now(UTC)))()
    reviewer_user = _user(user)
    warehouse = Warehouse(settings.local.warehouse_file)
    with warehouse.write() as con:
        state = period_state(con, period)
        if not state.closed:
            raise CloseError(
                f"{period} is not closed: close it first (fundpipe close month {period} "
                "--prepared-by NAME)"
            )
        folder = Path(state.folder) if state.folder else closed_folder(settings, period)
        if state.decided:
            same = (state.reviewed_by if decision == "reviewed" else state.rejected_by) or ""
            if normalized_name(same) == normalized_name(name) and (
                decision == "reviewed" or reason == state.rejection_reason
            ):
                return CloseResult(state=state, changed=False, folder=folder)
            raise CloseError(
                f"{period} (version {state.version}) was already {_decided(state)}; a review is "
                f"made once. To change it, reopen the period (fundpipe close reopen {period} "
                "--by NAME --reason TEXT) and close it again: the new version is reviewed"
            )
        one_person = _two_people(settings, state, name, reviewer_user)
        review_path = review_file(folder, period, state.version)
        if review_path.exists():
            raise CloseError(
                f"{review_path} exists but the warehouse has no review of it: move it away "
                "first (nothing was changed)"
            )
        review = {
            "period": period,
            "version": state.version,
            "decision": decision,
            "by": name,
            "os_user": reviewer_user,
            "at": now.astimezone(UTC).isoformat(),
            "reason": reason,
            "manifest_sha256": state.manifest_sha256,
            "prepared_by": {
                "name": state.prepared_by,
                "os_user": state.prepared_os_user,
                "at": state.prepared_at.astimezone(UTC).isoformat() if state.prepared_at else None,
            },
            "one_person_close": one_person,
        }
        _write_once(review_path, json.dumps(review, indent=2) + "\n")
        decided = record_decision(
            con,
            PeriodDecision(
                period=period,
                event="reviewed" if decision == "reviewed" else "rejected",
                at=now,
                by=name,
                os_user=reviewer_user,
                version=state.version,
                manifest_sha256=state.manifest_sha256,
                review_sha256=file_hash(review_path),
                reason=reason,
                one_person=one_person,
                folder=str(folder),
            ),
        )
        state = period_state(con, period)
    keep_in_record(
        settings, str(decided["event"]), {"period_events": [decided]}, at=now, files=[review_path]
    )
    return CloseResult(state=state, changed=True, folder=folder, review=review_path)


def _write_once(path: Path, text: str) -> None:
    """Write a new read-only file at `path` whole or not at all (a temporary file beside it,
    renamed into place); the package's folder is never written."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        temporary.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        temporary.rename(path)
    finally:
        temporary.unlink(missing_ok=True)


def review_period(
    settings: Settings,
    period: str,
    *,
    reviewed_by: str,
    clock: Callable[[], datetime] | None = None,
    user: str | None = None,
) -> CloseResult:
    """Record that `reviewed_by` reviewed the version of `period` closed last (another person
    than its preparer, at another login). The same review again changes nothing; another one
    is an error saying who decided and how to reopen."""
    return _decide(settings, period, "reviewed", reviewed_by, None, clock, user)


def reject_period(
    settings: Settings,
    period: str,
    *,
    rejected_by: str,
    reason: str,
    clock: Callable[[], datetime] | None = None,
    user: str | None = None,
) -> CloseResult:
    """Record that `rejected_by` rejected the version of `period` closed last, with `reason`
    (the reviewer's decision, under the same two-person rule as a review)."""
    return _decide(settings, period, "rejected", rejected_by, reason, clock, user)


def reopen_period(
    settings: Settings,
    period: str,
    *,
    by: str,
    reason: str,
    clock: Callable[[], datetime] | None = None,
    user: str | None = None,
) -> CloseResult:
    """Open a reviewed or rejected `period` again, with `reason`. Its closed version stays as
    filed; the next close is a new version beside it."""
    first_day, _ = parse_period(period)
    period = period_of(first_day)
    name = _name(by, "--by")
    if not reason.strip():
        raise CloseError("a reopening needs the reason (--reason TEXT)")
    now = (clock or (lambda: datetime.now(UTC)))()
    with Warehouse(settings.local.warehouse_file).write() as con:
        state = period_state(con, period)
        if not state.closed:
            raise CloseError(f"{period} is not closed: there is nothing to reopen")
        if not state.decided:
            raise CloseError(
                f"{period} (version {state.version}) is not yet reviewed: its reviewer rejects "
                f"it first (fundpipe close reject {period} --by NAME --reason TEXT)"
            )
        reopened = record_decision(
            con,
            PeriodDecision(
                period=period,
                event="reopened",
                at=now,
                by=name,
                os_user=_user(user),
                version=state.version,
                reason=" ".join(reason.split()),
                folder=state.folder,
            ),
        )
        state = period_state(con, period)
    keep_in_record(settings, "reopened", {"period_events": [reopened]}, at=now)
    folder = Path(state.folder) if state.folder else closed_folder(settings, period)
    return CloseResult(state=state, changed=True, folder=folder)


def _check_version(
    folder: Path, review: Path, manifest_sha256: str | None, review_sha256: str | None
) -> tuple[int, list[str]]:
    """One version's folder against its manifest and the hashes the warehouse recorded."""
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        return 0, [f"{manifest_path} is missing"]
    problems: list[str] = []
    if file_hash(manifest_path) != manifest_sha256:
        problems.append(f"{MANIFEST} differs from the one recorded at the close")
    files: dict[str, str] = json.loads(manifest_path.read_text(encoding="utf-8"))["files"]
    for name, expected in files.items():
        path = folder / name
        if not path.is_file():
            problems.append(f"{name} is missing")
        elif file_hash(path) != expected:
            problems.append(f"{name} changed (sha256 differs from the manifest)")
    if review_sha256 is not None:
        if not review.is_file():
            problems.append(f"{review.name} is missing")
        elif file_hash(review) != review_sha256:
            problems.append(f"{review.name} differs from the one recorded at the review")
    elif review.exists():
        problems.append(f"{review.name} is not a review the warehouse recorded")
    for path in folder.rglob("*"):
        relative = path.relative_to(folder)
        if _VERSION.match(relative.parts[0]) and (folder / relative.parts[0]).is_dir():
            continue  # a later version's folder: checked on its own
        name = str(relative)
        if path.is_file() and name not in files and name != MANIFEST and path != review:
            problems.append(f"{name} is not in the manifest")
    return len(files), problems


def verify_period(settings: Settings, period: str) -> VerifyResult:
    """Re-hash every version of a closed period: its files against its manifest, the manifest
    and the review against the hashes the warehouse recorded."""
    first_day, _ = parse_period(period)
    period = period_of(first_day)
    with Warehouse(settings.local.warehouse_file).read() as con:
        events = records(
            con,
            "SELECT event, version, folder, manifest_sha256, review_sha256 FROM period_events "
            "WHERE period = ? ORDER BY seq",
            [period],
        )
    closes: list[dict[str, Any]] = []
    for e in events:
        if e["event"] == "closed":
            closes.append({**e, "version": e["version"] or len(closes) + 1, "review": None})
        elif e["event"] in ("reviewed", "rejected") and closes:
            closes[-1]["review"] = e["review_sha256"]
    if not closes:
        raise CloseError(f"{period} is not closed: nothing to verify")
    checked, problems = 0, []
    for close in closes:
        folder = (
            Path(close["folder"])
            if close["folder"]
            else version_folder(settings, period, close["version"])
        )
        n, found = _check_version(
            folder,
            review_file(folder, period, close["version"]),
            close["manifest_sha256"],
            close["review"],
        )
        checked += n
        problems += [f"v{close['version']}: {p}" for p in found]
    return VerifyResult(period, not problems, checked, problems, versions=len(closes))
