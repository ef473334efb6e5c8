"""What a sync may skip: the warehouse's known objects, the still-open ones, and when to stop.

Part of :mod:`fundpipe.sync`. A night's requests should grow with the night's work, not with
history, so the top-level lists (distributions, entities, contacts) are walked newest first only
down to what the warehouse already holds, and the distributions still open — their own status,
or any payment's, not terminal — are re-read (in the list walk when they are near its head,
else through their documented nested payment list).

**Stop rule** (`fundpipe.client.Walk`, beside the client's pagination): a list is walked page by page until a page holds an object the warehouse
already has; that page is the last one. Newest first, every object after the first known one is
then known too, and everything older was pulled by an earlier sync. The assumption is guarded,
because the interface does not show the lists' order: an object the warehouse lacks after one it
has, or a `created_at` later than the one before it, means the list is not newest first, and the
walk goes on to the end (a full walk) with a warning. For distributions the walk also goes on
while still-open distributions are unseen, as long as each extra page costs no more than
reading the unseen ones one by one would.

A list is walked whole when asked (`full=True`, `fundpipe sync --full`), when the warehouse has no
completed sync of it (`sync_lists`, migration 008), and when its last full walk is older than
`FUNDPIPE_FULL_SYNC_DAYS`: an edit the service made to an old, closed object is picked up then.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import duckdb

from fundpipe.warehouse import (
    OPEN_DISTRIBUTION_STATUSES,
    OPEN_PAYMENT_STATUSES,
    WALKED_LISTS,
    Known,
    Warehouse,
)

__all__ = [
    "OPEN_DISTRIBUTION_STATUSES",
    "OPEN_PAYMENT_STATUSES",
    "WALKED_LISTS",
    "Walks",
    "plan_walks",
    "record_walks",
]


@dataclass(frozen=True, slots=True)
class Walks:
    """How this sync walks each top-level list, from what the warehouse held before it (its
    index, :class:`fundpipe.warehouse.known.Known`)."""

    #: list name → "full" or "incremental", and why in words (for the log)
    modes: dict[str, str]
    reasons: dict[str, str]
    #: list name → ids the warehouse holds (only for the incremental lists)
    ids: dict[str, frozenset[str]] = field(default_factory=dict)
    #: distributions still open in the warehouse, oldest last (only when distributions are
    #: walked incrementally; a full walk sees them all)
    open_distributions: tuple[str, ...] = ()
    #: vehicles the warehouse holds accounts of: their balances are read even when no
    #: distribution pulled tonight names them (the vehicle list is not documented)
    vehicles: frozenset[str] = frozenset()


def plan_walks(warehouse: Warehouse, *, full: bool, full_every_days: float, now: datetime) -> Walks:
    """Decide per walked list whether this sync walks it whole, and read what it needs to stop.

    `full` forces full walks; otherwise a list is walked whole when `sync_lists` has no row for
    it or its last full walk is `full_every_days` or more before `now`.
    """
    modes = dict.fromkeys(WALKED_LISTS, "full")
    reasons = dict.fromkeys(WALKED_LISTS, "asked for (--full)" if full else "never synced")
    if full or not warehouse.path.exists():
        return Walks(modes, reasons)
    with warehouse.read() as con:
        known = Known.read(con, warehouse.path)
    due = now - timedelta(days=full_every_days)
    for name in WALKED_LISTS:
        if name not in known.last_full_at:
            continue
        last_full = known.last_full_at[name]
        if last_full is None or last_full <= due:
            reasons[name] = f"last full walk over {full_every_days:g} days ago"
            continue
        modes[name], reasons[name] = "incremental", "down to what the warehouse holds"
    ids = {name: known.ids(name) for name in WALKED_LISTS if modes[name] == "incremental"}
    opened = known.open_distributions if modes["distributions"] == "incremental" else ()
    return Walks(modes, reasons, ids, opened, known.vehicles)


def record_walks(
    con: duckdb.DuckDBPyConnection, modes: Mapping[str, str], sync_id: str, at: datetime
) -> None:
    """Record in `sync_lists` how each list was walked by `sync_id` (after its merge)."""
    for name, mode in modes.items():
        if mode not in ("full", "incremental"):
            msg = f"unknown walk mode {mode!r} for {name}"
            raise ValueError(msg)
        con.execute(
            f"INSERT INTO sync_lists (list, last_{mode}_at, last_{mode}_sync_id) "
            f"VALUES (?, ?, ?) ON CONFLICT (list) DO UPDATE SET "
            f"last_{mode}_at = excluded.last_{mode}_at, "
            f"last_{mode}_sync_id = excluded.last_{mode}_sync_id",
            [name, at, sync_id],
        )
