"""The exception lifecycle as an append-only event history: stable ids, open → acknowledged →
resolved, owners, and who did what when.

The `exceptions` view gives every problem a stable `exception_id` (the same problem has the same
id on every run). Nothing about an exception is updated in place: each change is a row of the
warehouse table `exception_events` (`schemas/warehouse.sql`, migration 010) — when, who (the
declared name, and the operating-system user), the amount at that moment and a note — and an
exception's state is the fold of its events (the table macro `exception_states(cutoff)`, which
reads only the events recorded before `cutoff`: the state as of any past day).

Only a reconciliation for today changes the history, with :func:`track`:

- an id seen for the first time is **opened**; an id seen again after it resolved is
  **reopened** (same id, its first-seen date kept);
- an open or acknowledged id whose amount changed gets an **amount_changed** event; an
  acknowledged one whose amount grew beyond the amount acknowledged is **reopened**, saying why
  (an acknowledgement covers the amount acknowledged);
- an open or acknowledged id no longer in the view is **resolved** on the as-of date (an
  after-close adjustment never leaves the view by itself: it is listed until a person
  acknowledges it — `schemas/warehouse.sql`, migration 027).

A person acts with :func:`acknowledge` (a second acknowledgement is a second event),
:func:`assign` (the owner) and :func:`comment` (a note that changes nothing else);
:func:`history` reads an exception's events and :func:`list_exceptions` the states.

Longer than ~400 lines because the events, the SQL that folds them and every writer of them
(the reconciliation's and a person's) are one append-only contract kept in one place.
"""

from __future__ import annotations

import getpass
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

import duckdb

from fundpipe.vocabulary import KINDS, ExceptionRecord, ExceptionState, kind_words, what_to_do
from fundpipe.warehouse import Warehouse, records, transaction

if TYPE_CHECKING:
    from fundpipe.record.decisions import DecisionSink

__all__ = [
    "EVENTS",
    "EVENT_COLUMNS",
    "EXCEPTION_COLUMNS",
    "ORDERS",
    "STATES",
    "ExceptionEvent",
    "ExceptionNotFoundError",
    "ExceptionTally",
    "Lifecycle",
    "acknowledge",
    "assign",
    "comment",
    "history",
    "list_exceptions",
    "os_user",
    "tally_exceptions",
    "track",
]

#: The states an exception can be in (`fundpipe.vocabulary.ExceptionState`), in order.
STATES: tuple[ExceptionState, ...] = tuple(ExceptionState)

#: The events of an exception's history.
EVENTS = (
    "opened",
    "amount_changed",
    "acknowledged",
    "assigned",
    "commented",
    "reopened",
    "resolved",
)

#: Who the reconciliation's own events are by.
SYSTEM = "fundpipe"

#: The end of time: every event recorded.
_ALL = "TIMESTAMPTZ 'infinity'"

#: The select list `list_exceptions` and `history` read an `ExceptionRecord` from. Each field is
#: taken by its column's name, so any order of this list reads the same.
EXCEPTION_COLUMNS = (
    "id, kind, state, first_seen, last_seen, resolved_on, acknowledged_by, acknowledged_at, "
    'note, vehicle, object_type, object_id, source_file, "row", amount_cents, what, action, '
    "owner, acknowledged_amount_cents"
)

#: The columns of `exception_events` an `ExceptionEvent` is read from (by name: any order of
#: this list reads the same).
EVENT_COLUMNS = (
    'seq, exception_id, event, event_at AS "at", as_of, by_name AS "by", os_user, amount_cents, '
    "note, assignee"
)

_DETAILS = 'kind, object_type, object_id, vehicle, source_file, "row", what, action'


class ExceptionNotFoundError(LookupError):
    """No exception has the id given (or it cannot be acted on: it is resolved)."""


