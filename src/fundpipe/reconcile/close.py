"""Period close: a month's final report, filed once, hashed, prepared and reviewed.

`close_period` writes the month's reconciliation as of its last day (workbook + Parquet, the
books as fundpipe knew them at the end of that day in the reporting timezone) into
`<reports>/closed/YYYY-MM/` with a `manifest.json` — every file's SHA-256, the sync it was built
from, who prepared it and when, and the exceptions still open — and records the close in the
warehouse's append-only `period_events` (migration 011). The files are made read-only and
nothing rewrites them: closing again changes nothing, `review_period` records the review as
another event (by another person), and `verify_period` re-hashes the files. Each close and
review is also written to the organization's durable record when made
(`fundpipe.record.record_decision`, with the close's files).

A fact learned after the close that belongs to a closed month (a November payment changed in
December) is an **after-close adjustment**: the view `after_close_adjustments` lists it in the
reports of the month it was learned in, and the `exceptions` view makes it an exception.
"""

from __future__ import annotations

import calendar
import hashlib
import json
import os
import re
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import duckdb

from fundpipe.config import Settings
from fundpipe.reconcile.lifecycle import os_user
from fundpipe.reconcile.periods import PeriodState, period_of, period_state, period_states
from fundpipe.reconcile.views import reconcile
from fundpipe.record import record_decision
from fundpipe.warehouse.file import Warehouse, records

__all__ = [
    "CloseError",
    "CloseResult",
    "PeriodState",
    "VerifyResult",
    "close_period",
    "closed_folder",
    "list_periods",
    "period_of",
    "period_state",
    "review_period",
    "verify_period",
]

_PERIOD = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")

#: The manifest's name in a closed period's folder.
MANIFEST = "manifest.json"


class CloseError(ValueError):
    """The close (or review, or verification) cannot be done as asked; the message says why."""


@dataclass(frozen=True, slots=True)
class CloseResult:
    """What a close (or review) did: the period's state now and whether anything changed."""

    state: PeriodState
    changed: bool
    folder: Path
    open_exceptions: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class VerifyResult:
    """A closed period's files against its manifest."""

    period: str
    ok: bool
    checked: int
    problems: list[str]


def parse_period(text: str) -> tuple[date, date]:
    """``YYYY-MM`` → (first day, last day); CloseError for anything else."""
    match = _PERIOD.match(text.strip())
    if not match:
        raise CloseError(f"period {text!r} is not a month written YYYY-MM (e.g. 2026-11)")
    year, month = int(match.group(1)), int(match.group(2))
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def closed_folder(settings: Settings, period: str) -> Path:
    """`<reports>/closed/YYYY-MM`: where a closed period's files are."""
    return settings.reports_folder / "closed" / period


def list_periods(
    settings: Settings, *, clock: Callable[[], datetime] | None = None
) -> list[PeriodState]:
    """Every month from the first sync (or first close) to this one, each open or closed."""
    now = (clock or (lambda: datetime.now(UTC)))()
    today = now.astimezone(ZoneInfo(settings.reporting_timezone)).date()
    with Warehouse(settings.warehouse_file).read() as con:
        closed = {s.period: s for s in period_states(con)}
        row = con.execute("SELECT min(started_at), max(started_at) FROM syncs").fetchone()
    known = [date(int(p[:4]), int(p[5:]), 1) for p in closed]
    zone = ZoneInfo(settings.reporting_timezone)
    if row and row[0]:
        known += [row[0].astimezone(zone).date(), row[1].astimezone(zone).date()]
    start = min(known, default=today).replace(day=1)
    end = max([*known, today])
    out: list[PeriodState] = []
    cursor = start
    while cursor <= end:
        period = period_of(cursor)
        out.append(closed.get(period, PeriodState(period=period, state="open")))
        cursor = date(cursor.year + (cursor.month == 12), cursor.month % 12 + 1, 1)
    return out


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _freeze(folder: Path) -> None:
    """Make every file and the folder read-only (nothing of fundpipe writes there again)."""
    for path in folder.rglob("*"):
        if path.is_file():
            path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    for path in sorted((p for p in folder.rglob("*") if p.is_dir()), reverse=True):
        path.chmod(
            stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH
        )
    folder.chmod(
        stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH
    )


