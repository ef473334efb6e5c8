"""Control routes, rate limiting and injected faults."""

from __future__ import annotations

import httpx
import pytest
from sandbox_support import assert_error, distribution, make_client

from fundpipe.sandbox import SandboxConfig, SimulatedDisconnect, create_app


async def test_rate_limit_is_per_client_with_retry_after(
    client: httpx.AsyncClient, writer: dict[str, str], reader: dict[str, str]
) -> None:
    settings = await client.put(
        "/_sandbox/settings", json={"rate_limit_requests": 3, "rate_limit_window_s": 30}
    )
    assert settings.json() == {
        "rate_limit_requests": 3,
        "rate_limit_window_s": 30.0,
        "token_lifetime_s": 3600,
    }
    statuses = [(await client.get("/v1/vehicles", headers=writer)).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    limited = await client.get("/v1/vehicles", headers=writer)
    body = assert_error(limited, 429, "rate_limit_exceeded")
    assert body["type"] == "rate_limit_error"
    assert 1 <= int(limited.headers["Retry-After"]) <= 30
    assert (await client.get("/v1/vehicles", headers=reader)).status_code == 200  # another client
    token = await client.post(
        "/oauth/token",
        data={"grant_type": "client_credentials"},
        auth=("demo-client", "demo-secret"),
    )
    assert_error(token, 429, "rate_limit_exceeded")  # the token endpoint counts too
    assert int(token.headers["Retry-After"]) >= 1


async def test_reset_restores_the_seed(client: httpx.AsyncClient, writer: dict[str, str]) -> None:
    await client.post("/v1/distributions", headers=writer, json=[distribution()])
    assert (await client.post("/_sandbox/reset", json={"seed": "empty"})).json()["seed"] == "empty"
    assert_error(
        await client.get("/v1/vehicles", headers=writer), 401, "unauthorized"
    )  # tokens gone too
    token = await client.post(
        "/oauth/token",
        data={"grant_type": "client_credentials"},
        auth=("demo-client", "demo-secret"),
    )
    assert token.status_code == 401
    await client.post("/_sandbox/reset", json={"seed": "demo"})
    token = await client.post(
        "/oauth/token",
        data={"grant_type": "client_credentials"},
        auth=("demo-client", "demo-secret"),
    )
    headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
    assert (await client.get("/v1/distributions", headers=headers)).json()["data"] == []


async def test_control_routes_can_be_disabled() -> None:
    async with make_client(create_app(SandboxConfig(control_routes=False))) as client:
        assert_error(await client.post("/_sandbox/reset", json={}), 404, "resource_not_found")


async def test_injected_statuses_use_the_error_object(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    await client.put("/_sandbox/faults", json={"error_rate": 1.0, "statuses": [502]})
    body = assert_error(await client.get("/v1/vehicles", headers=writer), 502, "bad_gateway")
    assert body["type"] == "api_error"
    assert (await client.get("/_sandbox/clock")).status_code == 200  # control routes never faulted
    await client.put(
        "/_sandbox/faults",
        json={"error_rate": 1.0, "statuses": [500], "path_prefix": "/v1/entities"},
    )
    assert (await client.get("/v1/vehicles", headers=writer)).status_code == 200
    assert_error(await client.get("/v1/entities", headers=writer), 500, "internal_error")


async def test_faults_can_be_scoped_to_one_organization() -> None:
    """`org_id` faults only the requests naming that organization: its neighbour is served."""
    from sandbox_support import bearer, token_for

    async with make_client(create_app(SandboxConfig(demo_orgs=2))) as client:
        writer = bearer(await token_for(client, "demo-client", "demo-secret"))
        put = await client.put(
            "/_sandbox/faults", json={"error_rate": 1.0, "statuses": [503], "org_id": "org_demob"}
        )
        assert put.json()["org_id"] == "org_demob"
        demob = {**writer, "X-Organization-Id": "org_demob"}
        demo = {**writer, "X-Organization-Id": "org_demo"}
        assert_error(await client.get("/v1/vehicles", headers=demob), 503, "internal_error")
        assert (await client.get("/v1/vehicles", headers=demo)).status_code == 200
        await client.delete("/_sandbox/faults")
        assert (await client.get("/v1/vehicles", headers=demob)).status_code == 200


async def test_drop_after_commit_creates_then_raises_transport_error(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    await client.put("/_sandbox/faults", json={"drop_after_commit_rate": 1.0})
    headers = {**writer, "Idempotency-Key": "dropped-once"}
    with pytest.raises(httpx.TransportError) as caught:
        await client.post("/v1/distributions", headers=headers, json=[distribution()])
    assert isinstance(caught.value, SimulatedDisconnect)
    await client.delete("/_sandbox/faults")
    replay = await client.post("/v1/distributions", headers=headers, json=[distribution()])
    assert replay.status_code == 201
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert len((await client.get("/v1/distributions", headers=writer)).json()["data"]) == 1


async def test_fault_settings_are_validated(client: httpx.AsyncClient) -> None:
    response = await client.put(
        "/_sandbox/faults", json={"error_rate": 2, "statuses": [418], "colour": 1}
    )
    body = assert_error(response, 400, "parameter_unknown")
    assert {p["name"] for p in body["invalid-params"]} == {
        "body.colour",
        "body.error_rate",
        "body.statuses",
    }


async def test_patch_payment_and_account_behind_the_back(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    dist = (await client.post("/v1/distributions", headers=writer, json=[distribution()])).json()[
        "data"
    ][0]
    dpmt = dist["payments"]["data"][0]["id"]
    patched = await client.patch(
        f"/_sandbox/distribution_payments/{dpmt}", json={"amount": 123, "status": "failed"}
    )
    assert patched.status_code == 200
    assert (patched.json()["amount"], patched.json()["status"]) == (123, "failed")
    account = await client.patch(
        "/_sandbox/financial_accounts/fa_demo1dep",
        json={"available": 5, "total_end_of_last_month": 7},
    )
    assert account.json()["balance"]["available"] == 5
    assert account.json()["balance"]["total_end_of_last_month"] == 7
    assert (
        await client.patch("/_sandbox/financial_accounts/fa_ghost", json={"total": 1})
    ).status_code == 404
    assert (
        await client.patch(f"/_sandbox/distribution_payments/{dpmt}", json={"status": "lost"})
    ).status_code == 400


async def test_control_vehicle_and_organization_creation(client: httpx.AsyncClient) -> None:
    org = await client.post("/_sandbox/organizations", json={"name": "Generated Org"})
    assert org.status_code == 201
    assert org.json()["id"].startswith("org_")
    vehicle = await client.post(
        "/_sandbox/vehicles",
        json={
            "organization": org.json()["id"],
            "name": "New Fund",
            "depository_cents": 123_45,
            "brokerage_cents": 0,
        },
    )
    assert vehicle.status_code == 201
    accounts = vehicle.json()["financial_accounts"]
    assert [a["type"] for a in accounts] == ["depository", "brokerage"]
    assert accounts[0]["balance"]["total"] == 123_45
    assert (
        await client.post("/_sandbox/vehicles", json={"organization": "org_ghost", "name": "X"})
    ).status_code == 404


async def test_request_counts_show_what_a_client_asked_for(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    await client.put(
        "/_sandbox/settings", json={"rate_limit_requests": 3, "rate_limit_window_s": 30}
    )
    await client.delete("/_sandbox/requests")  # the token request of `writer` is forgotten
    for _ in range(2):
        await client.get("/v1/distributions", headers=writer)
    await client.get("/v1/distributions/dst_missing", headers=writer)
    await client.get("/v1/financial_accounts", headers=writer)  # over the limit: 429, counted
    counts = (await client.get("/_sandbox/requests")).json()
    assert counts == {
        "total": 4,
        "by_operation": {"GET /v1/distributions": 2, "GET /v1/distributions/{id}": 1,
                         "GET /v1/financial_accounts": 1},
        "by_status": {"200": 2, "404": 1, "429": 1},
    }  # fmt: skip
    await client.post("/_sandbox/reset", json={"seed": "demo"})
    assert (await client.get("/_sandbox/requests")).json()["total"] == 0
