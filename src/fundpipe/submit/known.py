"""What the warehouse's last finished sync saw, read for the snapshot (warehouse → known).

A night's ingest need not list the whole history of the organization: the warehouse holds
every entity, contact and distribution the last finished sync read, and the service is then
asked only for what is newer (:mod:`fundpipe.submit.snapshot` walks its newest-first lists
until it meets an object read here). The file is opened read-only, once for the index
(:func:`read_known`) and once for the content of the few distributions a plan matches
(:func:`read_distributions`), each briefly; a file that is absent, locked by another process,
never synced or unreadable gives None, and the snapshot walks the full lists as before. A
damaged file (a block failing DuckDB's checksum) is the machine's fault, not an old file: it
raises :class:`fundpipe.errors.DamagedFileError` naming the file and the restore command, before
anything is sent.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from fundpipe.errors import DamagedFileError
from fundpipe.machine import damage_of
from fundpipe.plan import ServiceDistribution, ServicePayment

__all__ = ["Known", "KnownEntity", "read_distributions", "read_known"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class KnownEntity:
    """One entity row of the warehouse."""

    id: str
    name: str | None
    type: str | None
    external_reference: str | None
    has_instructions: bool
    livemode: bool | None


@dataclass(frozen=True)
class Known:
    """The warehouse's index of the service's objects, each list newest first."""

    path: Path
    synced_at: datetime
    entities: tuple[KnownEntity, ...]
    #: (id, lower-cased email or None, entity ids or None when the record had none, livemode)
    contacts: tuple[tuple[str, str | None, frozenset[str] | None, bool | None], ...]
    #: (id, external reference, status, livemode) of the distributions carrying a reference
    distributions: tuple[tuple[str, str, str | None, bool | None], ...]
    entity_ids: frozenset[str]
    contact_ids: frozenset[str]
    distribution_ids: frozenset[str]


def _refuse_damaged(path: Path, exc: duckdb.Error) -> None:
    """Raise the machine's fault when ``exc`` says the warehouse at ``path`` is damaged."""
    problem = damage_of(exc)
    if problem is not None:
        raise DamagedFileError(path, problem, what="warehouse") from exc


def _connect(path: Path) -> duckdb.DuckDBPyConnection | None:
    if not path.exists():
        return None
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:  # locked by a sync, or not a DuckDB file
        _refuse_damaged(path, exc)
        log.warning("warehouse %s not readable (%s): listing the service in full", path, exc)
        return None
    con.execute("SET TimeZone = 'UTC'")
    return con


def read_known(path: Path) -> Known | None:
    """The index of what the last finished sync into ``path`` saw; None when there is none
    (no file, never synced, locked or unreadable)."""
    con = _connect(path)
    if con is None:
        return None
    try:
        row = con.execute("SELECT max(finished_at) FROM syncs WHERE finished_at IS NOT NULL")
        found = row.fetchone()
        if found is None or found[0] is None:
            return None
        entities = tuple(
            KnownEntity(r[0], r[1], r[2], r[3], bool(r[4]), r[5])
            for r in con.execute(
                "SELECT id, name, type, external_reference, "
                "coalesce(len(payment_instructions), 0) > 0, livemode FROM entities "
                "ORDER BY created_at DESC NULLS LAST, id DESC"
            ).fetchall()
        )
        contacts = tuple(
            (
                r[0],
                r[1].lower() if r[1] else None,
                frozenset(r[2]) if r[2] is not None else None,
                r[3],
            )
            for r in con.execute(
                "SELECT id, email, entities, livemode FROM contacts "
                "ORDER BY created_at DESC NULLS LAST, id DESC"
            ).fetchall()
        )
        distributions = tuple(
            (r[0], r[1], r[2], r[3])
            for r in con.execute(
                "SELECT id, external_reference, status, livemode FROM distributions "
                "WHERE external_reference IS NOT NULL AND external_reference <> '' "
                "ORDER BY created_at DESC NULLS LAST, id DESC"
            ).fetchall()
        )
        distribution_ids = frozenset(
            r[0] for r in con.execute("SELECT id FROM distributions").fetchall()
        )
    except duckdb.Error as exc:  # an older or foreign file: the full walk answers instead
        _refuse_damaged(path, exc)
        log.warning("warehouse %s not readable (%s): listing the service in full", path, exc)
        return None
    finally:
        con.close()
    return Known(
        path=path,
        synced_at=found[0],
        entities=entities,
        contacts=contacts,
        distributions=distributions,
        entity_ids=frozenset(e.id for e in entities),
        contact_ids=frozenset(c[0] for c in contacts),
        distribution_ids=distribution_ids,
    )


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.isoformat() if isinstance(value, datetime) else str(value)


def read_distributions(path: Path, ids: Iterable[str]) -> dict[str, ServiceDistribution] | None:
    """The comparable content of the distributions ``ids`` as the warehouse holds them, by id;
    None when the file cannot be read now."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    con = _connect(path)
    if con is None:
        return None
    try:
        heads = con.execute(
            "SELECT d.id, d.external_reference, d.name, d.vehicle, "
            "coalesce(d.distribution_date_text, strftime(d.distribution_date, "
            "'%Y-%m-%dT%H:%M:%S%z')), d.distribution_timezone, d.status "
            "FROM distributions d WHERE d.id IN (SELECT unnest(?::VARCHAR[]))",
            [wanted],
        ).fetchall()
        payments = con.execute(
            "SELECT p.distribution, p.id, p.entity, p.amount_cents, p.currency, "
            "p.distribution_date_override, "
            "list(n.contact ORDER BY n.contact) FILTER (WHERE n.contact IS NOT NULL) "
            "FROM distribution_payments p LEFT JOIN distribution_notifications n "
            "ON n.payment = p.id WHERE p.distribution IN (SELECT unnest(?::VARCHAR[])) "
            "GROUP BY ALL ORDER BY p.distribution, p.id",
            [wanted],
        ).fetchall()
    except duckdb.Error as exc:
        _refuse_damaged(path, exc)
        log.warning("warehouse %s not readable (%s): listing the service in full", path, exc)
        return None
    finally:
        con.close()
    by_distribution: dict[str, list[tuple[ServicePayment, str]]] = {}
    for r in payments:
        by_distribution.setdefault(r[0], []).append(
            (
                ServicePayment(
                    entity=r[2] or "",
                    amount_cents=int(r[3] or 0),
                    currency=r[4] or "USD",
                    distribution_date_override=_text(r[5]),
                    notify=tuple(r[6] or ()),
                ),
                r[1],
            )
        )
    out: dict[str, ServiceDistribution] = {}
    for h in heads:
        pays = by_distribution.get(h[0], [])
        out[h[0]] = ServiceDistribution(
            id=h[0],
            external_reference=h[1] or "",
            name=h[2] or "",
            vehicle=h[3] or "",
            distribution_date=h[4] or "",
            distribution_timezone=h[5] or "UTC",
            payments=tuple(p for p, _ in pays),
            payment_ids=tuple(i for _, i in pays),
            status=h[6],
        )
    return out