def os_user() -> str | None:
    """The operating-system user running this process (None when it cannot be told)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name and no passwd entry (some containers)
        return None


@dataclass(frozen=True, slots=True)
class ExceptionEvent:
    """One event of an exception's history (never changed once recorded)."""

    seq: int
    exception_id: str
    event: str
    at: datetime
    as_of: date
    by: str | None
    os_user: str | None
    amount_cents: int | None
    note: str | None
    assignee: str | None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: instants and dates as ISO text, the amount also in dollars."""
        from fundpipe.cents import format_cents

        out = asdict(self)
        out["at"] = self.at.isoformat()
        out["as_of"] = self.as_of.isoformat()
        out["amount_dollars"] = (
            None if self.amount_cents is None else format_cents(self.amount_cents)
        )
        return out


@dataclass(frozen=True, slots=True)
class Lifecycle:
    """What one reconciliation did to the history: ids opened, resolved, and still open."""

    as_of: date
    opened: tuple[ExceptionRecord, ...]
    resolved: tuple[ExceptionRecord, ...]
    still_open: tuple[ExceptionRecord, ...]
    acknowledged: int

    @property
    def open(self) -> int:
        """Exceptions open after this run (opened now or before; acknowledged ones excluded)."""
        return len(self.opened) + len(self.still_open)


#: No list of ids: every exception (`exception_states_of`'s `ids`).
_EVERY = "CAST(NULL AS VARCHAR[])"


def _states_sql(cutoff: str, ids: str = _EVERY) -> str:
    """The states as of `cutoff` (SQL), with last seen: the last run that saw an unresolved one;
    of the exceptions `ids` only (SQL: a list, or a parameter of one) when given."""
    return f"""
        SELECT s.id, s.kind, s.state, s.first_seen,
               CASE WHEN s.state = 'resolved' THEN s.resolved_on
                    ELSE greatest(s.last_event_on, coalesce(
                        (SELECT max(r.as_of) FROM exception_runs r WHERE r.run_at < {cutoff}),
                        s.last_event_on)) END AS last_seen,
               CASE WHEN s.state = 'resolved' THEN s.resolved_on END AS resolved_on,
               s.acknowledged_by, s.acknowledged_at, s.note, s.vehicle, s.object_type,
               s.object_id, s.source_file, s."row", s.amount_cents, s.what, s.action, s.owner,
               s.acknowledged_amount_cents
        FROM exception_states_of({cutoff}, {ids}) s
    """


def _rows(
    con: duckdb.DuckDBPyConnection,
    where: str,
    params: Sequence[Any],
    as_of: date,
    *,
    cutoff: str = _ALL,
    ids: str = _EVERY,
) -> list[ExceptionRecord]:
    rows = records(
        con,
        f"SELECT {EXCEPTION_COLUMNS} FROM ({_states_sql(cutoff, ids)}) WHERE {where} "
        "ORDER BY kind, vehicle NULLS FIRST, id",
        params,
    )
    return [_tracked(r, as_of) for r in rows]


def _rows_of(
    con: duckdb.DuckDBPyConnection, ids: Sequence[str], as_of: date
) -> list[ExceptionRecord]:
    """The exceptions ``ids`` (only their events are folded)."""
    return _rows(con, "true", [list(ids)], as_of, ids="?::VARCHAR[]")


def _tracked(row: dict[str, Any], as_of: date) -> ExceptionRecord:
    """One exception from its row, each field from the column of its name (the gaps of a row
    with no details yet filled: no kind or text is empty, no date is the as-of date), aged to
    ``as_of`` (or to the day it was resolved), and what to do: its action, else its kind's."""
    first_seen: date = row["first_seen"] or as_of
    end: date = row["resolved_on"] or as_of
    kind = row["kind"] or ""
    return ExceptionRecord(
        **{
            **row,
            "state": ExceptionState(row["state"]),
            "kind": kind,
            "first_seen": first_seen,
            "last_seen": row["last_seen"] or as_of,
            "what": row["what"] or "",
            "row": _int(row["row"]),
            "amount_cents": _int(row["amount_cents"]),
            "acknowledged_amount_cents": _int(row["acknowledged_amount_cents"]),
            "age_days": max((end - first_seen).days, 0),
            "what_to_do": row["action"] or what_to_do(kind or "exception"),
        }
    )


def _int(value: Any) -> int | None:
    return int(value) if value is not None else None


