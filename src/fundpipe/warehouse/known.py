"""What the warehouse knows of the service's objects: the one read-only index (`Known`).

A night need not list the whole history of the organization: the warehouse holds every entity,
contact and distribution a sync read, so the service's newest-first lists are walked only down
to what it holds. Two readers stop at the same index:

- a night's snapshot (``fundpipe.submit.snapshot``) reads it with :func:`read_known`: opened
  read-only without waiting (``Warehouse.peek``), and None when the file is absent, locked by a
  sync, never synced or unreadable — the snapshot then walks the full lists, as before;
- a sync (``fundpipe.sync.incremental``) reads it with :meth:`Known.read` on the connection of
  its ``Warehouse.read()`` (which waits for the lock and migrates an older file), and decides
  from ``last_full_at`` which lists it walks whole.

A damaged file (a block failing DuckDB's checksum) is the machine's fault, not an old file:
either way it raises :class:`fundpipe.errors.DamagedFileError` naming the file and the restore
command, before anything is sent.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from fundpipe.enums import DISTRIBUTION_STATUSES, PAYMENT_STATUSES
from fundpipe.warehouse.file import Warehouse
from fundpipe.warehouse.integrity import faults_named

__all__ = [
    "OPEN_DISTRIBUTION_STATUSES",
    "OPEN_PAYMENT_STATUSES",
    "WALKED_LISTS",
    "Known",
    "KnownEntity",
    "read_known",
]

log = logging.getLogger(__name__)

#: The top-level lists walked newest first (by their warehouse table's name).
WALKED_LISTS = ("distributions", "entities", "contacts")

#: Statuses after which nothing moves (DESIGN.md "Distribution states" / "Payment states").
_DONE_DISTRIBUTION = ("executed", "cancelled")
_DONE_PAYMENT = ("disbursed", "failed", "cancelled")
#: The statuses a distribution or payment can still leave.
OPEN_DISTRIBUTION_STATUSES = tuple(s for s in DISTRIBUTION_STATUSES if s not in _DONE_DISTRIBUTION)
OPEN_PAYMENT_STATUSES = tuple(s for s in PAYMENT_STATUSES if s not in _DONE_PAYMENT)


def _quoted(values: Iterable[str]) -> str:
    return ", ".join("'" + v + "'" for v in values)


# An open distribution: its status is not terminal (or unknown), or a payment's is not.
_OPEN_DISTRIBUTIONS = f"""
SELECT id FROM distributions
WHERE status IS NULL OR status NOT IN ({_quoted(_DONE_DISTRIBUTION)})
UNION
SELECT distribution FROM distribution_payments
WHERE distribution IS NOT NULL AND (status IS NULL OR status NOT IN ({_quoted(_DONE_PAYMENT)}))
"""


@dataclass(frozen=True, slots=True)
class KnownEntity:
    """One entity row of the warehouse."""

    id: str
    name: str | None
    type: str | None
    external_reference: str | None
    has_instructions: bool
    livemode: bool | None


def _fetch(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[Any, ...]]:
    return con.execute(sql).fetchall()


@dataclass(frozen=True)
class Known:
    """The warehouse's index of the service's objects, each list newest first."""

    path: Path
    #: when the last finished sync ended (None: the file was never synced)
    synced_at: datetime | None
    entities: tuple[KnownEntity, ...]
    #: (id, lower-cased email or None, entity ids or None when the record had none, livemode)
    contacts: tuple[tuple[str, str | None, frozenset[str] | None, bool | None], ...]
    #: (id, external reference, status, livemode) of the distributions carrying a reference
    distributions: tuple[tuple[str, str, str | None, bool | None], ...]
    entity_ids: frozenset[str]
    contact_ids: frozenset[str]
    distribution_ids: frozenset[str]
    #: distributions still open — their own status, or a payment's, not terminal — oldest last
    open_distributions: tuple[str, ...]
    #: vehicles the warehouse holds accounts of
    vehicles: frozenset[str]
    #: walked list → when a sync last walked it whole (None: never; absent: no sync of it)
    last_full_at: Mapping[str, datetime | None]

    def ids(self, name: str) -> frozenset[str]:
        """The ids the warehouse holds of the walked list ``name`` (``WALKED_LISTS``)."""
        return {
            "entities": self.entity_ids,
            "contacts": self.contact_ids,
            "distributions": self.distribution_ids,
        }[name]

    @classmethod
    def read(cls, con: duckdb.DuckDBPyConnection, path: Path) -> Known:
        """The index of the warehouse at ``path``, read on ``con`` (open on it)."""
        found = con.execute(
            "SELECT max(finished_at) FROM syncs WHERE finished_at IS NOT NULL"
        ).fetchone()
        entities = tuple(
            KnownEntity(r[0], r[1], r[2], r[3], bool(r[4]), r[5])
            for r in _fetch(
                con,
                "SELECT id, name, type, external_reference, "
                "coalesce(len(payment_instructions), 0) > 0, livemode FROM entities "
                "ORDER BY created_at DESC NULLS LAST, id DESC",
            )
        )
        contacts = tuple(
            (
                r[0],
                r[1].lower() if r[1] else None,
                frozenset(r[2]) if r[2] is not None else None,
                r[3],
            )
            for r in _fetch(
                con,
                "SELECT id, email, entities, livemode FROM contacts "
                "ORDER BY created_at DESC NULLS LAST, id DESC",
            )
        )
        distributions = tuple(
            (r[0], r[1], r[2], r[3])
            for r in _fetch(
                con,
                "SELECT id, external_reference, status, livemode FROM distributions "
                "WHERE external_reference IS NOT NULL AND external_reference <> '' "
                "ORDER BY created_at DESC NULLS LAST, id DESC",
            )
        )
        return cls(
            path=path,
            synced_at=found[0] if found else None,
            entities=entities,
            contacts=contacts,
            distributions=distributions,
            entity_ids=frozenset(e.id for e in entities),
            contact_ids=frozenset(c[0] for c in contacts),
            distribution_ids=frozenset(
                str(r[0]) for r in _fetch(con, "SELECT id FROM distributions")
            ),
            open_distributions=tuple(
                str(r[0])
                for r in _fetch(
                    con,
                    f"SELECT o.id FROM ({_OPEN_DISTRIBUTIONS}) o LEFT JOIN distributions d "
                    "ON d.id = o.id ORDER BY d.created_at DESC NULLS LAST, o.id",
                )
            ),
            vehicles=frozenset(
                str(r[0])
                for r in _fetch(
                    con,
                    "SELECT DISTINCT vehicle FROM financial_accounts WHERE vehicle IS NOT NULL",
                )
            ),
            last_full_at={
                str(name): last_full
                for name, last_full in _fetch(con, "SELECT list, last_full_at FROM sync_lists")
            },
        )


def read_known(path: Path) -> Known | None:
    """The index of what the syncs into ``path`` saw; None when there is none to stop at (no
    file, never synced, locked or unreadable)."""
    try:
        con = Warehouse(path).peek()
        if con is None:
            return None
        try:
            with faults_named(path, "warehouse", con=con):
                known = Known.read(con, path)
        finally:
            con.close()
    except duckdb.Error as exc:  # locked by a sync, or an older or foreign file
        log.warning("warehouse %s not readable (%s): listing the service in full", path, exc)
        return None
    return known if known.synced_at is not None else None