def _open_exceptions(exceptions: Path) -> list[dict[str, Any]]:
    """The exceptions of an exported report that nobody acknowledged."""
    con = duckdb.connect()
    try:
        rows = con.execute(
            "SELECT exception_id, kind, coalesce(state, 'open'), amount_cents, what "
            "FROM read_parquet(?) WHERE state IS DISTINCT FROM 'acknowledged' "
            "ORDER BY kind, exception_id",
            [str(exceptions)],
        ).fetchall()
    finally:
        con.close()
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


def close_period(
    settings: Settings,
    period: str,
    *,
    prepared_by: str,
    with_open_exceptions: bool = False,
    clock: Callable[[], datetime] | None = None,
    user: str | None = None,
) -> CloseResult:
    """Close `period` (``YYYY-MM``): its final report, a manifest, an event; see the module.

    Closing a closed period changes nothing (`changed` False). Raises CloseError when the month
    has not ended, when the name is empty, or when exceptions are still open (unless
    `with_open_exceptions`: they are then listed in the manifest).
    """
    first_day, last_day = parse_period(period)
    period = period_of(first_day)
    if not prepared_by.strip():
        raise CloseError("a close needs the preparer's name (--prepared-by)")
    now = (clock or (lambda: datetime.now(UTC)))()
    zone = settings.reporting_timezone
    today = now.astimezone(ZoneInfo(zone)).date()
    if last_day >= today:
        raise CloseError(
            f"{period} has not ended yet in {zone} (its last day is {last_day}); close it from "
            f"{date.fromordinal(last_day.toordinal() + 1)}"
        )
    warehouse = Warehouse(settings.warehouse_file)
    folder = closed_folder(settings, period)
    with warehouse.read() as con:
        existing = period_state(con, period)
    if existing.closed:
        return CloseResult(state=existing, changed=False, folder=folder)
    if folder.exists():
        raise CloseError(
            f"{folder} exists but the warehouse has no close of {period}: move it away first "
            "(nothing was changed)"
        )
    staging = folder.parent / f".{period}.staging-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)
    result = reconcile(
        settings,
        as_of=last_day,
        out_dir=staging,
        clock=lambda: now,
        warehouse=warehouse,
        closing=PeriodState(
            period=period, state="closed", prepared_by=prepared_by.strip(), prepared_at=now
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
    files = {
        str(path.relative_to(staging)): _sha256(path)
        for path in sorted(staging.rglob("*"))
        if path.is_file()
    }
    manifest = {
        "period": period,
        "as_of": last_day.isoformat(),
        "reporting_timezone": zone,
        "built_from_sync": {
            "sync_id": result.summary.last_sync_id,
            "finished_at": result.summary.last_sync_at.isoformat()
            if result.summary.last_sync_at
            else None,
        },
        "prepared_by": {
            "name": prepared_by.strip(),
            "os_user": user if user is not None else os_user(),
            "at": now.astimezone(UTC).isoformat(),
        },
        "files": files,
        "open_exceptions": still_open,
    }
    (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    manifest_hash = _sha256(staging / MANIFEST)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging.rename(folder)
    _freeze(folder)
    cutoff = datetime.combine(
        date.fromordinal(last_day.toordinal() + 1), datetime.min.time(), ZoneInfo(zone)
    )
    event = {
        "period": period,
        "event": "closed",
        "event_at": now,
        "by_name": prepared_by.strip(),
        "os_user": user if user is not None else os_user(),
        "manifest_sha256": manifest_hash,
        "sync_id": result.summary.last_sync_id,
        "as_of": last_day,
        "cutoff": cutoff,
        "folder": str(folder),
    }
    with warehouse.write() as con:
        _insert(con, "period_events", event)
        # each account's closing balance in the closed report: the next month's roll-forward
        # opens at it (migration 022)
        con.execute(
            "INSERT INTO period_closing_balances "
            "(period, financial_account, closing_cents, balance_seen_at, recorded_at) "
            "SELECT ?, financial_account, service_total_cents, balance_seen_at, ? "
            "FROM read_parquet(?) WHERE period = ?",
            [period, now, str(folder / result.parquet["rollforward"].relative_to(staging)), period],
        )
        balances = records(con, "SELECT * FROM period_closing_balances WHERE period = ?", [period])
        state = period_state(con, period)
    record_decision(
        settings,
        "closed",
        {"period_events": [event], "period_closing_balances": balances},
        at=now,
        files=sorted(p for p in folder.rglob("*") if p.is_file()),
    )
    return CloseResult(state=state, changed=True, folder=folder, open_exceptions=still_open)


def _insert(con: duckdb.DuckDBPyConnection, table: str, row: dict[str, Any]) -> None:
    """One row of a period table (the same dict is what the durable record keeps)."""
    con.execute(
        f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
        list(row.values()),
    )


def review_period(
    settings: Settings,
    period: str,
    *,
    reviewed_by: str,
    clock: Callable[[], datetime] | None = None,
    user: str | None = None,
) -> CloseResult:
    """Record that `reviewed_by` reviewed the closed `period` (not its preparer). A second
    review changes nothing."""
    first_day, _ = parse_period(period)
    period = period_of(first_day)
    name = reviewed_by.strip()
    if not name:
        raise CloseError("a review needs the reviewer's name (--reviewed-by)")
    now = (clock or (lambda: datetime.now(UTC)))()
    warehouse = Warehouse(settings.warehouse_file)
    folder = closed_folder(settings, period)
    with warehouse.write() as con:
        state = period_state(con, period)
        if not state.closed:
            raise CloseError(f"{period} is not closed: close it first (--prepared-by)")
        if state.reviewed_by is not None:
            return CloseResult(state=state, changed=False, folder=folder)
        if name.casefold() == (state.prepared_by or "").strip().casefold():
            raise CloseError(f"{name} prepared {period}: the review must be by another person")
        event = {
            "period": period,
            "event": "reviewed",
            "event_at": now,
            "by_name": name,
            "os_user": user if user is not None else os_user(),
            "manifest_sha256": state.manifest_sha256,
        }
        _insert(con, "period_events", event)
        state = period_state(con, period)
    record_decision(settings, "reviewed", {"period_events": [event]}, at=now)
    return CloseResult(state=state, changed=True, folder=folder)


def verify_period(settings: Settings, period: str) -> VerifyResult:
    """Re-hash a closed period's files against its manifest (and the manifest against the hash
    the warehouse recorded at the close)."""
    first_day, _ = parse_period(period)
    period = period_of(first_day)
    with Warehouse(settings.warehouse_file).read() as con:
        state = period_state(con, period)
    if not state.closed:
        raise CloseError(f"{period} is not closed: nothing to verify")
    folder = closed_folder(settings, period)
    manifest_path = folder / MANIFEST
    problems: list[str] = []
    if not manifest_path.is_file():
        return VerifyResult(period, False, 0, [f"{manifest_path} is missing"])
    if _sha256(manifest_path) != state.manifest_sha256:
        problems.append(f"{MANIFEST} differs from the one recorded at the close")
    files: dict[str, str] = json.loads(manifest_path.read_text(encoding="utf-8"))["files"]
    for name, expected in files.items():
        path = folder / name
        if not path.is_file():
            problems.append(f"{name} is missing")
        elif _sha256(path) != expected:
            problems.append(f"{name} changed (sha256 differs from the manifest)")
    extra = sorted(
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.is_file() and p.name != MANIFEST and str(p.relative_to(folder)) not in files
    )
    problems.extend(f"{name} is not in the manifest" for name in extra)
    return VerifyResult(period, not problems, len(files), problems)
