"""The service's routes (`/v1/...`, `/payment_instructions/{id}`, `/oauth/token`).

In strict-interface mode the routes DESIGN.md marks *ours* (`_modes.OUR_ROUTES`) are not
registered, so they answer 404 `resource_not_found` like any unknown route.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response

from fundpipe.sandbox._auth import OAuthError, issue_token
from fundpipe.sandbox._creates import (
    associate_contacts,
    create_contacts,
    create_distributions,
    create_entities,
    create_instructions,
)
from fundpipe.sandbox._errors import ApiError, error_body
from fundpipe.sandbox._modes import OUR_ROUTES
from fundpipe.sandbox._reads import (
    get_account,
    get_contact,
    get_distribution,
    get_entity,
    get_instruction,
    get_organization,
    get_vehicle,
    list_accounts,
    list_contacts,
    list_distributions,
    list_entities,
    list_entity_instructions,
    list_notifications,
    list_organizations,
    list_payments,
    list_vehicle_accounts,
    list_vehicles,
)
from fundpipe.sandbox._requests import json_response, read_body, request_id_of, sandbox_of

Endpoint = Callable[[Request], Awaitable[Response]]


async def token(request: Request) -> Response:
    """POST /oauth/token — RFC 6749 client credentials."""
    sandbox = sandbox_of(request)
    rid = request_id_of(request)

    def admit(client_id: str) -> None:
        retry = sandbox.limiter.check(client_id)
        if retry is not None:
            raise ApiError(
                429,
                "Rate limit exceeded.",
                "rate_limit_exceeded",
                headers={"Retry-After": str(retry)},
            )

    try:
        raw = await read_body(request, 64 * 1024)
        with sandbox.store.write() as conn:
            payload = issue_token(
                conn,
                raw,
                request.headers.get("content-type", ""),
                request.headers.get("authorization"),
                sandbox.now_ts(),
                sandbox.token_lifetime_s,
                admit,
                json_body=sandbox.config.strict_interface,
            )
    except OAuthError as exc:
        retry = sandbox.limiter.check(f"oauth:{request.client.host if request.client else '-'}")
        if retry is not None:
            raise ApiError(
                429,
                "Rate limit exceeded.",
                "rate_limit_exceeded",
                headers={"Retry-After": str(retry)},
            ) from None
        body = error_body(
            exc.status,
            exc.description,
            rid,
            code="unauthorized" if exc.status == 401 else "parameter_invalid",
        )
        body = {"error": exc.error, "error_description": exc.description, **body}
        headers = {"Cache-Control": "no-store", "Request-Id": rid}
        if exc.status == 401:
            headers["WWW-Authenticate"] = 'Basic realm="fund-distribution-service"'
        return json_response(body, exc.status, headers)
    return json_response(payload, 200, {"Cache-Control": "no-store", "Pragma": "no-cache"})


ROUTES: tuple[tuple[str, str, Endpoint], ...] = (
    ("POST", "/oauth/token", token),
    ("GET", "/v1/organizations", list_organizations),
    ("GET", "/v1/organizations/{org_id}", get_organization),
    ("GET", "/v1/vehicles", list_vehicles),
    ("GET", "/v1/vehicles/{veh_id}", get_vehicle),
    ("GET", "/v1/vehicles/{veh_id}/financial_accounts", list_vehicle_accounts),
    ("GET", "/v1/financial_accounts", list_accounts),
    ("GET", "/v1/financial_accounts/{fa_id}", get_account),
    ("GET", "/v1/entities", list_entities),
    ("POST", "/v1/entities", create_entities),
    ("GET", "/v1/entities/{ent_id}", get_entity),
    ("GET", "/v1/entities/{ent_id}/payment_instructions", list_entity_instructions),
    ("POST", "/v1/entities/{ent_id}/contacts", associate_contacts),
    ("GET", "/v1/contacts", list_contacts),
    ("POST", "/v1/contacts", create_contacts),
    ("GET", "/v1/contacts/{cnt_id}", get_contact),
    ("GET", "/v1/distributions", list_distributions),
    ("POST", "/v1/distributions", create_distributions),
    ("GET", "/v1/distributions/{dst_id}", get_distribution),
    ("GET", "/v1/distributions/{dst_id}/payments", list_payments),
    ("GET", "/v1/distribution_payments/{dpmt_id}/notifications", list_notifications),
    ("POST", "/v1/payment_instructions", create_instructions),
    ("GET", "/v1/payment_instructions/{pmi_id}", get_instruction),
    ("GET", "/payment_instructions/{pmi_id}", get_instruction),
)


def register(app: FastAPI, *, strict_interface: bool = False) -> None:
    """Add every service route to `app` (only the documented ones when `strict_interface`)."""
    for method, path, endpoint in ROUTES:
        if strict_interface and (method, path) in OUR_ROUTES:
            continue
        app.add_api_route(path, endpoint, methods=[method], include_in_schema=False)
