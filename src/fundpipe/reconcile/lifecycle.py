"""The exception lifecycle: stable ids, first and last seen, open → acknowledged → resolved.

The `exceptions` view gives every problem a stable `exception_id` (the same problem has the same
id on every run). Each reconciliation folds the view's current rows into the warehouse table
`exception_log` (`schemas/warehouse.sql`, migration 006) with :func:`track`:

- an id seen for the first time is **opened** (first seen = last seen = the as-of date);
- an id seen again keeps its state and first-seen date; its last-seen date, amount and wording
  move on; a resolved id that comes back is opened again (same id);
- an open or acknowledged id no longer in the view is **resolved** on the as-of date — the
  corrected file went through, the payment was disbursed, the vehicle was funded.

A person closes what has been dealt with by :func:`acknowledge` (who, when and a note): an
acknowledged exception leaves the open count but stays in the history, and still resolves by
itself when its condition goes away. :func:`list_exceptions` reads the log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import date, datetime
from typing import Any, Literal

import duckdb

from fundpipe.warehouse.file import Warehouse

__all__ = [
    "STATES",
    "ExceptionNotFoundError",
    "Lifecycle",
    "TrackedException",
    "acknowledge",
    "list_exceptions",
    "track",
]

State = Literal["open", "acknowledged", "resolved"]

#: The states an exception can be in.
STATES: tuple[State, ...] = ("open", "acknowledged", "resolved")

_COLUMNS = (
    "id, kind, state, first_seen, last_seen, resolved_on, acknowledged_by, acknowledged_at, "
    'note, vehicle, object_type, object_id, source_file, "row", amount_cents, what, action'
)


class ExceptionNotFoundError(LookupError):
    """No exception has the id given (or it cannot be acknowledged: it is resolved)."""


@dataclass(frozen=True, slots=True)
class TrackedException:
    """One exception of the log, in the plain columns a person reads."""

    id: str
    kind: str
    state: str
    first_seen: date
    last_seen: date
    resolved_on: date | None
    acknowledged_by: str | None
    acknowledged_at: datetime | None
    note: str | None
    vehicle: str | None
    object_type: str | None
    object_id: str | None
    source_file: str | None
    row: int | None
    amount_cents: int | None
    what: str
    action: str | None
    as_of: date

    @property
    def age_days(self) -> int:
        """Days from first seen to the as-of date (or to the day it was resolved)."""
        end = self.resolved_on or self.as_of
        return max((end - self.first_seen).days, 0)

    @property
    def amount_dollars(self) -> str:
        """The amount as dollars text (``$1,234.56``), empty when there is none."""
        from fundpipe.cents import format_cents

        return "" if self.amount_cents is None else format_cents(self.amount_cents)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: dates as ISO text, plus `age_days` and `amount_dollars`."""
        out = asdict(self)
        out.pop("as_of")
        for key in ("first_seen", "last_seen", "resolved_on", "acknowledged_at"):
            value = out[key]
            out[key] = value.isoformat() if value is not None else None
        out["age_days"] = self.age_days
        out["amount_dollars"] = self.amount_dollars
        return out


@dataclass(frozen=True, slots=True)
class Lifecycle:
    """What one reconciliation did to the log: ids opened, resolved, and still open."""

    as_of: date
    opened: tuple[TrackedException, ...]
    resolved: tuple[TrackedException, ...]
    still_open: tuple[TrackedException, ...]
    acknowledged: int

    @property
    def open(self) -> int:
        """Exceptions open after this run (opened now or before; acknowledged ones excluded)."""
        return len(self.opened) + len(self.still_open)


def _rows(
    con: duckdb.DuckDBPyConnection, where: str, params: Sequence[Any], as_of: date
) -> list[TrackedException]:
    rows = con.execute(
        f"SELECT {_COLUMNS} FROM exception_log WHERE {where} ORDER BY kind, vehicle NULLS FIRST, id",
        list(params),
    ).fetchall()
    return [
        TrackedException(
            id=r[0],
            kind=r[1],
            state=r[2],
            first_seen=r[3],
            last_seen=r[4],
            resolved_on=r[5],
            acknowledged_by=r[6],
            acknowledged_at=r[7],
            note=r[8],
            vehicle=r[9],
            object_type=r[10],
            object_id=r[11],
            source_file=r[12],
            row=int(r[13]) if r[13] is not None else None,
            amount_cents=int(r[14]) if r[14] is not None else None,
            what=r[15] or "",
            action=r[16],
            as_of=as_of,
        )
        for r in rows
    ]


