"""Bulk history: many executed distributions at once, straight into SQLite (never the HTTP
create path), for tests and benchmarks that need a long past.

`POST /_sandbox/history` `{"vehicle"*, "entities", "distributions", "payments_per_distribution",
"external_reference_prefix", "first_number", "amount_cents", "interval_s"}` → 201 `{"vehicle",
"distributions", "payments", "first_external_reference", "last_external_reference"}`.

- `vehicle`: an existing vehicle; the history belongs to its organization.
- `entities`: existing entities of that organization paid in turn (default: all of them, in
  creation order); each payment takes its entity's earliest payment instructions, as a create
  does.
- `distributions` (default 100,000) × `payments_per_distribution` (default 1, at most 1,000):
  at most 5,000,000 payments per call.
- `external_reference_prefix` (default `HIST-`) and `first_number` (default 1): references
  `HIST-000001`, `HIST-000002`, … (zero-padded to the width of the largest number).
- `amount_cents` (default 10,000) per payment; `interval_s` (default 3,600) between dates: the
  last distribution is dated `interval_s` before the sandbox's now, each earlier one
  `interval_s` before the next, in `UTC`.

Every distribution is `executed` (published, approved and executed at its date; created a day
before), every payment `disbursed` at that date. Balances are left as they are: the history is
taken to be already reflected in them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from starlette.requests import Request
from starlette.responses import Response

from fundpipe.sandbox._checks import MAX_AMOUNT, MAX_PAYMENTS, PATTERNS
from fundpipe.sandbox._errors import ApiError, not_found, param
from fundpipe.sandbox._fields import Fields, read_payload
from fundpipe.sandbox._requests import json_response, sandbox_of
from fundpipe.sandbox._store import chunks, new_ids, new_short_id, placeholders

MAX_DISTRIBUTIONS = 1_000_000
MAX_HISTORY_PAYMENTS = 5_000_000
#: How long before its date a history distribution was created.
_CREATED_BEFORE_S = 86_400.0

_INSERT_DISTRIBUTION = (
    "INSERT INTO distributions (id, org, name, vehicle, external_reference, date_ts, timezone, "
    "short_id, status, published_at, approved_at, executed_at, created_at, updated_at) "
    "VALUES (?, ?, ?, ?, ?, ?, 'UTC', ?, 'executed', ?, ?, ?, ?, ?)"
)
_INSERT_PAYMENT = (
    "INSERT INTO payments (id, org, distribution, amount, currency, status, "
    "recipient_confirmed_at, verified_at, disbursed_at, entity, payment_instructions, "
    "created_at, updated_at) VALUES (?, ?, ?, ?, 'USD', 'disbursed', ?, ?, ?, ?, ?, ?, ?)"
)


def _first_instructions(conn: sqlite3.Connection, entities: list[str]) -> dict[str, str]:
    """Entity → its earliest payment instructions id (entities without any are absent)."""
    first: dict[str, str] = {}
    for part in chunks(entities):
        for row in conn.execute(
            "SELECT entity, id FROM payment_instructions "
            f"WHERE entity IN ({placeholders(len(part))}) ORDER BY seq DESC",
            tuple(part),
        ):
            first[row["entity"]] = row["id"]  # descending: the earliest wins
    return first


def seed_history(
    conn: sqlite3.Connection,
    org: str,
    vehicle: str,
    entities: list[str],
    *,
    count: int,
    per_distribution: int,
    prefix: str,
    first_number: int,
    amount: int,
    interval_s: float,
    now_ts: float,
) -> tuple[str, str]:
    """Insert `count` executed distributions of `per_distribution` disbursed payments each;
    returns the first and last external references."""
    width = len(str(first_number + count - 1))
    refs = [f"{prefix}{n:0{width}d}" for n in range(first_number, first_number + count)]
    dst_ids = new_ids("dst_", count)
    dates = [now_ts - (count - k) * interval_s for k in range(count)]
    conn.executemany(
        _INSERT_DISTRIBUTION,
        (
            (
                dst,
                org,
                f"{ref} distribution",
                vehicle,
                ref,
                date,
                new_short_id(),
                date,
                date,
                date,
                date - _CREATED_BEFORE_S,
                date,
            )
            for dst, ref, date in zip(dst_ids, refs, dates, strict=True)
        ),
    )
    instructions = _first_instructions(conn, entities)

    def payment_rows() -> Iterator[tuple[object, ...]]:
        # Ids drawn per distribution: one read of the random source each, bounded memory.
        turn = 0
        for dst, date in zip(dst_ids, dates, strict=True):
            for dpmt in new_ids("dpmt_", per_distribution):
                entity = entities[turn % len(entities)]
                turn += 1
                yield (
                    dpmt,
                    org,
                    dst,
                    amount,
                    date,
                    date,
                    date,
                    entity,
                    instructions.get(entity),
                    date - _CREATED_BEFORE_S,
                    date,
                )

    conn.executemany(_INSERT_PAYMENT, payment_rows())
    return refs[0], refs[-1]


def _entities_of(conn: sqlite3.Connection, org: str, wanted: list[str] | None) -> list[str]:
    """The entities to pay: `wanted` (each must exist in `org`) or every entity of `org`."""
    if wanted is None:
        rows = conn.execute("SELECT id FROM entities WHERE org = ? ORDER BY seq", (org,))
        found = [row["id"] for row in rows]
        if not found:
            raise ApiError(
                400,
                "The vehicle's organization has no entity to pay.",
                "parameter_missing",
                [param("body.entities", "parameter_missing", "give entities to pay")],
            )
        return found
    known: set[str] = set()
    for part in chunks(sorted(set(wanted))):
        rows = conn.execute(
            f"SELECT id FROM entities WHERE org = ? AND id IN ({placeholders(len(part))})",
            (org, *part),
        )
        known.update(row["id"] for row in rows)
    missing = [e for e in wanted if e not in known]
    if missing:
        raise not_found("entity", missing[0])
    return wanted


async def bulk_history(request: Request) -> Response:
    """POST /_sandbox/history — many executed distributions in bulk (see the module docstring)."""
    fields = Fields(
        await read_payload(request),
        {
            "vehicle",
            "entities",
            "distributions",
            "payments_per_distribution",
            "external_reference_prefix",
            "first_number",
            "amount_cents",
            "interval_s",
        },
    )
    vehicle = fields.string("vehicle", required=True, pattern="vehicle")
    entities = fields.strings("entities")
    count = fields.integer("distributions", 1, MAX_DISTRIBUTIONS) or 100_000
    per = fields.integer("payments_per_distribution", 1, MAX_PAYMENTS) or 1
    prefix = fields.string("external_reference_prefix") or "HIST-"
    start = fields.integer("first_number", 0, 10**12)
    first_number = 1 if start is None else start
    amount = fields.integer("amount_cents", 1, MAX_AMOUNT) or 10_000
    interval = fields.number("interval_s", 1, 366 * 86_400) or 3600.0
    if entities is not None:
        if not 1 <= len(entities) <= 1000:
            fields.problems.append(param("body.entities", "parameter_invalid", "1 to 1,000 ids"))
        for k, ent in enumerate(entities):
            if not PATTERNS["entity"].fullmatch(ent):
                fields.problems.append(
                    param(f"body.entities.[{k}]", "parameter_invalid", "not an entity id", ent)
                )
    if count * per > MAX_HISTORY_PAYMENTS:
        fields.problems.append(
            param(
                "body.payments_per_distribution",
                "parameter_invalid",
                "distributions × payments_per_distribution ≤ 5,000,000",
            )
        )
    fields.check()
    assert vehicle is not None
    sandbox = sandbox_of(request)
    with sandbox.store.write() as conn:
        row = conn.execute("SELECT org FROM vehicles WHERE id = ?", (vehicle,)).fetchone()
        if row is None:
            raise not_found("vehicle", vehicle)
        org = row["org"]
        paid = _entities_of(conn, org, entities)
        first, last = seed_history(
            conn,
            org,
            vehicle,
            paid,
            count=count,
            per_distribution=per,
            prefix=prefix,
            first_number=first_number,
            amount=amount,
            interval_s=interval,
            now_ts=sandbox.now_ts(),
        )
    return json_response(
        {
            "vehicle": vehicle,
            "distributions": count,
            "payments": count * per,
            "first_external_reference": first,
            "last_external_reference": last,
        },
        201,
    )
