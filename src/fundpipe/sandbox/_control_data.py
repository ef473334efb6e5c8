"""Control routes that shape the data: clients, organizations, vehicles, bulk accounts, and
edits "behind fundpipe's back" (payment amount/status, account balances). Payloads are listed in
`fundpipe.sandbox._control`."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from fundpipe.sandbox import _render as render
from fundpipe.sandbox._auth import ALL_SCOPES, upsert_client
from fundpipe.sandbox._checks import MAX_AMOUNT, PATTERNS
from fundpipe.sandbox._errors import ApiError, not_found, param
from fundpipe.sandbox._fields import Fields, read_payload
from fundpipe.sandbox._requests import json_response, sandbox_of
from fundpipe.sandbox._seed import add_organization, add_vehicle, bulk_accounts
from fundpipe.sandbox._store import new_id, placeholders

PAYMENT_STATES = ("staged", "recipient_confirmed", "verified", "disbursed", "failed", "cancelled")


async def create_client(request: Request) -> Response:
    """POST /_sandbox/clients (create or replace)."""
    fields = Fields(
        await read_payload(request), {"client_id", "client_secret", "scopes", "organizations"}
    )
    client_id = fields.string("client_id", required=True)
    secret = fields.string("client_secret", required=True)
    scopes = fields.strings("scopes")
    orgs = fields.strings("organizations")
    for scope in scopes or []:
        if scope not in ALL_SCOPES:
            fields.problems.append(
                param("body.scopes", "parameter_invalid", "unknown scope", scope)
            )
    for org in orgs or []:
        if not PATTERNS["organization"].fullmatch(org):
            fields.problems.append(
                param("body.organizations", "parameter_invalid", "not an organization id", org)
            )
    fields.check()
    assert client_id is not None
    assert secret is not None
    scopes = (
        scopes
        if scopes is not None
        else sorted(ALL_SCOPES - {s for s in ALL_SCOPES if not s.endswith(":*")})
    )
    orgs = orgs or []
    sandbox = sandbox_of(request)
    with sandbox.store.write() as conn:
        for org in orgs:
            if conn.execute("SELECT 1 FROM organizations WHERE id = ?", (org,)).fetchone() is None:
                raise not_found("organization", org)
        upsert_client(conn, client_id, secret, scopes, orgs)
    return json_response({"client_id": client_id, "scopes": scopes, "organizations": orgs}, 201)


async def create_organization(request: Request) -> Response:
    """POST /_sandbox/organizations."""
    fields = Fields(await read_payload(request), {"id", "name"})
    org_id = fields.string("id", pattern="organization")
    name = fields.string("name", required=True)
    fields.check()
    assert name is not None
    org_id = org_id or new_id("org_")
    sandbox = sandbox_of(request)
    with sandbox.store.write() as conn:
        if (
            conn.execute("SELECT 1 FROM organizations WHERE id = ?", (org_id,)).fetchone()
            is not None
        ):
            raise ApiError(409, "That organization already exists.", "conflict")
        add_organization(conn, org_id, name, sandbox.now_ts())
        row = conn.execute("SELECT * FROM organizations WHERE id = ?", (org_id,)).fetchone()
    return json_response(render.organization(row), 201)


def _require_org(conn: Any, org: str) -> None:
    if conn.execute("SELECT 1 FROM organizations WHERE id = ?", (org,)).fetchone() is None:
        raise not_found("organization", org)


async def create_vehicle(request: Request) -> Response:
    """POST /_sandbox/vehicles → the vehicle and its depository and brokerage accounts."""
    fields = Fields(
        await read_payload(request), {"organization", "name", "depository_cents", "brokerage_cents"}
    )
    org = fields.string("organization", required=True, pattern="organization")
    name = fields.string("name", required=True)
    dep = fields.integer("depository_cents", 0, MAX_AMOUNT) or 0
    brk = fields.integer("brokerage_cents", 0, MAX_AMOUNT) or 0
    fields.check()
    assert org is not None
    assert name is not None
    sandbox = sandbox_of(request)
    with sandbox.store.write() as conn:
        _require_org(conn, org)
        veh, accounts = add_vehicle(
            conn, org, name, sandbox.now_ts(), depository=(dep, dep), brokerage=(brk, brk)
        )
        vehicle = render.vehicle(
            conn.execute("SELECT * FROM vehicles WHERE id = ?", (veh,)).fetchone()
        )
        rows = [
            conn.execute("SELECT * FROM financial_accounts WHERE id = ?", (fa,)).fetchone()
            for fa in accounts
        ]
    return json_response(
        {"vehicle": vehicle, "financial_accounts": [render.financial_account(r) for r in rows]}, 201
    )


async def bulk_financial_accounts(request: Request) -> Response:
    """POST /_sandbox/bulk_financial_accounts (benchmarks)."""
    fields = Fields(
        await read_payload(request), {"organization", "vehicles", "accounts_per_vehicle"}
    )
    org = fields.string("organization", required=True, pattern="organization")
    vehicles = fields.integer("vehicles", 1, 10_000, required=True)
    per = fields.integer("accounts_per_vehicle", 1, 1_000, required=True)
    fields.check()
    assert org is not None
    assert vehicles is not None
    assert per is not None
    if vehicles * per > 1_000_000:
        raise ApiError(
            400,
            "At most 1,000,000 accounts per call.",
            "parameter_invalid",
            [
                param(
                    "body.accounts_per_vehicle",
                    "parameter_invalid",
                    "vehicles × accounts_per_vehicle ≤ 1,000,000",
                )
            ],
        )
    sandbox = sandbox_of(request)
    with sandbox.store.write() as conn:
        _require_org(conn, org)
        ids, count = bulk_accounts(conn, org, vehicles, per, sandbox.now_ts())
    return json_response({"vehicles": ids, "financial_accounts": count}, 201)


async def patch_payment(request: Request) -> Response:
    """PATCH /_sandbox/distribution_payments/{dpmt_id} — change amount/status behind fundpipe's back."""
    dpmt = str(request.path_params["dpmt_id"])
    fields = Fields(await read_payload(request), {"amount", "status"})
    amount = fields.integer("amount", 1, MAX_AMOUNT)
    status = fields.string("status")
    if status is not None and status not in PAYMENT_STATES:
        fields.problems.append(
            param("body.status", "parameter_invalid", f"one of {', '.join(PAYMENT_STATES)}", status)
        )
    fields.check()
    sandbox = sandbox_of(request)
    now = sandbox.now_ts()
    with sandbox.store.write() as conn:
        row = conn.execute("SELECT * FROM payments WHERE id = ?", (dpmt,)).fetchone()
        if row is None:
            raise not_found("distribution payment", dpmt)
        if amount is not None:
            conn.execute(
                "UPDATE payments SET amount = ?, updated_at = ? WHERE id = ?", (amount, now, dpmt)
            )
        if status is not None:
            conn.execute(
                "UPDATE payments SET status = ?, updated_at = ? WHERE id = ?", (status, now, dpmt)
            )
        row = conn.execute("SELECT * FROM payments WHERE id = ?", (dpmt,)).fetchone()
        zones = render.payment_zones(conn, [row])
        out = render.payments(conn, [row], zones, view=sandbox.view)[0]
    return json_response(out)