def track(
    con: duckdb.DuckDBPyConnection,
    current: str,
    *,
    as_of: date,
    now: datetime,
    user: str | None = None,
) -> Lifecycle:
    """Record the events that the exceptions of `current` (a relation: the view, or its Parquet
    export) make against the history: opened, amount changed, reopened, resolved.

    `con` is a writable warehouse connection; everything happens in one transaction. Only a
    reconciliation for today calls this (a past as-of only reads).
    """
    user = user if user is not None else os_user()
    with transaction(con):
        con.execute(
            "CREATE OR REPLACE TEMP TABLE _current AS SELECT DISTINCT ON (exception_id) "
            'exception_id AS id, kind, object_type, object_id, vehicle, source_file, "row", '
            f"amount_cents, what, action FROM {current}"
        )
        con.execute(
            "CREATE OR REPLACE TEMP TABLE _before AS "
            f"SELECT id, state, amount_cents, acknowledged_amount_cents, acknowledged_by "
            f"FROM exception_states({_ALL})"
        )
        before = dict(
            con.execute(
                "SELECT id, state FROM _before "
                "WHERE state <> 'resolved' OR id IN (SELECT id FROM _current)"
            ).fetchall()
        )
        common = {"as_of": as_of, "now": now, "by": SYSTEM, "user": user}
        # new and come-back exceptions; changed amounts; worsened acknowledged ones
        con.execute(
            f"""
            INSERT INTO exception_events (exception_id, event, event_at, as_of, by_name, os_user,
                amount_cents, note, {_DETAILS})
            SELECT c.id,
                   CASE WHEN b.id IS NULL THEN 'opened'
                        WHEN b.state = 'resolved' THEN 'reopened'
                        WHEN b.state = 'acknowledged'
                             AND abs(coalesce(c.amount_cents, 0))
                                 > abs(coalesce(b.acknowledged_amount_cents, b.amount_cents, 0))
                             THEN 'reopened'
                        ELSE 'amount_changed' END,
                   $now, $as_of, $by, $user, c.amount_cents,
                   CASE WHEN b.id IS NULL THEN NULL
                        WHEN b.state = 'resolved' THEN 'seen again after it was resolved'
                        WHEN b.state = 'acknowledged'
                             AND abs(coalesce(c.amount_cents, 0))
                                 > abs(coalesce(b.acknowledged_amount_cents, b.amount_cents, 0))
                             THEN 'worsened from ' || usd(coalesce(b.acknowledged_amount_cents,
                                                                   b.amount_cents))
                                  || ' (acknowledged by ' || coalesce(b.acknowledged_by, '?')
                                  || ') to ' || usd(c.amount_cents)
                        ELSE 'amount changed from ' || usd(b.amount_cents) || ' to '
                             || usd(c.amount_cents) END,
                   c.kind, c.object_type, c.object_id, c.vehicle, c.source_file, c."row",
                   c.what, c.action
            FROM _current c
            LEFT JOIN _before b ON b.id = c.id
            WHERE b.id IS NULL OR b.state = 'resolved'
               OR c.amount_cents IS DISTINCT FROM b.amount_cents
            ORDER BY c.kind, c.id
            """,
            common,
        )
        con.execute(
            """
            INSERT INTO exception_events (exception_id, event, event_at, as_of, by_name, os_user,
                amount_cents, note)
            SELECT b.id, 'resolved', $now, $as_of, $by, $user, b.amount_cents,
                   'no longer found by the reconciliation'
            FROM _before b
            WHERE b.state <> 'resolved' AND b.id NOT IN (SELECT id FROM _current)
            ORDER BY b.id
            """,
            common,
        )
        con.execute("INSERT INTO exception_runs VALUES (?, ?)", [as_of, now])
        con.execute("DROP TABLE _current")
        con.execute("DROP TABLE _before")
        touched = list(before)
        after = _rows(
            con,
            "state <> 'resolved' OR id IN (SELECT unnest(?::VARCHAR[]))",
            [touched],
            as_of,
        )
    opened = [
        t
        for t in after
        if t.state == "open" and before.get(t.id) in (None, "resolved", "acknowledged")
    ]
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


def _last_run(con: duckdb.DuckDBPyConnection) -> date | None:
    row = con.execute("SELECT max(as_of) FROM exception_runs").fetchone()
    return row[0] if row and row[0] else None


def list_exceptions(
    warehouse: Warehouse, *, state: str | None = None, as_of: date | None = None
) -> list[ExceptionRecord]:
    """Every exception (or those in `state`), aged to `as_of` (default: the last run's date)."""
    if state is not None and state not in STATES:
        raise ValueError(f"state must be one of {', '.join(STATES)}, not {state!r}")
    with warehouse.read() as con:
        as_of = as_of or _last_run(con) or datetime.now(UTC).date()
        where, params = ("state = ?", [state]) if state else ("true", [])
        return _rows(con, where, params, as_of)


#: The orders :func:`tally_exceptions` can list in (each ends with the id, so it is total).
ORDERS = ("age", "amount", "kind")
_ORDER_SQL = {
    "age": "_age DESC, id",
    # the largest first, whichever its sign; one without an amount last
    "amount": "amount_cents IS NULL, abs(amount_cents) DESC, id",
    "kind": "coalesce(list_extract($kind_words, list_position($kind_keys, kind)), "
    "lower(trim(replace(kind, '_', ' ')))), _age DESC, id",
}


