"""OAuth client credentials, bearer tokens, scopes and organization access."""

from __future__ import annotations

import base64

import httpx
from sandbox_support import assert_error, bearer, distribution, param_names, token_for


async def test_token_exchange_with_basic_or_form_credentials(client: httpx.AsyncClient) -> None:
    basic = await client.post(
        "/oauth/token",
        data={"grant_type": "client_credentials"},
        auth=("demo-client", "demo-secret"),
    )
    form = await client.post(
        "/oauth/token",
        data={
            "grant_type": "client_credentials",
            "client_id": "demo-client",
            "client_secret": "demo-secret",
        },
    )
    for response in (basic, form):
        assert response.status_code == 200
        body = response.json()
        assert body["token_type"] == "Bearer"
        assert body["expires_in"] == 3600
        assert "distributions:*" in body["scope"].split()
        assert response.headers["Cache-Control"] == "no-store"
    assert basic.json()["access_token"] != form.json()["access_token"]


async def test_wrong_secret_is_invalid_client_401(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/oauth/token", data={"grant_type": "client_credentials"}, auth=("demo-client", "nope")
    )
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"
    assert "nope" not in response.text


async def test_scope_beyond_the_client_is_invalid_scope_400(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/oauth/token",
        data={"grant_type": "client_credentials", "scope": "distributions:write"},
        auth=("demo-reader", "reader-secret"),
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_scope"


async def test_other_grant_types_are_unsupported(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/oauth/token", data={"grant_type": "password"}, auth=("demo-client", "demo-secret")
    )
    assert response.status_code == 400
    assert response.json()["error"] == "unsupported_grant_type"


async def test_missing_malformed_and_unknown_tokens_are_401(client: httpx.AsyncClient) -> None:
    for headers in (
        {},
        {"Authorization": "Token abc"},
        {"Authorization": "Bearer "},
        bearer("not-a-real-token"),
    ):
        response = await client.get("/v1/vehicles", headers=headers)
        body = assert_error(response, 401, "unauthorized")
        assert body["type"] == "authentication_error"


async def test_token_expires_with_the_sandbox_clock(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    assert (await client.get("/v1/vehicles", headers=writer)).status_code == 200
    await client.post("/_sandbox/clock/advance", json={"seconds": 3601})
    assert_error(await client.get("/v1/vehicles", headers=writer), 401, "unauthorized")


async def test_token_lifetime_is_settable(client: httpx.AsyncClient) -> None:
    settings = await client.put("/_sandbox/settings", json={"token_lifetime_s": 60})
    assert settings.json()["token_lifetime_s"] == 60
    response = await client.post(
        "/oauth/token",
        data={"grant_type": "client_credentials"},
        auth=("demo-client", "demo-secret"),
    )
    assert response.json()["expires_in"] == 60


async def test_reader_cannot_create(client: httpx.AsyncClient, reader: dict[str, str]) -> None:
    assert (await client.get("/v1/distributions", headers=reader)).status_code == 200
    body = assert_error(
        await client.post("/v1/distributions", headers=reader, json=[distribution()]),
        403,
        "forbidden",
    )
    assert body["type"] == "permission_error"


async def test_token_narrowed_to_one_scope_is_refused_elsewhere(client: httpx.AsyncClient) -> None:
    token = await token_for(client, "demo-client", "demo-secret", scope="financial_accounts:read")
    assert (
        await client.get("/v1/financial_accounts/fa_demo1dep", headers=bearer(token))
    ).status_code == 200
    assert_error(await client.get("/v1/entities", headers=bearer(token)), 403, "forbidden")


async def _multi_org_client(client: httpx.AsyncClient) -> str:
    assert (
        await client.post("/_sandbox/organizations", json={"id": "org_second", "name": "Second"})
    ).status_code == 201
    created = await client.post(
        "/_sandbox/clients",
        json={
            "client_id": "multi",
            "client_secret": "multi-secret",
            "scopes": ["vehicles:read", "organizations:read"],
            "organizations": ["org_demo", "org_second"],
        },
    )
    assert created.status_code == 201
    assert "multi-secret" not in created.text
    return await token_for(client, "multi", "multi-secret")


async def test_several_organizations_without_header_is_400(client: httpx.AsyncClient) -> None:
    token = await _multi_org_client(client)
    body = assert_error(
        await client.get("/v1/vehicles", headers=bearer(token)), 400, "parameter_missing"
    )
    assert param_names(body) == {"header.X-Organization-Id": "parameter_missing"}
    demo = await client.get(
        "/v1/vehicles", headers=bearer(token, **{"X-Organization-Id": "org_demo"})
    )
    assert [v["id"] for v in demo.json()["data"]] == ["veh_demo3", "veh_demo2", "veh_demo1"]
    second = await client.get(
        "/v1/vehicles", headers=bearer(token, **{"X-Organization-Id": "org_second"})
    )
    assert second.json()["data"] == []
    orgs = await client.get("/v1/organizations", headers=bearer(token))
    assert sorted(o["id"] for o in orgs.json()["data"]) == ["org_demo", "org_second"]


async def test_organization_the_client_cannot_act_for_is_403(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    await client.post("/_sandbox/organizations", json={"id": "org_other", "name": "Other"})
    assert_error(
        await client.get("/v1/vehicles", headers={**writer, "X-Organization-Id": "org_other"}),
        403,
        "forbidden",
    )
    assert_error(await client.get("/v1/organizations/org_other", headers=writer), 403, "forbidden")
    body = assert_error(
        await client.get("/v1/vehicles", headers={**writer, "X-Organization-Id": "acme"}),
        400,
        "parameter_invalid",
    )
    assert param_names(body) == {"header.X-Organization-Id": "parameter_invalid"}


async def test_references_must_belong_to_the_acting_organization(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    await client.post("/_sandbox/organizations", json={"id": "org_other", "name": "Other"})
    vehicle = (
        await client.post(
            "/_sandbox/vehicles", json={"organization": "org_other", "name": "Elsewhere Fund"}
        )
    ).json()
    foreign = vehicle["vehicle"]["id"]
    body = assert_error(
        await client.post(
            "/v1/distributions", headers=writer, json=[distribution(vehicle=foreign)]
        ),
        400,
        "parameter_invalid",
    )
    assert param_names(body) == {"body.[0].vehicle": "parameter_invalid"}
    fa = vehicle["financial_accounts"][0]["id"]
    assert_error(
        await client.get(f"/v1/financial_accounts/{fa}", headers=writer), 404, "resource_not_found"
    )


async def test_basic_credentials_are_url_decoded(client: httpx.AsyncClient) -> None:
    await client.post(
        "/_sandbox/clients",
        json={"client_id": "a b", "client_secret": "p:w&d", "organizations": ["org_demo"]},
    )
    raw = base64.b64encode(b"a+b:p%3Aw%26d").decode()
    response = await client.post(
        "/oauth/token",
        data={"grant_type": "client_credentials"},
        headers={"Authorization": f"Basic {raw}"},
    )
    assert response.status_code == 200, response.text


async def _limited_client(client: httpx.AsyncClient) -> None:
    """A client of org_demo holding only `distributions:read` and `vehicles:read`."""
    created = await client.post(
        "/_sandbox/clients",
        json={
            "client_id": "limited",
            "client_secret": "limited-secret",
            "scopes": ["vehicles:read", "distributions:read"],
            "organizations": ["org_demo"],
        },
    )
    assert created.status_code == 201, created.text


async def test_omitting_scope_grants_exactly_what_the_client_has(
    client: httpx.AsyncClient,
) -> None:
    await _limited_client(client)
    response = await client.post(
        "/oauth/token",
        data={"grant_type": "client_credentials"},
        auth=("limited", "limited-secret"),
    )
    assert response.status_code == 200
    assert sorted(response.json()["scope"].split()) == ["distributions:read", "vehicles:read"]
    token = bearer(response.json()["access_token"])
    assert (await client.get("/v1/distributions", headers=token)).status_code == 200
    assert_error(await client.get("/v1/entities", headers=token), 403, "forbidden")
    assert_error(
        await client.post("/v1/distributions", headers=token, json=[distribution()]),
        403,
        "forbidden",
    )


async def test_a_scope_the_client_lacks_is_invalid_scope(client: httpx.AsyncClient) -> None:
    await _limited_client(client)
    for scope in ("entities:read", "distributions:write", "distributions:*", "vehicles:read x"):
        response = await client.post(
            "/oauth/token",
            data={"grant_type": "client_credentials", "scope": scope},
            auth=("limited", "limited-secret"),
        )
        assert response.status_code == 400, scope
        assert response.json()["error"] == "invalid_scope"
    narrowed = await token_for(client, "limited", "limited-secret", scope="vehicles:read")
    assert_error(await client.get("/v1/distributions", headers=bearer(narrowed)), 403, "forbidden")
