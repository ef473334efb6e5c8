"""Strict-interface mode: only the documented surface, without the fields our decisions add."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sandbox_support import assert_error, bearer, distribution, make_client, token_for

from fundpipe.sandbox import SandboxConfig, create_app

#: The routes DESIGN.md marks ours (and the distribution read it does not list), with real ids.
OUR_ROUTES = (
    ("GET", "/v1/organizations"),
    ("GET", "/v1/organizations/org_demo"),
    ("GET", "/v1/vehicles"),
    ("GET", "/v1/vehicles/veh_demo1"),
    ("GET", "/v1/financial_accounts"),
    ("GET", "/v1/financial_accounts?ids=fa_demo1dep"),
    ("POST", "/v1/entities/ent_demo1/contacts"),
    ("GET", "/v1/payment_instructions/pmi_demo1"),
)


@pytest.fixture
async def strict() -> AsyncIterator[httpx.AsyncClient]:
    """An in-process client of a fresh demo sandbox in strict-interface mode."""
    async with make_client(create_app(SandboxConfig(strict_interface=True))) as c:
        yield c


@pytest.fixture
async def strict_writer(strict: httpx.AsyncClient) -> dict[str, str]:
    """Headers with a demo-client token of the strict sandbox."""
    return bearer(await token_for(strict, "demo-client", "demo-secret"))


async def _created_distribution(client: httpx.AsyncClient, headers: dict[str, str]) -> Any:
    element = distribution(2)
    element["payments"][0]["notifications"] = [{"contact": "cnt_demo1"}]
    response = await client.post("/v1/distributions", headers=headers, json=[element])
    assert response.status_code == 201, response.text
    return response.json()["data"][0]


@pytest.mark.parametrize(("method", "path"), OUR_ROUTES)
async def test_our_routes_answer_404_in_the_error_object(
    strict: httpx.AsyncClient, strict_writer: dict[str, str], method: str, path: str
) -> None:
    body = [{"id": "cnt_demo2"}] if method == "POST" else None
    response = await strict.request(method, path, headers=strict_writer, json=body)
    error = assert_error(response, 404, "resource_not_found")
    assert error["type"] == "not_found_error"


async def test_our_routes_are_served_outside_strict_mode(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    for method, path in OUR_ROUTES:
        body = [{"id": "cnt_demo2"}] if method == "POST" else None
        response = await client.request(method, path, headers=writer, json=body)
        assert response.status_code in (200, 201), (path, response.text)


async def test_the_undocumented_distribution_read_is_not_served(
    strict: httpx.AsyncClient, strict_writer: dict[str, str]
) -> None:
    created = await _created_distribution(strict, strict_writer)
    response = await strict.get(f"/v1/distributions/{created['id']}", headers=strict_writer)
    assert_error(response, 404, "resource_not_found")


async def test_documented_operations_are_served(
    strict: httpx.AsyncClient, strict_writer: dict[str, str]
) -> None:
    created = await _created_distribution(strict, strict_writer)
    payment = created["payments"]["data"][0]
    reads = (
        "/v1/financial_accounts/fa_demo1dep",
        "/v1/vehicles/veh_demo1/financial_accounts",
        "/v1/distributions",
        f"/v1/distributions/{created['id']}/payments",
        f"/v1/distribution_payments/{payment['id']}/notifications",
        "/v1/entities",
        "/v1/entities/ent_demo1",
        "/v1/entities/ent_demo1/payment_instructions",
        "/v1/contacts",
        "/v1/contacts/cnt_demo1",
        "/payment_instructions/pmi_demo1",
    )
    for path in reads:
        response = await strict.get(path, headers=strict_writer)
        assert response.status_code == 200, (path, response.text)
    instructions = await strict.post(
        "/v1/payment_instructions",
        headers=strict_writer,
        json=[{"entity": "ent_demo2", "payment_instructions": [{"type": "ach"}]}],
    )
    assert instructions.status_code == 201, instructions.text


async def test_records_leave_out_the_fields_only_our_decisions_add(
    strict: httpx.AsyncClient, strict_writer: dict[str, str]
) -> None:
    contact = (await strict.get("/v1/contacts/cnt_demo1", headers=strict_writer)).json()
    assert set(contact) == {"object", "livemode", "id", "name", "email", "external_references"}
    entity = (await strict.get("/v1/entities/ent_demo1", headers=strict_writer)).json()
    assert set(entity) == {
        "object",
        "livemode",
        "id",
        "name",
        "type",
        "external_type",
        "external_references",
        "payment_instructions",
        "sender_payment_instructions_url",
        "recipient_payment_instructions_url",
    }
    listed = (await strict.get("/v1/entities", headers=strict_writer)).json()["data"][0]
    assert "created_at" not in listed
    assert "sender_payment_instructions_url" not in listed
    instruction = (
        await strict.get("/payment_instructions/pmi_demo1", headers=strict_writer)
    ).json()
    assert instruction == {"object": "payment_instructions", "livemode": False, "id": "pmi_demo1"}
    payment = (await _created_distribution(strict, strict_writer))["payments"]["data"][0]
    assert set(payment) == {
        "object",
        "livemode",
        "id",
        "amount",
        "currency",
        "status",
        "recipient_confirmed_at",
        "verified_at",
        "entity",
        "payment_instructions",
        "notifications",
    }


async def test_duplicate_entity_reference_is_409_with_conflicts_with(
    strict: httpx.AsyncClient, strict_writer: dict[str, str]
) -> None:
    response = await strict.post(
        "/v1/entities",
        headers=strict_writer,
        json=[
            {"name": "New Holder", "type": "llc", "external_reference": "NEW-1"},
            {"name": "Avery Again", "type": "trust", "external_reference": "DEMO-E1"},
        ],
    )
    error = assert_error(response, 409, "conflict")
    assert error["type"] == "conflict_error"
    assert error["invalid-params"] == [
        {
            "code": "conflict",
            "name": "body.[1].external_reference",
            "reason": "an existing entity already has this reference",
            "value": "DEMO-E1",
            "conflicts_with": "ent_demo1",
        }
    ]
    # Atomic: the valid element was not created either.
    entities = (await strict.get("/v1/entities?limit=100", headers=strict_writer)).json()["data"]
    assert "NEW-1" not in {r for e in entities for r in e["external_references"]}


async def test_duplicate_contact_reference_is_409_with_conflicts_with(
    strict: httpx.AsyncClient, strict_writer: dict[str, str]
) -> None:
    response = await strict.post(
        "/v1/contacts",
        headers=strict_writer,
        json=[{"name": "Bea", "email": "bea@example.com", "external_reference": "DEMO-C2"}],
    )
    error = assert_error(response, 409, "conflict")
    assert [p["conflicts_with"] for p in error["invalid-params"]] == ["cnt_demo2"]


async def test_a_reference_repeated_within_a_batch_is_taken(
    strict: httpx.AsyncClient, strict_writer: dict[str, str]
) -> None:
    # the public description allows it and the interface says nothing (issue 34, item 4)
    response = await strict.post(
        "/v1/contacts",
        headers=strict_writer,
        json=[
            {"name": "One", "email": "one@example.com", "external_reference": "SAME"},
            {"name": "Two", "email": "two@example.com", "external_reference": "SAME"},
        ],
    )
    assert response.status_code == 201, response.text
    assert [c["external_references"] for c in response.json()["data"]] == [["SAME"], ["SAME"]]
    again = await strict.post(
        "/v1/contacts",
        headers=strict_writer,
        json=[{"name": "Three", "email": "three@example.com", "external_reference": "SAME"}],
    )
    error = assert_error(again, 409, "conflict")  # an existing contact has it now
    assert len(error["invalid-params"]) == 2  # both holders are named


async def test_outside_strict_mode_references_may_repeat(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    response = await client.post(
        "/v1/entities",
        headers=writer,
        json=[{"name": "Avery Again", "type": "trust", "external_reference": "DEMO-E1"}],
    )
    assert response.status_code == 201, response.text


async def test_token_endpoint_takes_a_json_body(strict: httpx.AsyncClient) -> None:
    response = await strict.post(
        "/oauth/token",
        json={
            "grant_type": "client_credentials",
            "client_id": "demo-reader",
            "client_secret": "reader-secret",
        },
    )
    assert response.status_code == 200, response.text
    assert response.json()["token_type"] == "Bearer"
    wrong = await strict.post(
        "/oauth/token",
        json={"grant_type": "client_credentials", "client_id": "demo-reader", "client_secret": "x"},
    )
    assert wrong.status_code == 401
    assert wrong.json()["error"] == "invalid_client"


async def test_outside_strict_mode_the_token_body_is_a_form(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/oauth/token",
        json={
            "grant_type": "client_credentials",
            "client_id": "demo-reader",
            "client_secret": "reader-secret",
        },
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
