"""Helpers for sandbox tests: tokens, headers, body builders and error assertions."""

from __future__ import annotations

from typing import Any

import httpx

BASE = "http://sandbox.test"


async def token_for(
    client: httpx.AsyncClient, client_id: str, secret: str, scope: str | None = None
) -> str:
    """Exchange credentials (HTTP Basic) for an access token."""
    data = {"grant_type": "client_credentials"}
    if scope is not None:
        data["scope"] = scope
    response = await client.post("/oauth/token", data=data, auth=(client_id, secret))
    assert response.status_code == 200, response.text
    return str(response.json()["access_token"])


def bearer(token: str, **extra: str) -> dict[str, str]:
    """Authorization header (plus any extra headers)."""
    return {"Authorization": f"Bearer {token}", **extra}


def distribution(
    n_payments: int = 1,
    *,
    vehicle: str = "veh_demo1",
    date: str = "2026-12-15T09:00:00",
    zone: str | None = "America/New_York",
    amount: int = 10_000,
    **extra: Any,
) -> dict[str, Any]:
    """One valid create-distribution element paying demo entities."""
    element: dict[str, Any] = {
        "name": "Q4 2026 distribution",
        "vehicle": vehicle,
        "distribution_date": date,
        "external_reference": "Q4-2026",
        "payments": [
            {"amount": amount, "currency": "USD", "entity": f"ent_demo{i % 5 + 1}"}
            for i in range(n_payments)
        ],
        **extra,
    }
    if zone is not None:
        element["distribution_timezone"] = zone
    return element


def make_client(app: Any) -> httpx.AsyncClient:
    """An httpx client speaking to `app` in-process."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE)


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The response is the error object with `status` and `code`, and its request id matches."""
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["object"] == "error"
    assert body["status"] == status
    assert body["code"] == code, body
    assert body["request_id"] == response.headers["Request-Id"]
    assert "Traceback" not in response.text
    return body


def param_names(body: dict[str, Any]) -> dict[str, str]:
    """`invalid-params` as {name: code}."""
    return {p["name"]: p["code"] for p in body.get("invalid-params", [])}
