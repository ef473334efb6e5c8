"""A month's state — open, or closed (which version, prepared by, reviewed or rejected by, the
manifest's hash, provisional or certified) — as the warehouse's append-only `period_events`
record it, and :func:`record_decision`, the one place every decision about a period is written.

The events of a period, oldest first: ``closed`` (a version of the package: v1, v2, …),
``reviewed`` or ``rejected`` (of the version closed last), ``reopened`` (the period is open
again; the next close is a new version beside the old one), ``certified`` (the first sync
that read the service's month-end balance of a provisional close), and ``changes_acknowledged``
(a person saw the figures that changed after the sign-off, up to its ``cutoff``). A period's
state at a moment is the fold of the events recorded before it: a past as-of shows the period
as it was that day.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, fields
from datetime import date, datetime
from typing import Any, Literal

import duckdb

from fundpipe.warehouse import records

__all__ = [
    "DECISIONS",
    "CloseError",
    "PeriodDecision",
    "PeriodState",
    "normalized_name",
    "period_of",
    "period_state",
    "period_states",
    "record_decision",
]


class CloseError(ValueError):
    """The close (or review, or verification) cannot be done as asked; the message says why."""


Decision = Literal[
    "closed", "reviewed", "rejected", "reopened", "certified", "changes_acknowledged"
]

#: The events of a period's history.
DECISIONS: tuple[Decision, ...] = (
    "closed",
    "reviewed",
    "rejected",
    "reopened",
    "certified",
    "changes_acknowledged",
)


def normalized_name(name: str) -> str:
    """A person's name as compared: Unicode NFKC, case-folded, whitespace collapsed."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())
    return " ".join(folded.split())


@dataclass(frozen=True, slots=True)
class PeriodDecision:
    """One decision about a period, as it is recorded (never changed once written)."""

    period: str
    event: Decision
    at: datetime
    by: str
    os_user: str | None = None
    version: int | None = None
    manifest_sha256: str | None = None
    review_sha256: str | None = None
    sync_id: str | None = None
    as_of: date | None = None
    #: A close's knowledge time: what its report read.
    cutoff: datetime | None = None
    folder: str | None = None
    reason: str | None = None
    one_person: bool | None = None
    provisional: bool | None = None


def record_decision(con: duckdb.DuckDBPyConnection, decision: PeriodDecision) -> dict[str, Any]:
    """Append `decision` to the warehouse's `period_events` (on `con`, a writable connection,
    inside the caller's transaction when it has one); return the row as inserted.

    Every decision about a period — a close prepared, reviewed, rejected, reopened, and a close
    certified by a sync — is written here and nowhere else; the caller hands the returned row
    to the organization's durable record (`fundpipe.record.record_decision`) once it is
    committed.
    """
    row: dict[str, Any] = {
        "period": decision.period,
        "event": decision.event,
        "event_at": decision.at,
        "by_name": decision.by,
        "os_user": decision.os_user,
        "manifest_sha256": decision.manifest_sha256,
        "sync_id": decision.sync_id,
        "as_of": decision.as_of,
        "cutoff": decision.cutoff,
        "folder": decision.folder,
        "version": decision.version,
        "reason": decision.reason,
        "review_sha256": decision.review_sha256,
        "one_person": decision.one_person,
        "provisional": decision.provisional,
    }
    con.execute(
        f"INSERT INTO period_events ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
        list(row.values()),
    )
    return row


