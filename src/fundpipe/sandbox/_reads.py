"""The read endpoints: organizations, vehicles, financial accounts, entities, contacts,
payment instructions, distributions with their payments and notifications."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from fundpipe.sandbox import _render as render
from fundpipe.sandbox._checks import id_problem
from fundpipe.sandbox._errors import ApiError, not_found, param
from fundpipe.sandbox._lookups import one, path_id
from fundpipe.sandbox._modes import View
from fundpipe.sandbox._pagination import list_envelope, paginate, parse_page_query
from fundpipe.sandbox._requests import Call, authorize, json_response, sandbox_of
from fundpipe.sandbox._store import placeholders

LIST_QUERY = frozenset({"page", "page_before", "limit"})
ACCOUNT_LIST_QUERY = LIST_QUERY | {"ids"}

#: Rows of one page → their records, in the view in force.
Renderer = Callable[[sqlite3.Connection, list[sqlite3.Row], View], list[Any]]


async def _list(
    request: Request,
    scope: str,
    table: str,
    path: str,
    renderer: Renderer,
    *,
    where: str = "org = ?",
    args: tuple[Any, ...] | None = None,
    newest_first: bool = True,
    extra_query: tuple[tuple[str, str], ...] = (),
    parent: tuple[str, str, str] | None = None,  # (table, id, what) that must exist in the org
    call: Call | None = None,
) -> Response:
    call = call or await authorize(request, scope, query=LIST_QUERY)
    page = parse_page_query(request.query_params)
    with call.sandbox.store.read() as conn:
        if parent is not None:
            one(conn, parent[0], parent[1], call.org, parent[2])
        rows, next_url, prev_url = paginate(
            conn,
            table,
            where,
            args if args is not None else (call.org,),
            page,
            path,
            newest_first=newest_first,
            extra_query=extra_query,
        )
        view = call.sandbox.view
        data = renderer(conn, rows, view)
    return json_response(list_envelope(data, path, next_url, prev_url, legacy=view.legacy_pages))


def _plain(fn: Callable[[sqlite3.Row], dict[str, Any]]) -> Renderer:
    """A renderer of records that look the same in every view."""
    return lambda _conn, rows, _view: [fn(row) for row in rows]


def _entities(conn: sqlite3.Connection, rows: list[sqlite3.Row], view: View) -> list[Any]:
    return render.entities(conn, rows, view=view)


def _instructions(_conn: sqlite3.Connection, rows: list[sqlite3.Row], view: View) -> list[Any]:
    return [render.payment_instruction(row, view) for row in rows]


async def list_organizations(request: Request) -> Response:
    """GET /v1/organizations — the organizations this client may act for."""
    call = await authorize(request, "organizations:read", needs_org=False, query=LIST_QUERY)
    orgs = call.principal.organizations or ("",)
    return await _list(
        request,
        "",
        "organizations",
        "/v1/organizations",
        _plain(render.organization),
        where=f"id IN ({placeholders(len(orgs))})",
        args=tuple(orgs),
        call=call,
    )


async def get_organization(request: Request) -> Response:
    """GET /v1/organizations/{org_id}."""
    call = await authorize(request, "organizations:read", needs_org=False)
    org_id = path_id(request, "org_id", "organization")
    with call.sandbox.store.read() as conn:
        row = conn.execute("SELECT * FROM organizations WHERE id = ?", (org_id,)).fetchone()
    if row is None:
        raise not_found("organization", org_id)
    if org_id not in call.principal.organizations:
        raise ApiError(403, "This client cannot act for that organization.", "forbidden")
    return json_response(render.organization(row))


async def list_vehicles(request: Request) -> Response:
    """GET /v1/vehicles."""
    return await _list(request, "vehicles:read", "vehicles", "/v1/vehicles", _plain(render.vehicle))


async def get_vehicle(request: Request) -> Response:
    """GET /v1/vehicles/{veh_id}."""
    call = await authorize(request, "vehicles:read")
    veh = path_id(request, "veh_id", "vehicle")
    with call.sandbox.store.read() as conn:
        return json_response(render.vehicle(one(conn, "vehicles", veh, call.org, "vehicle")))


async def list_vehicle_accounts(request: Request) -> Response:
    """GET /v1/vehicles/{veh_id}/financial_accounts."""
    call = await authorize(request, "financial_accounts:read", query=LIST_QUERY)
    veh = path_id(request, "veh_id", "vehicle")
    return await _list(
        request,
        "",
        "financial_accounts",
        f"/v1/vehicles/{veh}/financial_accounts",
        _plain(render.financial_account),
        where="org = ? AND vehicle = ?",
        args=(call.org, veh),
        parent=("vehicles", veh, "vehicle"),
        call=call,
    )


async def list_accounts(request: Request) -> Response:
    """GET /v1/financial_accounts — every account of the organization, optional `ids` filter."""
    call = await authorize(request, "financial_accounts:read", query=ACCOUNT_LIST_QUERY)
    ids = request.query_params.getlist("ids")
    if "ids" not in request.query_params:
        return await _list(
            request,
            "",
            "financial_accounts",
            "/v1/financial_accounts",
            _plain(render.financial_account),
            call=call,
        )
    problems = []
    if not 1 <= len(ids) <= 100:
        problems.append(param("query.ids", "parameter_invalid", "give 1 to 100 ids"))
    for value in ids:
        problem = id_problem("financial_account", value, "query.ids")
        if problem is not None:
            problems.append(problem)
    if problems:
        raise ApiError(400, "Invalid ids filter.", problems[0].code, problems)
    unique = tuple(dict.fromkeys(ids))
    return await _list(
        request,
        "",
        "financial_accounts",
        "/v1/financial_accounts",
        _plain(render.financial_account),
        where=f"org = ? AND id IN ({placeholders(len(unique))})",
        args=(call.org, *unique),
        extra_query=tuple(("ids", value) for value in ids),
        call=call,
    )


async def get_account(request: Request) -> Response:
    """GET /v1/financial_accounts/{fa_id}."""
    call = await authorize(request, "financial_accounts:read")
    fa = path_id(request, "fa_id", "financial_account")
    with call.sandbox.store.read() as conn:
        row = one(conn, "financial_accounts", fa, call.org, "financial account")
    return json_response(render.financial_account(row))


async def list_entities(request: Request) -> Response:
    """GET /v1/entities."""
    return await _list(request, "entities:read", "entities", "/v1/entities", _entities)


async def get_entity(request: Request) -> Response:
    """GET /v1/entities/{ent_id} (with the payment instruction URLs)."""
    call = await authorize(request, "entities:read")
    ent = path_id(request, "ent_id", "entity")
    with call.sandbox.store.read() as conn:
        row = one(conn, "entities", ent, call.org, "entity")
        return json_response(render.entities(conn, [row], by_id=True, view=call.sandbox.view)[0])


async def list_entity_instructions(request: Request) -> Response:
    """GET /v1/entities/{ent_id}/payment_instructions (request order)."""
    call = await authorize(request, "entities:read", query=LIST_QUERY)
    ent = path_id(request, "ent_id", "entity")
    return await _list(
        request,
        "",
        "payment_instructions",
        f"/v1/entities/{ent}/payment_instructions",
        _instructions,
        where="org = ? AND entity = ?",
        args=(call.org, ent),
        newest_first=False,
        parent=("entities", ent, "entity"),
        call=call,
    )


async def get_instruction(request: Request) -> Response:
    """GET /payment_instructions/{pmi_id} and /v1/payment_instructions/{pmi_id}."""
    call = await authorize(request, "entities:read")
    pmi = path_id(request, "pmi_id", "payment_instructions")
    with call.sandbox.store.read() as conn:
        row = one(conn, "payment_instructions", pmi, call.org, "payment instructions")
    return json_response(render.payment_instruction(row, call.sandbox.view))


async def list_contacts(request: Request) -> Response:
    """GET /v1/contacts."""
    return await _list(request, "contacts:read", "contacts", "/v1/contacts", render.contacts)


async def get_contact(request: Request) -> Response:
    """GET /v1/contacts/{cnt_id}."""
    call = await authorize(request, "contacts:read")
    cnt = path_id(request, "cnt_id", "contact")
    with call.sandbox.store.read() as conn:
        row = one(conn, "contacts", cnt, call.org, "contact")
        return json_response(render.contacts(conn, [row], call.sandbox.view)[0])


def _distribution_renderer(app_url: str) -> Renderer:
    return lambda conn, rows, view: render.distributions(conn, rows, app_url, view=view)


async def list_distributions(request: Request) -> Response:
    """GET /v1/distributions."""
    app_url = sandbox_of(request).config.app_url
    return await _list(
        request,
        "distributions:read",
        "distributions",
        "/v1/distributions",
        _distribution_renderer(app_url),
    )


async def get_distribution(request: Request) -> Response:
    """GET /v1/distributions/{dst_id}."""
    call = await authorize(request, "distributions:read")
    dst = path_id(request, "dst_id", "distribution")
    with call.sandbox.store.read() as conn:
        row = one(conn, "distributions", dst, call.org, "distribution")
        records = render.distributions(
            conn, [row], call.sandbox.config.app_url, view=call.sandbox.view
        )
        return json_response(records[0])


async def list_payments(request: Request) -> Response:
    """GET /v1/distributions/{dst_id}/payments (request order)."""
    call = await authorize(request, "distributions:read", query=LIST_QUERY)
    dst = path_id(request, "dst_id", "distribution")
    with call.sandbox.store.read() as conn:
        zone = one(conn, "distributions", dst, call.org, "distribution")["timezone"]

    def renderer(conn: sqlite3.Connection, rows: list[sqlite3.Row], view: View) -> list[Any]:
        return render.payments(conn, rows, {dst: zone}, view=view)

    return await _list(
        request,
        "",
        "payments",
        f"/v1/distributions/{dst}/payments",
        renderer,
        where="org = ? AND distribution = ?",
        args=(call.org, dst),
        newest_first=False,
        call=call,
    )


async def list_notifications(request: Request) -> Response:
    """GET /v1/distribution_payments/{dpmt_id}/notifications (request order)."""
    call = await authorize(request, "distributions:read", query=LIST_QUERY)
    dpmt = path_id(request, "dpmt_id", "distribution_payment")
    return await _list(
        request,
        "",
        "notifications",
        f"/v1/distribution_payments/{dpmt}/notifications",
        _plain(render.notification),
        where="org = ? AND payment = ?",
        args=(call.org, dpmt),
        newest_first=False,
        parent=("payments", dpmt, "distribution payment"),
        call=call,
    )