@dataclass(frozen=True, slots=True)
class ExceptionTally:
    """One page of the exceptions in a state that a filter keeps, with the counts around it:
    what a queue, a morning or a month's page shows without folding every exception."""

    #: the page asked for, in its order
    shown: tuple[ExceptionRecord, ...]
    #: every exception in the state (unfiltered), and their amounts summed
    count: int
    total_cents: int
    #: the kinds and the owners among them
    kinds: tuple[str, ...]
    owners: tuple[str, ...]
    #: how many the filter keeps, and those past the page, by kind (most first)
    matching: int
    after_by_kind: tuple[tuple[str, int], ...]


def tally_exceptions(
    warehouse: Warehouse,
    *,
    state: str = ExceptionState.OPEN,
    kind: str | None = None,
    owner: str | None = None,
    unowned: bool = False,
    min_age: int | None = None,
    order: str = "age",
    offset: int = 0,
    limit: int = 100,
) -> ExceptionTally:
    """The exceptions in ``state`` that the filters keep (a kind, an owner or none, a least
    age in days), the ``limit`` of them from ``offset`` in ``order`` (``ORDERS``; ``kind``
    lists the kinds by their words), aged to the last run's date, as
    :func:`list_exceptions` ages them. Computed in the warehouse: only the page is read out."""
    if state not in STATES:
        raise ValueError(f"state must be one of {', '.join(STATES)}, not {state!r}")
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, not {order!r}")
    kept = ["true"]
    params: dict[str, Any] = {"state": str(state)}
    if kind is not None:
        kept.append("kind = $kind")
        params["kind"] = kind
    if unowned:
        kept.append("coalesce(owner, '') = ''")
    elif owner is not None:
        kept.append("owner = $owner")
        params["owner"] = owner
    if min_age is not None:
        kept.append("_age >= $min_age")
        params["min_age"] = min_age
    where = " AND ".join(kept)
    params.update(first=offset, end=offset + limit)
    if order == "kind":  # by the kind's words, as `kind_words` says them (an unknown one too)
        known = sorted(KINDS, key=lambda k: kind_words(k).lower())
        params["kind_keys"] = [str(k) for k in known]
        params["kind_words"] = [kind_words(k).lower() for k in known]
    # one pass over the state's exceptions, folded on the columns a filter, an order or a count
    # reads: the counts, the page's ids and the kinds of those past it; then the page's own
    # rows, every column of them
    ordered = _ORDER_SQL[order]
    sql = f"""
        SELECT count(*), coalesce(sum(amount_cents), 0),
               coalesce(list(DISTINCT kind) FILTER (WHERE kind IS NOT NULL), []),
               coalesce(list(DISTINCT owner) FILTER (WHERE coalesce(owner, '') <> ''), []),
               count(*) FILTER (WHERE {where}),
               coalesce((list(id ORDER BY {ordered}) FILTER (WHERE {where}))[$first + 1:$end], []),
               coalesce((list(coalesce(kind, '') ORDER BY {ordered})
                         FILTER (WHERE {where}))[$end + 1:], [])
        FROM (
            SELECT id, kind, owner, amount_cents,
                   greatest(date_diff('day', coalesce(first_seen, $as_of),
                                      coalesce(resolved_on, $as_of)), 0) AS _age
            FROM exception_states({_ALL}) WHERE state = $state
        )
    """
    with warehouse.read() as con:
        as_of = _last_run(con) or datetime.now(UTC).date()
        params["as_of"] = as_of
        head = con.execute(sql, params).fetchone()  # each parameter set is used
        assert head is not None
        count, total, kinds, owners, matching, ids, past = head
        rows = _rows_of(con, ids, as_of) if ids else []
    at = {exception_id: i for i, exception_id in enumerate(ids)}
    return ExceptionTally(
        shown=tuple(sorted(rows, key=lambda e: at[e.id])),
        count=int(count),
        total_cents=int(total),
        kinds=tuple(kinds),
        owners=tuple(owners),
        matching=int(matching),
        after_by_kind=tuple(sorted(Counter(past).items(), key=lambda kn: (-kn[1], kn[0]))),
    )


def _current_state(con: duckdb.DuckDBPyConnection, exception_id: str) -> tuple[str, int | None]:
    found = con.execute(
        f"SELECT state, amount_cents FROM exception_states({_ALL}) WHERE id = ?", [exception_id]
    ).fetchone()
    if found is None:
        raise ExceptionNotFoundError(f"no exception {exception_id}")
    if found[0] == "resolved":
        raise ExceptionNotFoundError(f"exception {exception_id} is resolved already")
    return str(found[0]), (int(found[1]) if found[1] is not None else None)