@dataclass(frozen=True, slots=True)
class PeriodState:
    """A month's state: open, or closed (its version, by whom, reviewed or rejected by whom, the
    manifest's hash, provisional until the service's month-end balance is read)."""

    period: str
    state: Literal["open", "closed"]
    prepared_by: str | None = None
    prepared_at: datetime | None = None
    reviewed_by: str | None = None
    reviewed_at: datetime | None = None
    manifest_sha256: str | None = None
    folder: str | None = None
    sync_id: str | None = None
    #: The version closed last (1, 2, …; None: never closed).
    version: int | None = None
    prepared_os_user: str | None = None
    reviewed_os_user: str | None = None
    review_sha256: str | None = None
    rejected_by: str | None = None
    rejected_at: datetime | None = None
    rejection_reason: str | None = None
    #: The last reopening (an open period closed before; or a closed one reopened then closed).
    reopened_by: str | None = None
    reopened_at: datetime | None = None
    reopen_reason: str | None = None
    #: Closed before the service's month-end balance was known; certified by a later sync.
    provisional: bool = False
    certified_at: datetime | None = None
    certified_by_sync: str | None = None
    #: The review was allowed by the organization's one-person close setting.
    one_person: bool = False
    #: The close's knowledge time: a change learned from then on is a change after sign-off.
    cutoff: datetime | None = None
    #: The last acknowledgement of the changes after sign-off: by whom, and up to when.
    changes_acknowledged_by: str | None = None
    changes_acknowledged_to: datetime | None = None

    @property
    def closed(self) -> bool:
        """True while the period is closed (a reopened one is open until closed again)."""
        return self.state == "closed"

    @property
    def signed_off_through(self) -> datetime | None:
        """What the sign-off covers: the close's knowledge time, or the last acknowledgement of
        the changes after it (a change learned from then on is a change after sign-off)."""
        if not self.closed or self.cutoff is None:
            return None
        if self.changes_acknowledged_to and self.changes_acknowledged_to > self.cutoff:
            return self.changes_acknowledged_to
        return self.cutoff

    @property
    def decided(self) -> bool:
        """True once the version closed last was reviewed or rejected."""
        return self.reviewed_by is not None or self.rejected_by is not None

    def describe(self) -> str:
        """One line: ``open``, or ``closed: prepared by …, reviewed by …, manifest sha256 …``."""
        if not self.closed:
            if self.reopened_by is None:
                return "open"
            return (
                f"open: reopened by {self.reopened_by} on {_day(self.reopened_at)} "
                f"({self.reopen_reason}); v{self.version} is kept as filed"
            )
        version = f" v{self.version}" if self.version and self.version > 1 else ""
        prepared = f"prepared by {self.prepared_by} on {_day(self.prepared_at)}"
        if self.manifest_sha256 is None:
            return (
                f"closing{version}: {prepared} (this is the period's final report; "
                "manifest.json beside it lists every file's SHA-256)"
                + (
                    "; provisional: the service's month-end balance was not yet read, the first "
                    "sync that reads it certifies the close"
                    if self.provisional
                    else ""
                )
            )
        if self.reviewed_by:
            review = f"reviewed by {self.reviewed_by} on {_day(self.reviewed_at)}"
        elif self.rejected_by:
            review = (
                f"rejected by {self.rejected_by} on {_day(self.rejected_at)} "
                f"({self.rejection_reason})"
            )
        else:
            review = "not yet reviewed"
        if self.one_person:
            review += " (one-person close allowed by the organization)"
        balance = ""
        if self.provisional:
            balance = (
                f", month-end balance certified by {self.certified_by_sync} on "
                f"{_day(self.certified_at)}"
                if self.certified_at
                else ", provisional: the service's month-end balance not yet read"
            )
        return (
            f"closed{version}: {prepared}, {review}{balance}, "
            f"manifest sha256 {self.manifest_sha256}"
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = value.isoformat() if isinstance(value, datetime) else value
        return out


def _day(at: datetime | None) -> str:
    return at.date().isoformat() if at else "?"


def period_of(day: date) -> str:
    """The period (``YYYY-MM``) a day belongs to."""
    return f"{day.year:04d}-{day.month:02d}"


def _fold(period: str, events: list[dict[str, Any]]) -> PeriodState:
    """A period's state from its events, oldest first (read by column name)."""
    state: dict[str, Any] = {"period": period, "state": "open"}
    for e in events:
        kind = e["event"]
        if kind == "closed":
            reopened = {k: state.get(k) for k in ("reopened_by", "reopened_at", "reopen_reason")}
            state = {
                "period": period,
                "state": "closed",
                "prepared_by": e["by_name"],
                "prepared_at": e["event_at"],
                "prepared_os_user": e["os_user"],
                "manifest_sha256": e["manifest_sha256"],
                "folder": e["folder"],
                "sync_id": e["sync_id"],
                "version": e["version"] or (state.get("version") or 0) + 1,
                "provisional": bool(e["provisional"]),
                "cutoff": e["cutoff"],
                **reopened,
            }
        elif kind == "reviewed" and state["state"] == "closed":
            state.update(
                reviewed_by=e["by_name"],
                reviewed_at=e["event_at"],
                reviewed_os_user=e["os_user"],
                review_sha256=e["review_sha256"],
                one_person=bool(e["one_person"]),
            )
        elif kind == "rejected" and state["state"] == "closed":
            state.update(
                rejected_by=e["by_name"],
                rejected_at=e["event_at"],
                reviewed_os_user=e["os_user"],
                review_sha256=e["review_sha256"],
                rejection_reason=e["reason"],
                one_person=bool(e["one_person"]),
            )
        elif kind == "reopened":
            state = {
                "period": period,
                "state": "open",
                "version": state.get("version"),
                "folder": state.get("folder"),
                "reopened_by": e["by_name"],
                "reopened_at": e["event_at"],
                "reopen_reason": e["reason"],
            }
        elif kind == "certified" and state["state"] == "closed":
            state.update(certified_at=e["event_at"], certified_by_sync=e["sync_id"])
        elif kind == "changes_acknowledged" and state["state"] == "closed":
            state.update(changes_acknowledged_by=e["by_name"], changes_acknowledged_to=e["cutoff"])
    return PeriodState(**state)


def period_states(
    con: duckdb.DuckDBPyConnection, where: str = "true", params: list[Any] | None = None
) -> list[PeriodState]:
    """Every period with a decision recorded (matching `where`), oldest first."""
    rows = records(
        con,
        "SELECT period, event, event_at, by_name, os_user, manifest_sha256, sync_id, folder, cutoff, "
        f"version, reason, review_sha256, one_person, provisional FROM period_events "
        f"WHERE {where} ORDER BY period, seq",
        params,
    )
    by_period: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_period.setdefault(str(row["period"]), []).append(row)
    return [_fold(period, events) for period, events in by_period.items()]


def period_state(
    con: duckdb.DuckDBPyConnection, period: str, *, before: datetime | None = None
) -> PeriodState:
    """`period`'s state (as recorded before `before`, when given: a past as-of's view)."""
    where = "period = ?"
    params: list[Any] = [period]
    if before is not None:
        where, params = "period = ? AND event_at < ?", [period, before]
    found = period_states(con, where, params)
    return found[0] if found else PeriodState(period=period, state="open")