async def patch_account(request: Request) -> Response:
    """PATCH /_sandbox/financial_accounts/{fa_id} — set balances (cents)."""
    fa = str(request.path_params["fa_id"])
    fields = Fields(await read_payload(request), {"total", "available", "total_end_of_last_month"})
    limit = MAX_AMOUNT
    values = {
        "total": fields.integer("total", -limit, limit),
        "available": fields.integer("available", -limit, limit),
        "total_eolm": fields.integer("total_end_of_last_month", -limit, limit),
    }
    fields.check()
    sandbox = sandbox_of(request)
    with sandbox.store.write() as conn:
        if conn.execute("SELECT 1 FROM financial_accounts WHERE id = ?", (fa,)).fetchone() is None:
            raise not_found("financial account", fa)
        for column, value in values.items():
            if value is not None:
                conn.execute(
                    f"UPDATE financial_accounts SET {column} = ?, updated_at = ? WHERE id = ?",
                    (value, sandbox.now_ts(), fa),
                )
        row = conn.execute("SELECT * FROM financial_accounts WHERE id = ?", (fa,)).fetchone()
    return json_response(render.financial_account(row))


#: Payment states a cancellation leaves alone (the payment is done either way).
TERMINAL_PAYMENT_STATES = ("disbursed", "failed", "cancelled")


async def cancel_distribution(request: Request) -> Response:
    """POST /_sandbox/distributions/{dst_id}/cancel — cancel a distribution not yet executed.

    The distribution goes to `cancelled` with `cancelled_at` (sandbox time), and each of its
    payments not in a terminal state (`disbursed`, `failed`, `cancelled`) to `cancelled`; the
    clock never executes or disburses them afterwards. Cancelling a cancelled distribution
    changes nothing and answers it again. An executed one is refused: 400 `parameter_invalid`
    (`path.dst_id`). No body, or an empty JSON object.
    """
    dst = str(request.path_params["dst_id"])
    Fields(await read_payload(request), set()).check()
    sandbox = sandbox_of(request)
    now = sandbox.now_ts()
    with sandbox.store.write() as conn:
        row = conn.execute("SELECT * FROM distributions WHERE id = ?", (dst,)).fetchone()
        if row is None:
            raise not_found("distribution", dst)
        if row["status"] == "executed":
            raise ApiError(
                400,
                "An executed distribution cannot be cancelled.",
                "parameter_invalid",
                [param("path.dst_id", "parameter_invalid", "the distribution is executed", dst)],
            )
        if row["status"] != "cancelled":
            conn.execute(
                "UPDATE distributions SET status = 'cancelled', cancelled_at = ?, updated_at = ? "
                "WHERE id = ?",
                (now, now, dst),
            )
            conn.execute(
                "UPDATE payments SET status = 'cancelled', updated_at = ? "
                f"WHERE distribution = ? AND status NOT IN ({placeholders(3)})",
                (now, dst, *TERMINAL_PAYMENT_STATES),
            )
            row = conn.execute("SELECT * FROM distributions WHERE id = ?", (dst,)).fetchone()
        out = render.distributions(conn, [row], sandbox.config.app_url, view=sandbox.view)[0]
    return json_response(out)
