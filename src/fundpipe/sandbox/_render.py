"""Rows → the service's JSON records (bulk: one query per level, never one per row).

Every renderer takes the `View` in force (`fundpipe.sandbox._modes`): the default renders
DESIGN.md's decisions; strict and public views leave fields out or use the public spec's forms.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from fundpipe.sandbox._modes import DEFAULT_VIEW, View
from fundpipe.sandbox._pagination import NESTED_LIMIT, encode_cursor, list_envelope
from fundpipe.sandbox._store import chunks, placeholders, ts_to_iso
from fundpipe.timerules import render_in_zone

JSON = dict[str, Any]
#: A stored row: a `sqlite3.Row`, or a dict with the same column names (rows just inserted).
Row = Any


@lru_cache(maxsize=8192)
def _in_zone(ts: float | None, zone: str) -> str | None:
    """Epoch seconds rendered in `zone` (cached: a batch shares its dates and zones)."""
    if ts is None:
        return None
    return render_in_zone(datetime.fromtimestamp(ts, UTC), zone)


def organization(row: sqlite3.Row) -> JSON:
    """An organization record."""
    return {
        "object": "organization",
        "livemode": False,
        "id": row["id"],
        "name": row["name"],
        "created_at": ts_to_iso(row["created_at"]),
        "updated_at": ts_to_iso(row["updated_at"]),
    }


def vehicle(row: sqlite3.Row) -> JSON:
    """A vehicle record."""
    return {
        "object": "vehicle",
        "livemode": False,
        "id": row["id"],
        "organization": row["org"],
        "name": row["name"],
        "created_at": ts_to_iso(row["created_at"]),
        "updated_at": ts_to_iso(row["updated_at"]),
    }


def financial_account(row: sqlite3.Row) -> JSON:
    """A financial account with its balance (integer cents)."""
    return {
        "object": "financial_account",
        "livemode": False,
        "id": row["id"],
        "vehicle": row["vehicle"],
        "name": row["name"],
        "type": row["type"],
        "bank_name": row["bank_name"],
        "account_number_last_four": row["last_four"],
        "balance": {
            "total": row["total"],
            "available": row["available"],
            "total_end_of_last_month": row["total_eolm"],
            "currency": row["currency"],
        },
        "created_at": ts_to_iso(row["created_at"]),
        "updated_at": ts_to_iso(row["updated_at"]),
    }


def _children(
    conn: sqlite3.Connection, table: str, column: str, parents: list[str], columns: str = "*"
) -> dict[str, list[sqlite3.Row]]:
    out: dict[str, list[sqlite3.Row]] = defaultdict(list)
    for part in chunks(parents):
        rows = conn.execute(
            f"SELECT {columns} FROM {table} WHERE {column} IN ({placeholders(len(part))}) "
            "ORDER BY seq",
            tuple(part),
        ).fetchall()
        for row in rows:
            out[row[column]].append(row)
    return out


def _first_pages(
    conn: sqlite3.Connection, table: str, column: str, parents: list[str]
) -> dict[str, list[sqlite3.Row]]:
    """Per parent, its first NESTED_LIMIT + 1 children in request order.

    One small indexed range scan per parent: cheaper than a window function over every child
    when parents have many children, and as cheap when they have few.
    """
    sql = f"SELECT * FROM {table} WHERE {column} = ? ORDER BY seq LIMIT {NESTED_LIMIT + 1}"
    return {parent: conn.execute(sql, (parent,)).fetchall() for parent in parents}


def _nested(
    path: str, rows: list[JSON], more: bool, last_seq: int | None, legacy: bool = False
) -> JSON:
    next_url = (
        f"{path}?limit={NESTED_LIMIT}&page={encode_cursor(last_seq)}"
        if more and last_seq is not None
        else None
    )
    return list_envelope(rows, path, next_url, None, legacy=legacy)


def notification(row: sqlite3.Row) -> JSON:
    """A distribution notification."""
    return {
        "object": "distribution_notification",
        "livemode": False,
        "id": row["id"],
        "contact": row["contact"],
    }


def payments(
    conn: sqlite3.Connection,
    rows: Sequence[Row],
    zones: Mapping[str, str],
    notes: Mapping[str, list[Row]] | None = None,
    view: View = DEFAULT_VIEW,
) -> list[JSON]:
    """Distribution payments with their nested notification lists.

    `zones` maps each payment's distribution id to its time zone (for the override date).
    `notes` (payment id → notification rows in order) saves the query when the caller has them.
    """
    if notes is None:
        # A payment holds at most 100 notifications (validation): one IN query returns them all.
        notes = _children(conn, "notifications", "payment", [row["id"] for row in rows])
    out: list[JSON] = []
    append = out.append
    no_notes: list[Row] = []
    legacy = view.legacy_pages
    for row in rows:
        pid = row["id"]
        mine = notes.get(pid, no_notes)
        more = len(mine) > NESTED_LIMIT
        mine = mine[:NESTED_LIMIT]
        record: JSON = {
            "object": "distribution_payment",
            "livemode": False,
            "id": pid,
            "distribution": row["distribution"],
            "amount": row["amount"],
            "currency": row["currency"],
            "distribution_date_override": _in_zone(row["override_ts"], zones[row["distribution"]]),
            "status": row["status"],
            "recipient_confirmed_at": ts_to_iso(row["recipient_confirmed_at"]),
            "verified_at": ts_to_iso(row["verified_at"]),
            "disbursed_at": ts_to_iso(row["disbursed_at"]),
            "failed_at": ts_to_iso(row["failed_at"]),
            "failure_reason": row["failure_reason"],
            "entity": row["entity"],
            "payment_instructions": row["payment_instructions"],
            "notifications": _nested(
                f"/v1/distribution_payments/{pid}/notifications",
                [notification(n) for n in mine] if mine else [],
                more,
                mine[-1]["seq"] if more else None,
                legacy,
            ),
        }
        if row["override_ts"] is None:
            # left out when there is none: the public type is a string, never null
            del record["distribution_date_override"]
        append(record)
    if not view.plain:
        for shaped in out:
            view.shape(shaped, "distribution_payment")
    return out


def payment_zones(conn: sqlite3.Connection, rows: list[sqlite3.Row]) -> dict[str, str]:
    """Distribution id → time zone, for the distributions of `rows` (payments)."""
    ids = sorted({row["distribution"] for row in rows})
    zones: dict[str, str] = {}
    for part in chunks(ids):
        for dst in conn.execute(
            f"SELECT id, timezone FROM distributions WHERE id IN ({placeholders(len(part))})",
            tuple(part),
        ):
            zones[dst["id"]] = dst["timezone"]
    return zones


def distributions(
    conn: sqlite3.Connection,
    rows: Sequence[Row],
    app_url: str,
    pays: Mapping[str, list[Row]] | None = None,
    notes: Mapping[str, list[Row]] | None = None,
    view: View = DEFAULT_VIEW,
) -> list[JSON]:
    """Distributions with their first page of payments (request order, 100 per page).

    Rows just inserted come with `pays` (distribution id → its payment rows in order, at least
    the first NESTED_LIMIT + 1; the NESTED_LIMIT-th needs its `seq` when there are more) and
    `notes` (see `payments`), so nothing is read back.
    """
    ids = [row["id"] for row in rows]
    zones = {row["id"]: row["timezone"] for row in rows}
    if pays is None:
        pays = _first_pages(conn, "payments", "distribution", ids)
    shown = [p for i in ids for p in pays.get(i, [])[:NESTED_LIMIT]]
    rendered_pays = payments(conn, shown, zones, notes, view)
    # Grouped by the rows' distribution (the rendered `distribution` field may be left out).
    by_dst: dict[str, list[JSON]] = defaultdict(list)
    for pay_row, pay in zip(shown, rendered_pays, strict=True):
        by_dst[pay_row["distribution"]].append(pay)
    out: list[JSON] = []
    for row in rows:
        mine = pays.get(row["id"], [])
        zone = row["timezone"]
        record: JSON = {
            "object": "distribution",
            "livemode": False,
            "id": row["id"],
            "name": row["name"],
            "vehicle": row["vehicle"],
            "external_reference": row["external_reference"],
            "distribution_date": _in_zone(row["date_ts"], zone),
            "distribution_timezone": zone,
            "short_id": row["short_id"],
            "status": row["status"],
            "published_at": ts_to_iso(row["published_at"]),
            "approved_at": ts_to_iso(row["approved_at"]),
            "executed_at": ts_to_iso(row["executed_at"]),
            "cancelled_at": ts_to_iso(row["cancelled_at"]),
            "created_at": ts_to_iso(row["created_at"]),
            "updated_at": ts_to_iso(row["updated_at"]),
            "sender_url": f"{app_url}/distributions/{row['id']}/sender",
            "recipient_url": f"{app_url}/distributions/{row['id']}/recipient",
            "payments": _nested(
                f"/v1/distributions/{row['id']}/payments",
                by_dst.get(row["id"], []),
                len(mine) > NESTED_LIMIT,
                mine[NESTED_LIMIT - 1]["seq"] if len(mine) > NESTED_LIMIT else None,
                view.legacy_pages,
            ),
        }
        out.append(record if view.plain else view.shape(record, "distribution"))
    return out


def external_references(conn: sqlite3.Connection, rows: Sequence[Row]) -> dict[str, list[str]]:
    """Owner id → every reference of an entity or contact, in the public spec's array form.

    Objects created with `external_references` keep them in their own table; the others have
    their one `external_reference` (or none).
    """
    stored = _children(conn, "external_references", "owner", [r["id"] for r in rows], "owner, ref")
    out: dict[str, list[str]] = {}
    for row in rows:
        refs = stored.get(row["id"])
        if refs:
            out[row["id"]] = [r["ref"] for r in refs]
        else:
            single = row["external_reference"]
            out[row["id"]] = [single] if single is not None else []
    return out


def entities(
    conn: sqlite3.Connection,
    rows: list[sqlite3.Row],
    *,
    by_id: bool = False,
    view: View = DEFAULT_VIEW,
) -> list[JSON]:
    """Entities with their payment instruction ids (and, read by id, the two URLs)."""
    pmis = _children(
        conn, "payment_instructions", "entity", [r["id"] for r in rows], "id, entity, seq"
    )
    refs = external_references(conn, rows)
    out: list[JSON] = []
    for row in rows:
        ent = row["id"]
        mine = pmis.get(ent, [])
        record: JSON = {
            "object": "entity",
            "livemode": False,
            "id": ent,
            "name": row["name"],
            "type": row["type"],
            "external_type": row["external_type"],
            "external_references": refs[ent],
            "payment_instructions": [p["id"] for p in mine],
            "created_at": ts_to_iso(row["created_at"]),
            "updated_at": ts_to_iso(row["updated_at"]),
        }
        if by_id:
            url = f"/v1/entities/{ent}/payment_instructions"
            record["sender_payment_instructions_url"] = url
            record["recipient_payment_instructions_url"] = url
        if view.public:
            del record["external_type"]  # the public Entity has no such field
            record["payment_instructions"] = _nested(
                f"/v1/entities/{ent}/payment_instructions",
                [
                    {"object": "payment_instructions", "livemode": False, "id": p["id"]}
                    for p in mine[:NESTED_LIMIT]
                ],
                len(mine) > NESTED_LIMIT,
                mine[NESTED_LIMIT - 1]["seq"] if len(mine) > NESTED_LIMIT else None,
                view.legacy_pages,
            )
        out.append(record if view.plain else view.shape(record, "entity"))
    return out


def contacts(
    conn: sqlite3.Connection, rows: list[sqlite3.Row], view: View = DEFAULT_VIEW
) -> list[JSON]:
    """Contacts with the ids of the entities they are associated with."""
    ids = [r["id"] for r in rows]
    links = _children(conn, "entity_contacts", "contact", ids) if not view.strict else {}
    refs = external_references(conn, rows)
    out: list[JSON] = []
    for row in rows:
        record: JSON = {
            "object": "contact",
            "livemode": False,
            "id": row["id"],
            "name": row["name"],
            "email": row["email"],
            "external_references": refs[row["id"]],
            "entities": [link["entity"] for link in links.get(row["id"], [])],
            "created_at": ts_to_iso(row["created_at"]),
            "updated_at": ts_to_iso(row["updated_at"]),
        }
        out.append(record if view.plain else view.shape(record, "contact"))
    return out


def payment_instruction(row: sqlite3.Row, view: View = DEFAULT_VIEW) -> JSON:
    """A payment instructions record (never the full account number)."""
    record: JSON = {
        "object": "payment_instructions",
        "livemode": False,
        "id": row["id"],
        "entity": row["entity"],
        "type": row["type"],
        "beneficiary_name": row["beneficiary_name"],
        "bank_name": row["bank_name"],
        "routing_number": row["routing_number"],
        "account_number_last_four": row["last_four"],
        "branch_code": row["branch_code"],
        "external_reference": row["external_reference"],
        "created_at": ts_to_iso(row["created_at"]),
    }
    return record if view.plain else view.shape(record, "payment_instructions")