def track(con: duckdb.DuckDBPyConnection, current: str, *, as_of: date, now: datetime) -> Lifecycle:
    """Fold the exceptions of `current` (a relation: the view, or its Parquet export) into the log.

    `con` is a writable warehouse connection; everything happens in one transaction.
    """
    con.execute("BEGIN")
    try:
        con.execute(
            "CREATE OR REPLACE TEMP TABLE _current AS SELECT DISTINCT ON (exception_id) "
            'exception_id AS id, kind, object_type, object_id, vehicle, source_file, "row", '
            f"amount_cents, what, action FROM {current}"
        )
        # The states this run can change: the current exceptions' and the unresolved ones' (the
        # log's resolved history, which grows every night, is never read into Python).
        before = dict(
            con.execute(
                "SELECT id, state FROM exception_log "
                "WHERE state <> 'resolved' OR id IN (SELECT id FROM _current)"
            ).fetchall()
        )
        con.execute(
            "UPDATE exception_log SET state = 'resolved', resolved_on = ?, updated_at = ? "
            "WHERE state <> 'resolved' AND id NOT IN (SELECT id FROM _current)",
            [as_of, now],
        )
        con.execute(
            """
            UPDATE exception_log AS e SET
                state = CASE WHEN e.state = 'resolved' THEN 'open' ELSE e.state END,
                resolved_on = CASE WHEN e.state = 'resolved' THEN NULL ELSE e.resolved_on END,
                first_seen = least(e.first_seen, $as_of),
                last_seen = greatest(e.last_seen, $as_of),
                vehicle = c.vehicle, source_file = c.source_file, "row" = c."row",
                amount_cents = c.amount_cents, what = c.what, action = c.action,
                updated_at = $now
            FROM _current c
            WHERE c.id = e.id
            """,
            {"as_of": as_of, "now": now},
        )
        con.execute(
            """
            INSERT INTO exception_log (id, kind, object_type, object_id, state, first_seen,
                last_seen, vehicle, source_file, "row", amount_cents, what, action, updated_at)
            SELECT id, kind, object_type, object_id, 'open', $as_of, $as_of, vehicle,
                source_file, "row", amount_cents, what, action, $now
            FROM _current WHERE id NOT IN (SELECT id FROM exception_log)
            """,
            {"as_of": as_of, "now": now},
        )
        con.execute("DROP TABLE _current")
        after = _rows(con, "state <> 'resolved' OR resolved_on = ?", [as_of], as_of)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    opened = [t for t in after if t.state == "open" and before.get(t.id) in (None, "resolved")]
    opened_ids = {t.id for t in opened}
    return Lifecycle(
        as_of=as_of,
        opened=tuple(opened),
        resolved=tuple(
            t for t in after if t.state == "resolved" and before.get(t.id) not in (None, "resolved")
        ),
        still_open=tuple(t for t in after if t.state == "open" and t.id not in opened_ids),
        acknowledged=sum(1 for t in after if t.state == "acknowledged"),
    )


def list_exceptions(
    warehouse: Warehouse, *, state: str | None = None, as_of: date | None = None
) -> list[TrackedException]:
    """Every exception of the log (or those in `state`), aged to `as_of` (default: last seen)."""
    if state is not None and state not in STATES:
        raise ValueError(f"state must be one of {', '.join(STATES)}, not {state!r}")
    with warehouse.read() as con:
        if as_of is None:
            row = con.execute("SELECT max(last_seen) FROM exception_log").fetchone()
            as_of = row[0] if row and row[0] else date.today()
        where, params = ("state = ?", [state]) if state else ("true", [])
        return _rows(con, where, params, as_of)


def acknowledge(
    warehouse: Warehouse, exception_id: str, *, note: str, by: str, now: datetime
) -> TrackedException:
    """Mark an open exception as dealt with by `by` at `now`, with `note`; return it.

    Raises :class:`ExceptionNotFoundError` for an unknown or resolved id, ValueError for an
    empty note. Acknowledging again replaces the note.
    """
    if not note.strip():
        raise ValueError("an acknowledgement needs a note saying what was done")
    with warehouse.write() as con:
        found = con.execute(
            "SELECT state FROM exception_log WHERE id = ?", [exception_id]
        ).fetchone()
        if found is None:
            raise ExceptionNotFoundError(f"no exception {exception_id}")
        if found[0] == "resolved":
            raise ExceptionNotFoundError(f"exception {exception_id} is resolved already")
        con.execute(
            "UPDATE exception_log SET state = 'acknowledged', acknowledged_by = ?, "
            "acknowledged_at = ?, note = ?, updated_at = ? WHERE id = ?",
            [by, now, note.strip(), now, exception_id],
        )
        row = con.execute("SELECT max(last_seen) FROM exception_log").fetchone()
        as_of = row[0] if row and row[0] else now.date()
        return _rows(con, "id = ?", [exception_id], as_of)[0]
