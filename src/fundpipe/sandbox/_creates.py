"""The create endpoints: atomic batches of entities, contacts, distributions (with payments and
notifications), payment instructions, and contact association."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from fundpipe.sandbox import _render as render
from fundpipe.sandbox._errors import ApiError, validation_failure
from fundpipe.sandbox._lookups import created, one, org_lookup, rows_by_id
from fundpipe.sandbox._pagination import list_envelope
from fundpipe.sandbox._pipeline import Call, mutate
from fundpipe.sandbox._store import chunks, new_id, new_short_id, placeholders
from fundpipe.sandbox._validation import (
    id_problem,
    validate_association,
    validate_contacts,
    validate_distributions,
    validate_entities,
    validate_payment_instructions,
)


def _create_entities(call: Call, body: Any, conn: sqlite3.Connection) -> tuple[int, Any]:
    clean, problems = validate_entities(body)
    if problems:
        raise validation_failure(problems)
    ids = [new_id("ent_") for _ in clean]
    conn.executemany(
        "INSERT INTO entities (id, org, name, type, external_type, external_reference, created_at, "
        "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                i,
                call.org,
                e["name"],
                e["type"],
                e["external_type"],
                e["external_reference"],
                call.now_ts,
                call.now_ts,
            )
            for i, e in zip(ids, clean, strict=True)
        ],
    )
    return created("/v1/entities", render.entities(conn, rows_by_id(conn, "entities", ids)))


def _create_contacts(call: Call, body: Any, conn: sqlite3.Connection) -> tuple[int, Any]:
    clean, problems = validate_contacts(body)
    if problems:
        raise validation_failure(problems)
    ids = [new_id("cnt_") for _ in clean]
    conn.executemany(
        "INSERT INTO contacts (id, org, name, email, external_reference, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (i, call.org, c["name"], c["email"], c["external_reference"], call.now_ts, call.now_ts)
            for i, c in zip(ids, clean, strict=True)
        ],
    )
    return created("/v1/contacts", render.contacts(conn, rows_by_id(conn, "contacts", ids)))


def _create_distributions(call: Call, body: Any, conn: sqlite3.Connection) -> tuple[int, Any]:
    clean, problems = validate_distributions(body, org_lookup(conn, call.org))
    if problems:
        raise validation_failure(problems)
    entities = sorted({p["entity"] for d in clean for p in d["payments"]})
    first_pmi: dict[str, str] = {}
    for part in chunks(entities):
        for row in conn.execute(
            f"SELECT entity, id FROM payment_instructions WHERE entity IN ({placeholders(len(part))}) "
            "ORDER BY seq DESC",
            tuple(part),
        ):
            first_pmi[row["entity"]] = row["id"]  # descending: the earliest wins
    now = call.now_ts
    dst_rows: list[tuple[Any, ...]] = []
    pay_rows: list[tuple[Any, ...]] = []
    note_rows: list[tuple[str, str, str, str]] = []
    ids: list[str] = []
    for dist in clean:
        dst = new_id("dst_")
        ids.append(dst)
        dst_rows.append(
            (
                dst,
                call.org,
                dist["name"],
                dist["vehicle"],
                dist["external_reference"],
                dist["date_ts"],
                dist["timezone"],
                new_short_id(),
                now,
                now,
            )
        )
        for pay in dist["payments"]:
            dpmt = new_id("dpmt_")
            pay_rows.append(
                (
                    dpmt,
                    call.org,
                    dst,
                    pay["amount"],
                    pay["currency"],
                    pay["override_ts"],
                    pay["entity"],
                    first_pmi.get(pay["entity"]),
                    now,
                    now,
                )
            )
            note_rows.extend(
                (new_id("dntf_"), call.org, dpmt, contact) for contact in pay["notifications"]
            )
    conn.executemany(
        "INSERT INTO distributions (id, org, name, vehicle, external_reference, date_ts, timezone, "
        "short_id, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'draft', ?, ?)",
        dst_rows,
    )
    conn.executemany(
        "INSERT INTO payments (id, org, distribution, amount, currency, override_ts, status, entity, "
        "payment_instructions, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'staged', ?, ?, ?, ?)",
        pay_rows,
    )
    conn.executemany(
        "INSERT INTO notifications (id, org, payment, contact) VALUES (?, ?, ?, ?)", note_rows
    )
    rows = rows_by_id(conn, "distributions", ids)
    return created(
        "/v1/distributions", render.distributions(conn, rows, call.sandbox.config.app_url)
    )


def _create_instructions(call: Call, body: Any, conn: sqlite3.Connection) -> tuple[int, Any]:
    clean, problems = validate_payment_instructions(body, org_lookup(conn, call.org))
    if problems:
        raise validation_failure(problems)
    out = []
    for element in clean:
        ids = []
        for item in element["payment_instructions"]:
            pmi = new_id("pmi_")
            ids.append(pmi)
            conn.execute(
                "INSERT INTO payment_instructions (id, org, entity, type, beneficiary_name, bank_name, "
                "routing_number, last_four, branch_code, external_reference, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    pmi,
                    call.org,
                    element["entity"],
                    item["type"],
                    item["beneficiary_name"],
                    item["bank_name"],
                    item["routing_number"],
                    item["last_four"],
                    item["branch_code"],
                    item["external_reference"],
                    call.now_ts,
                ),
            )
        conn.execute(
            "UPDATE entities SET updated_at = ? WHERE id = ?", (call.now_ts, element["entity"])
        )
        out.append(
            {
                "object": "entity_payment_instructions",
                "livemode": False,
                "entity": element["entity"],
                "payment_instructions": list_envelope(
                    ids, f"/v1/entities/{element['entity']}/payment_instructions", None, None
                ),
            }
        )
    return created("/v1/payment_instructions", out)


def _associate(ent: str) -> Callable[[Call, Any, sqlite3.Connection], tuple[int, Any]]:
    def handler(call: Call, body: Any, conn: sqlite3.Connection) -> tuple[int, Any]:
        problem = id_problem("entity", ent, "path.ent_id")
        if problem is not None:
            raise ApiError(400, "Invalid entity id.", problem.code, [problem])
        one(conn, "entities", ent, call.org, "entity")
        ids, problems = validate_association(body, org_lookup(conn, call.org))
        if problems:
            raise validation_failure(problems)
        unique = list(dict.fromkeys(ids))
        conn.executemany(
            "INSERT OR IGNORE INTO entity_contacts (entity, contact) VALUES (?, ?)",
            [(ent, c) for c in unique],
        )
        conn.execute("UPDATE entities SET updated_at = ? WHERE id = ?", (call.now_ts, ent))
        conn.executemany(
            "UPDATE contacts SET updated_at = ? WHERE id = ?", [(call.now_ts, c) for c in unique]
        )
        return created("/v1/contacts", render.contacts(conn, rows_by_id(conn, "contacts", unique)))

    return handler


async def create_entities(request: Request) -> Response:
    """POST /v1/entities."""
    return await mutate(request, "entities:write", _create_entities)


async def create_contacts(request: Request) -> Response:
    """POST /v1/contacts."""
    return await mutate(request, "contacts:write", _create_contacts)


async def create_distributions(request: Request) -> Response:
    """POST /v1/distributions."""
    return await mutate(request, "distributions:write", _create_distributions)


async def create_instructions(request: Request) -> Response:
    """POST /v1/payment_instructions."""
    return await mutate(request, "entities:write", _create_instructions)


async def associate_contacts(request: Request) -> Response:
    """POST /v1/entities/{ent_id}/contacts."""
    return await mutate(request, "entities:write", _associate(str(request.path_params["ent_id"])))
