"""Public-forms mode: the public spec's bodies and records, alone or with strict interface."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from sandbox_support import assert_error, bearer, distribution, make_client, token_for

from fundpipe.sandbox import SandboxConfig, create_app


@pytest.fixture
async def public() -> AsyncIterator[httpx.AsyncClient]:
    """An in-process client of a fresh demo sandbox serving the public spec's forms."""
    async with make_client(create_app(SandboxConfig(public_forms=True))) as c:
        yield c


@pytest.fixture
async def public_writer(public: httpx.AsyncClient) -> dict[str, str]:
    """Headers with a demo-client token of the public-forms sandbox."""
    return bearer(await token_for(public, "demo-client", "demo-secret"))


async def test_entities_take_and_show_external_references(
    public: httpx.AsyncClient, public_writer: dict[str, str]
) -> None:
    response = await public.post(
        "/v1/entities",
        headers=public_writer,
        json=[
            {
                "name": "Ivy Partners LP",
                "type": "partnership",
                "external_references": ["I-1", "CRM-7"],
            }
        ],
    )
    assert response.status_code == 201, response.text
    created = response.json()["data"][0]
    assert created["external_references"] == ["I-1", "CRM-7"]
    assert "external_reference" not in created
    again = (await public.get(f"/v1/entities/{created['id']}", headers=public_writer)).json()
    assert again["external_references"] == ["I-1", "CRM-7"]
    seeded = (await public.get("/v1/entities/ent_demo1", headers=public_writer)).json()
    assert seeded["external_references"] == ["DEMO-E1"]


async def test_contacts_take_and_show_external_references(
    public: httpx.AsyncClient, public_writer: dict[str, str]
) -> None:
    response = await public.post(
        "/v1/contacts",
        headers=public_writer,
        json=[{"name": "Ivy", "email": "ivy@example.com", "external_references": ["C-9"]}],
    )
    assert response.status_code == 201, response.text
    created = response.json()["data"][0]
    assert created["external_references"] == ["C-9"]
    assert "external_reference" not in created
    listed = (await public.get("/v1/contacts", headers=public_writer)).json()["data"]
    assert listed[0]["external_references"] == ["C-9"]


@pytest.mark.parametrize("path", ["/v1/entities", "/v1/contacts"])
async def test_the_single_reference_field_is_parameter_unknown(
    public: httpx.AsyncClient, public_writer: dict[str, str], path: str
) -> None:
    element = (
        {"name": "Ivy Partners LP", "type": "partnership"}
        if path == "/v1/entities"
        else {"name": "Ivy", "email": "ivy@example.com"}
    )
    response = await public.post(
        path, headers=public_writer, json=[{**element, "external_reference": "I-1"}]
    )
    error = assert_error(response, 400, "parameter_unknown")
    assert [(p["name"], p["code"]) for p in error["invalid-params"]] == [
        ("body.[0].external_reference", "parameter_unknown")
    ]


async def test_entity_payment_instructions_are_a_list_of_objects(
    public: httpx.AsyncClient, public_writer: dict[str, str]
) -> None:
    entity = (await public.get("/v1/entities/ent_demo1", headers=public_writer)).json()
    nested = entity["payment_instructions"]
    assert nested["object"] == "list"
    assert nested["data"] == [
        {"object": "payment_instructions", "livemode": False, "id": "pmi_demo1"}
    ]
    assert nested["url"] == "/v1/entities/ent_demo1/payment_instructions"
    assert nested["next_page_url"] is None


async def test_unset_fields_and_our_payment_fields_are_left_out(
    public: httpx.AsyncClient, public_writer: dict[str, str]
) -> None:
    response = await public.post("/v1/distributions", headers=public_writer, json=[distribution(1)])
    assert response.status_code == 201, response.text
    created = response.json()["data"][0]
    for unset in ("published_at", "approved_at", "executed_at", "cancelled_at"):
        assert unset not in created
    payment = created["payments"]["data"][0]
    assert "distribution_date_override" not in payment
    assert "recipient_confirmed_at" not in payment
    for ours in ("distribution", "disbursed_at", "failed_at", "failure_reason"):
        assert ours not in payment
    assert payment["status"] == "staged"
    account = (await public.get("/v1/financial_accounts/fa_demo1dep", headers=public_writer)).json()
    assert "bank_name" in account  # required (nullable) by the interface: never left out


async def test_default_mode_renders_unset_fields_as_null_but_no_missing_override(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    created = (
        await client.post("/v1/distributions", headers=writer, json=[distribution(1)])
    ).json()["data"][0]
    assert created["published_at"] is None
    # the public type of the override is a string, never null: left out when there is none
    assert "distribution_date_override" not in created["payments"]["data"][0]
    assert created["payments"]["data"][0]["distribution"] == created["id"]


@pytest.mark.parametrize(
    ("element", "name"),
    [
        (distribution(vehicle="veh_nowhere"), "body.[0].vehicle"),
        (
            {
                **distribution(),
                "payments": [{"amount": 1, "currency": "USD", "entity": "ent_nobody"}],
            },
            "body.[0].payments.[0].entity",
        ),
    ],
)
async def test_unknown_vehicle_or_entity_is_404(
    public: httpx.AsyncClient, public_writer: dict[str, str], element: dict[str, object], name: str
) -> None:
    response = await public.post("/v1/distributions", headers=public_writer, json=[element])
    error = assert_error(response, 404, "resource_not_found")
    assert error["type"] == "not_found_error"
    assert [p["name"] for p in error["invalid-params"]] == [name]


async def test_unknown_vehicle_with_other_problems_stays_400(
    public: httpx.AsyncClient, public_writer: dict[str, str]
) -> None:
    response = await public.post(
        "/v1/distributions",
        headers=public_writer,
        json=[distribution(vehicle="veh_nowhere", amount=-5)],
    )
    assert_error(response, 400, "parameter_invalid")


async def test_default_mode_answers_unknown_vehicle_with_400(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    response = await client.post(
        "/v1/distributions", headers=writer, json=[distribution(vehicle="veh_nowhere")]
    )
    assert_error(response, 400, "parameter_invalid")


async def test_strict_and_public_combined_conflict_names_the_array_element() -> None:
    app = create_app(SandboxConfig(strict_interface=True, public_forms=True))
    async with make_client(app) as client:
        headers = bearer(await token_for(client, "demo-client", "demo-secret"))
        response = await client.post(
            "/v1/entities",
            headers=headers,
            json=[{"name": "Avery", "type": "trust", "external_references": ["NEW", "DEMO-E1"]}],
        )
        error = assert_error(response, 409, "conflict")
        assert [(p["name"], p["conflicts_with"]) for p in error["invalid-params"]] == [
            ("body.[0].external_references.[1]", "ent_demo1")
        ]
        created = await client.post(
            "/v1/entities",
            headers=headers,
            json=[{"name": "Avery", "type": "trust", "external_references": ["NEW", "CRM-1"]}],
        )
        assert created.status_code == 201
        again = await client.post(
            "/v1/entities",
            headers=headers,
            json=[{"name": "Avery", "type": "trust", "external_references": ["CRM-1"]}],
        )
        error = assert_error(again, 409, "conflict")
        assert error["invalid-params"][0]["conflicts_with"] == created.json()["data"][0]["id"]
        contact = (await client.get("/v1/contacts/cnt_demo1", headers=headers)).json()
        assert set(contact) == {"object", "livemode", "id", "name", "email", "external_references"}
