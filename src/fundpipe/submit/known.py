"""The warehouse's copy of the distributions a plan matches, read for the snapshot.

What the last finished sync saw is the warehouse's one read-only index
(:class:`fundpipe.warehouse.known.Known`, read by :func:`fundpipe.warehouse.known.read_known`):
the snapshot walks the service's newest-first lists only down to it. The content of the few
distributions a plan then matches is read here (:func:`read_distributions`), the file opened
read-only just as briefly (``Warehouse.peek``); a file that is absent, locked by another process or
unreadable gives None, and the snapshot reads them from the service as before. A damaged file
(a block failing DuckDB's checksum) is the machine's fault, not an old file: it raises
:class:`fundpipe.errors.DamagedFileError` naming the file and the restore command, before
anything is sent.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from fundpipe.plan import ServiceDistribution, ServicePayment
from fundpipe.warehouse import Warehouse, faults_named

log = logging.getLogger(__name__)

__all__ = ["read_distributions"]


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
    try:
        con = Warehouse(path).peek()
        if con is None:
            return None
        try:
            with faults_named(path, "warehouse", con=con):
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
        finally:
            con.close()
    except duckdb.Error as exc:  # locked by a sync, or an older or foreign file
        log.warning("warehouse %s not readable (%s): listing the service in full", path, exc)
        return None
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
