"""Legacy pagination: lists in the older `has_more`-only form, by config or control route."""

from __future__ import annotations

from typing import Any

import httpx
from sandbox_support import bearer, distribution, make_client, token_for

from fundpipe.sandbox import SandboxConfig, create_app


def _is_legacy(envelope: dict[str, Any]) -> bool:
    return "next_page_url" not in envelope and "previous_page_url" not in envelope


async def test_configured_legacy_lists_have_has_more_without_page_urls() -> None:
    async with make_client(create_app(SandboxConfig(legacy_pagination=True))) as client:
        headers = bearer(await token_for(client, "demo-reader", "reader-secret"))
        page = (await client.get("/v1/entities?limit=2", headers=headers)).json()
        assert set(page) == {"object", "data", "has_more", "url"}
        assert page["has_more"] is True
        assert page["url"] == "/v1/entities"
        assert len(page["data"]) == 2
        last = (await client.get("/v1/entities?limit=100", headers=headers)).json()
        assert last["has_more"] is False
        assert _is_legacy(last)


async def test_control_route_switches_legacy_pagination_on_and_off(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    current = (await client.get("/v1/contacts?limit=2", headers=writer)).json()
    assert current["next_page_url"] is not None
    switched = await client.put("/_sandbox/settings", json={"legacy_pagination": True})
    assert switched.json()["legacy_pagination"] is True
    legacy = (await client.get("/v1/contacts?limit=2", headers=writer)).json()
    assert legacy["has_more"] is True
    assert _is_legacy(legacy)
    created = await client.post("/v1/distributions", headers=writer, json=[distribution(2)])
    assert _is_legacy(created.json())
    assert _is_legacy(created.json()["data"][0]["payments"])
    back = await client.put("/_sandbox/settings", json={"legacy_pagination": False})
    assert "legacy_pagination" not in back.json()
    assert (await client.get("/v1/contacts?limit=2", headers=writer)).json()["next_page_url"]


async def test_legacy_pagination_must_be_a_boolean(client: httpx.AsyncClient) -> None:
    response = await client.put("/_sandbox/settings", json={"legacy_pagination": "yes"})
    assert response.status_code == 400


async def test_reset_restores_the_configured_pagination(client: httpx.AsyncClient) -> None:
    await client.put("/_sandbox/settings", json={"legacy_pagination": True})
    await client.post("/_sandbox/reset", json={})
    assert "legacy_pagination" not in (await client.get("/_sandbox/settings")).json()
