"""Changed after sign-off: a closed month whose figures changed after its close, through
after-close adjustments (the view `after_close_adjustments`), until a person acknowledges them
(`acknowledge_changes`, a ``changes_acknowledged`` period event in the warehouse and in the
organization's durable record) or the month is reopened.

The view lists the adjustments learned in its as-of's month; a close's changes are those
learned from its knowledge time (or the last acknowledgement) to now, so each month from the
closed one to this one is read and a payment changed twice is shown once, as it is now.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import duckdb

from fundpipe.cents import format_cents
from fundpipe.config import Settings
from fundpipe.reconcile.export import set_point_in_time
from fundpipe.reconcile.lifecycle import os_user
from fundpipe.reconcile.periods import (
    CloseError,
    PeriodDecision,
    PeriodState,
    period_state,
    period_states,
    record_decision,
)
from fundpipe.record import record_decision as keep_in_record
from fundpipe.warehouse import Warehouse, records

__all__ = [
    "ChangeAfterSignOff",
    "SignOff",
    "acknowledge_changes",
    "changes_after_signoff",
    "signed_months",
    "signoffs",
]


@dataclass(frozen=True, slots=True)
class ChangeAfterSignOff:
    """One payment of a closed month that changed after its sign-off."""

    payment_id: str
    distribution: str
    entity: str | None
    effective_date: date
    closed_cents: int | None
    now_cents: int
    change_cents: int
    learned_at: datetime

    @property
    def change(self) -> str:
        """The change, in dollars (signed)."""
        sign = "+" if self.change_cents > 0 else ""
        return sign + format_cents(self.change_cents)

    @property
    def closed_amount(self) -> str:
        """The amount the closed report showed (``not in it`` for a payment learned after)."""
        return "not in it" if self.closed_cents is None else format_cents(self.closed_cents)

    @property
    def now_amount(self) -> str:
        """The amount as known now."""
        return format_cents(self.now_cents)


def _months(first: date, last: date) -> list[date]:
    out, cursor = [], first.replace(day=1)
    while cursor <= last:
        out.append(cursor)
        cursor = date(cursor.year + (cursor.month == 12), cursor.month % 12 + 1, 1)
    return out


def changes_after_signoff(
    con: duckdb.DuckDBPyConnection, state: PeriodState, *, zone: str, now: datetime
) -> list[ChangeAfterSignOff]:
    """The after-close adjustments of closed `state`'s month learned since its sign-off (its
    close, or the last acknowledgement), as known at `now`, oldest first; none when the month
    is open."""
    since = state.signed_off_through
    if since is None:
        return []
    today = now.astimezone(ZoneInfo(zone)).date()
    found: dict[str, dict[str, object]] = {}
    for month in _months(since.astimezone(ZoneInfo(zone)).date(), today):
        last = date(month.year + (month.month == 12), month.month % 12 + 1, 1).toordinal() - 1
        set_point_in_time(con, min(date.fromordinal(last), today), timezone=zone, known_at=now)
        for row in records(
            con,
            "SELECT payment_id, coalesce(distribution_name, distribution_external_reference, "
            "distribution_id) AS distribution, entity, effective_date, closed_amount_cents, "
            "amount_cents, change_cents, learned_at FROM after_close_adjustments "
            "WHERE period = ? AND learned_at >= ?",
            [state.period, since],
        ):
            found[str(row["payment_id"])] = row
    return sorted(
        (
            ChangeAfterSignOff(
                payment_id=str(r["payment_id"]),
                distribution=str(r["distribution"]),
                entity=None if r["entity"] is None else str(r["entity"]),
                effective_date=r["effective_date"],  # type: ignore[arg-type]
                closed_cents=None
                if r["closed_amount_cents"] is None
                else int(r["closed_amount_cents"]),  # type: ignore[call-overload]
                now_cents=int(r["amount_cents"]),  # type: ignore[call-overload]
                change_cents=int(r["change_cents"]),  # type: ignore[call-overload]
                learned_at=r["learned_at"],  # type: ignore[arg-type]
            )
            for r in found.values()
        ),
        key=lambda c: (c.learned_at, c.payment_id),
    )


def acknowledge_changes(
    settings: Settings,
    period: str,
    *,
    by: str,
    user: str | None = None,
    clock: Callable[[], datetime] | None = None,
) -> tuple[PeriodState, list[ChangeAfterSignOff]]:
    """Record that `by` (at `user`: the desk's identity; default: this process's OS user) saw the changes after
    sign-off of closed `period` up to now; return the state after and the changes seen.
    Raises CloseError when the month is not closed or nothing changed since its sign-off."""
    now = (clock or (lambda: datetime.now(UTC)))()
    zone = settings.pipeline.reporting_timezone
    with Warehouse(settings.local.warehouse_file).write() as con:
        state = period_state(con, period)
        if not state.closed:
            raise CloseError(f"{period} is not closed: it has no sign-off to keep")
        changes = changes_after_signoff(con, state, zone=zone, now=now)
        if not changes:
            raise CloseError(f"{period} has not changed since its sign-off: nothing to acknowledge")
        row = record_decision(
            con,
            PeriodDecision(
                period=period,
                event="changes_acknowledged",
                at=now,
                by=by,
                os_user=user if user is not None else os_user(),
                version=state.version,
                cutoff=now,
                reason=f"{len(changes)} change(s) after sign-off seen",
                folder=state.folder,
            ),
        )
        state = period_state(con, period)
    keep_in_record(settings, "changes_acknowledged", {"period_events": [row]}, at=now)
    return state, changes


@dataclass(frozen=True, slots=True)
class SignOff:
    """A month's state with the changes after its sign-off (none for an open month)."""

    state: PeriodState
    changes: tuple[ChangeAfterSignOff, ...]

    @property
    def changed_after_signoff(self) -> bool:
        """True while a closed month has changes nobody acknowledged."""
        return bool(self.changes)

    @property
    def change_total(self) -> str:
        """The changes' sum, in dollars (signed)."""
        total = sum(c.change_cents for c in self.changes)
        return ("+" if total > 0 else "") + format_cents(total)

    def describe(self) -> str:
        """The state's line, with ``changed after sign-off: …`` when it is."""
        line = self.state.describe()
        if not self.changes:
            return line
        listed = "; ".join(
            f"{c.distribution} payment {c.payment_id} {c.change}" for c in self.changes[:5]
        )
        more = f" and {len(self.changes) - 5} more" if len(self.changes) > 5 else ""
        return (
            f"{line}; CHANGED AFTER SIGN-OFF: {len(self.changes)} adjustment(s), "
            f"{self.change_total}: {listed}{more}"
        )


def signoffs(
    settings: Settings, periods: list[PeriodState], *, clock: Callable[[], datetime] | None = None
) -> list[SignOff]:
    """Each of `periods` with its changes after sign-off, as known now."""
    now = (clock or (lambda: datetime.now(UTC)))()
    zone = settings.pipeline.reporting_timezone
    if not any(p.closed for p in periods) or not settings.local.warehouse_file.exists():
        return [SignOff(p, ()) for p in periods]
    with Warehouse(settings.local.warehouse_file).read() as con:
        return [
            SignOff(p, tuple(changes_after_signoff(con, p, zone=zone, now=now))) for p in periods
        ]


def signed_months(
    con: duckdb.DuckDBPyConnection, *, zone: str, known_at: datetime
) -> list[SignOff]:
    """Every month closed as `known_at` knew it, oldest first, each with its changes after
    sign-off as known then (what a report issued at `known_at` says of the closed months).

    It moves `con`'s point in time: read the views before calling it."""
    before = known_at + timedelta(microseconds=1)
    closed = [p for p in period_states(con, "event_at < ?", [before]) if p.closed]
    return [
        SignOff(p, tuple(changes_after_signoff(con, p, zone=zone, now=known_at))) for p in closed
    ]
