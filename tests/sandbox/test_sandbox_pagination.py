"""Cursor pagination: newest first, both directions, stable under inserts, nested lists."""

from __future__ import annotations

from typing import Any

import httpx
from sandbox_support import assert_error, distribution, param_names


async def _create_entities(
    client: httpx.AsyncClient, headers: dict[str, str], count: int, tag: str
) -> list[str]:
    body = [
        {"name": f"{tag} {i}", "type": "individual", "external_reference": f"{tag}-{i}"}
        for i in range(count)
    ]
    response = await client.post("/v1/entities", headers=headers, json=body)
    assert response.status_code == 201
    return [e["id"] for e in response.json()["data"]]


async def _page(client: httpx.AsyncClient, headers: dict[str, str], url: str) -> dict[str, Any]:
    response = await client.get(url, headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_walk_forward_then_back_gives_the_same_pages_despite_inserts(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    created = await _create_entities(client, writer, 20, "Investor")  # plus 5 demo entities = 25
    forward: list[list[str]] = []
    page = await _page(client, writer, "/v1/entities?limit=10")
    assert page["previous_page_url"] is None
    assert page["url"] == "/v1/entities"
    while True:
        forward.append([e["id"] for e in page["data"]])
        assert page["has_more"] == (page["next_page_url"] is not None)
        await _create_entities(client, writer, 3, "Late")  # inserted between requests
        if page["next_page_url"] is None:
            break
        assert page["next_page_url"].startswith("/v1/entities?limit=10&page=page_")
        page = await _page(client, writer, page["next_page_url"])
    assert [len(p) for p in forward] == [10, 10, 5]
    assert forward[0][:10] == list(reversed(created))[:10]  # newest first
    seen = [i for p in forward for i in p]
    assert len(set(seen)) == 25  # no duplicates, none skipped

    backward = [forward[-1]]
    while page["previous_page_url"] is not None:
        page = await _page(client, writer, page["previous_page_url"])
        backward.append([e["id"] for e in page["data"]])
        if len(backward) == len(forward):
            break
    assert list(reversed(backward)) == forward
    # Before the first page walked, the rows inserted meanwhile are reachable.
    newer = await _page(client, writer, page["previous_page_url"])
    assert len(newer["data"]) == 9
    assert all(e["name"].startswith("Late") for e in newer["data"])
    assert newer["previous_page_url"] is None


async def test_default_limit_is_10_and_max_is_100(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    await client.post(
        "/_sandbox/bulk_financial_accounts",
        json={"organization": "org_demo", "vehicles": 3, "accounts_per_vehicle": 50},
    )
    assert len((await _page(client, writer, "/v1/financial_accounts"))["data"]) == 10
    full = await _page(client, writer, "/v1/financial_accounts?limit=100")
    assert len(full["data"]) == 100
    last = await _page(client, writer, full["next_page_url"])
    assert len(last["data"]) == 56  # 150 bulk + 6 demo
    assert last["next_page_url"] is None


async def test_ids_filter_on_organization_accounts(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    page = await _page(
        client,
        writer,
        "/v1/financial_accounts?ids=fa_demo1dep&ids=fa_demo3brk&ids=fa_missing&limit=1",
    )
    assert [a["id"] for a in page["data"]] == ["fa_demo3brk"]
    assert "ids=fa_demo1dep" in page["next_page_url"]
    second = await _page(client, writer, page["next_page_url"])
    assert [a["id"] for a in second["data"]] == ["fa_demo1dep"]
    assert second["next_page_url"] is None
    body = assert_error(
        await client.get("/v1/financial_accounts?ids=acct9", headers=writer),
        400,
        "parameter_invalid",
    )
    assert param_names(body) == {"query.ids": "parameter_invalid"}
    too_many = "&".join(f"ids=fa_x{i}" for i in range(101))
    assert_error(
        await client.get(f"/v1/financial_accounts?{too_many}", headers=writer),
        400,
        "parameter_invalid",
    )


async def test_vehicle_account_list_urls(client: httpx.AsyncClient, writer: dict[str, str]) -> None:
    page = await _page(client, writer, "/v1/vehicles/veh_demo2/financial_accounts?limit=1")
    assert page["url"] == "/v1/vehicles/veh_demo2/financial_accounts"
    assert page["next_page_url"].startswith(
        "/v1/vehicles/veh_demo2/financial_accounts?limit=1&page="
    )
    assert [a["type"] for a in page["data"]] == ["brokerage"]
    assert_error(
        await client.get("/v1/vehicles/veh_nope/financial_accounts", headers=writer),
        404,
        "resource_not_found",
    )


async def test_nested_payments_page_through_their_own_urls(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    created = await client.post("/v1/distributions", headers=writer, json=[distribution(250)])
    dist = created.json()["data"][0]
    nested = dist["payments"]
    assert len(nested["data"]) == 100
    assert nested["url"] == f"/v1/distributions/{dist['id']}/payments"
    ids = [p["id"] for p in nested["data"]]
    url = nested["next_page_url"]
    while url:
        page = await _page(client, writer, url)
        ids += [p["id"] for p in page["data"]]
        url = page["next_page_url"]
    assert len(ids) == len(set(ids)) == 250
    listed = await _page(client, writer, f"/v1/distributions/{dist['id']}/payments?limit=100")
    assert [p["id"] for p in listed["data"]] == ids[:100]  # request order
    payment = listed["data"][0]
    assert (
        payment["notifications"]["url"]
        == f"/v1/distribution_payments/{payment['id']}/notifications"
    )


async def test_cursor_combinations_are_rejected(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    page = await _page(client, writer, "/v1/entities?limit=2")
    cursor = page["next_page_url"].split("page=")[1]
    body = assert_error(
        await client.get(f"/v1/entities?page={cursor}&page_before={cursor}", headers=writer),
        400,
        "parameter_invalid",
    )
    assert "query.page_before" in param_names(body)