def _person_event(
    warehouse: Warehouse,
    exception_id: str,
    event: str,
    *,
    by: str,
    now: datetime,
    note: str | None,
    assignee: str | None = None,
    user: str | None = None,
    record: DecisionSink | None = None,
) -> ExceptionRecord:
    with warehouse.write() as con:
        _, amount = _current_state(con, exception_id)
        row = {
            "exception_id": exception_id,
            "event": event,
            "event_at": now,
            "as_of": now.astimezone(UTC).date(),
            "by_name": by,
            "os_user": user if user is not None else os_user(),
            "amount_cents": amount,
            "note": note,
            "assignee": assignee,
        }
        con.execute(
            f"INSERT INTO exception_events ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
            list(row.values()),
        )
        if record is not None:  # the durable record (fundpipe.record.record_decision)
            record(event, {"exception_events": [row]}, now)
        as_of = _last_run(con) or now.astimezone(UTC).date()
        return _rows_of(con, [exception_id], as_of)[0]


def acknowledge(
    warehouse: Warehouse,
    exception_id: str,
    *,
    note: str,
    by: str,
    now: datetime,
    user: str | None = None,
    record: DecisionSink | None = None,
) -> ExceptionRecord:
    """Record that `by` dealt with an open (or acknowledged) exception at `now`, with `note`.

    The acknowledgement covers the exception's amount at that moment: if it later worsens, the
    reconciliation reopens it. Acknowledging again is a second event (the first stays).
    ``record``, when given, also writes the decision to the durable record
    (``fundpipe.record.decision_sink``). Raises :class:`ExceptionNotFoundError` for an unknown or resolved id, ValueError for an empty note.
    """
    if not note.strip():
        raise ValueError("an acknowledgement needs a note saying what was done")
    if not by.strip():
        raise ValueError("an acknowledgement needs the name of who acknowledges")
    return _person_event(
        warehouse,
        exception_id,
        "acknowledged",
        by=by.strip(),
        now=now,
        note=note.strip(),
        user=user,
        record=record,
    )


def assign(
    warehouse: Warehouse,
    exception_id: str,
    *,
    to: str,
    by: str,
    now: datetime,
    note: str | None = None,
    user: str | None = None,
    record: DecisionSink | None = None,
) -> ExceptionRecord:
    """Make `to` the owner of an unresolved exception (an `assigned` event by `by` at `now`).
    ``record``, when given, also writes the decision to the durable record."""
    if not to.strip():
        raise ValueError("an assignment needs the owner's name")
    return _person_event(
        warehouse,
        exception_id,
        "assigned",
        by=by.strip() or to.strip(),
        now=now,
        note=(note or "").strip() or None,
        assignee=to.strip(),
        user=user,
        record=record,
    )


def comment(
    warehouse: Warehouse,
    exception_id: str,
    *,
    note: str,
    by: str,
    now: datetime,
    user: str | None = None,
    record: DecisionSink | None = None,
) -> ExceptionRecord:
    """Record `by`'s comment `note` on an unresolved exception at `now` (a `commented` event:
    its state, owner and amount stay as they are). ``record``, when given, also writes it to
    the durable record. Raises :class:`ExceptionNotFoundError` for an unknown or resolved id,
    ValueError for an empty note or name."""
    if not note.strip():
        raise ValueError("a comment needs its text")
    if not by.strip():
        raise ValueError("a comment needs the name of who comments")
    return _person_event(
        warehouse,
        exception_id,
        "commented",
        by=by.strip(),
        now=now,
        note=note.strip(),
        user=user,
        record=record,
    )


def history(
    warehouse: Warehouse, exception_id: str
) -> tuple[ExceptionRecord, list[ExceptionEvent]]:
    """An exception's state and every event of its history, oldest first.

    Raises :class:`ExceptionNotFoundError` for an unknown id.
    """
    with warehouse.read() as con:
        as_of = _last_run(con) or datetime.now(UTC).date()
        found = _rows_of(con, [exception_id], as_of)
        if not found:
            raise ExceptionNotFoundError(f"no exception {exception_id}")
        rows = records(
            con,
            f"SELECT {EVENT_COLUMNS} FROM exception_events WHERE exception_id = ? ORDER BY seq",
            [exception_id],
        )
    return found[0], [ExceptionEvent(**r) for r in rows]
