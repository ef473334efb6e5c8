"""A month's state — open, or closed (prepared by, reviewed by, the manifest's hash) — as the
warehouse's append-only `period_events` record it (fundpipe.reconcile.close writes them)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

import duckdb

from fundpipe.warehouse.file import records

__all__ = ["PeriodState", "period_of", "period_state", "period_states"]


@dataclass(frozen=True, slots=True)
class PeriodState:
    """A month's state: open, or closed (by whom, reviewed by whom, the manifest's hash)."""

    period: str
    state: Literal["open", "closed"]
    prepared_by: str | None = None
    prepared_at: datetime | None = None
    reviewed_by: str | None = None
    reviewed_at: datetime | None = None
    manifest_sha256: str | None = None
    folder: str | None = None
    sync_id: str | None = None

    @property
    def closed(self) -> bool:
        """True once the period was closed."""
        return self.state == "closed"

    def describe(self) -> str:
        """One line: ``open``, or ``closed: prepared by …, reviewed by …, manifest sha256 …``."""
        if not self.closed:
            return "open"
        if self.manifest_sha256 is None:
            return (
                f"closing: prepared by {self.prepared_by} (this is the period's final report; "
                "manifest.json beside it lists every file's SHA-256)"
            )
        reviewed = f"reviewed by {self.reviewed_by}" if self.reviewed_by else "not yet reviewed"
        return (
            f"closed: prepared by {self.prepared_by}, {reviewed}, "
            f"manifest sha256 {self.manifest_sha256}"
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "period": self.period,
            "state": self.state,
            "prepared_by": self.prepared_by,
            "prepared_at": self.prepared_at.isoformat() if self.prepared_at else None,
            "reviewed_by": self.reviewed_by,
            "reviewed_at": self.reviewed_at.isoformat() if self.reviewed_at else None,
            "manifest_sha256": self.manifest_sha256,
            "folder": self.folder,
            "sync_id": self.sync_id,
        }


#: What a closed period's state is read from: one expression per `PeriodState` field, named
#: as the field (read by name, so their order here means nothing).
_CLOSED_COLUMNS = (
    "period",
    "arg_min(by_name, seq) FILTER (WHERE event = 'closed') AS prepared_by",
    "min(event_at) FILTER (WHERE event = 'closed') AS prepared_at",
    "arg_min(by_name, seq) FILTER (WHERE event = 'reviewed') AS reviewed_by",
    "min(event_at) FILTER (WHERE event = 'reviewed') AS reviewed_at",
    "arg_min(manifest_sha256, seq) FILTER (WHERE event = 'closed') AS manifest_sha256",
    "arg_min(folder, seq) FILTER (WHERE event = 'closed') AS folder",
    "arg_min(sync_id, seq) FILTER (WHERE event = 'closed') AS sync_id",
)


def period_of(day: date) -> str:
    """The period (``YYYY-MM``) a day belongs to."""
    return f"{day.year:04d}-{day.month:02d}"


def period_states(
    con: duckdb.DuckDBPyConnection, where: str = "true", params: list[Any] | None = None
) -> list[PeriodState]:
    """Every closed period (matching `where`), oldest first."""
    rows = records(
        con,
        f"""
        SELECT {", ".join(_CLOSED_COLUMNS)}
        FROM period_events WHERE {where}
        GROUP BY period HAVING count(*) FILTER (WHERE event = 'closed') > 0
        ORDER BY period
        """,
        params,
    )
    return [PeriodState(state="closed", **r) for r in rows]


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
