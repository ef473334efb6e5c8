"""Under `--strict-interface --public-forms` the sandbox is no stricter than the public
description where the interface is silent (issue 24, items 4–9), and `--reject-unknown-fields`
refuses what the public description does not allow, in the public error form."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sandbox_support import assert_error, bearer, distribution, make_client, token_for

from fundpipe.sandbox import SandboxConfig, create_app


async def _client(**config: Any) -> tuple[httpx.AsyncClient, dict[str, str]]:
    client = make_client(create_app(SandboxConfig(**config)))
    token = await token_for(client, "demo-client", "demo-secret")
    return client, bearer(token, **{"X-Organization-Id": "org_demo"})


@pytest.fixture
async def public() -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, str]]]:
    client, headers = await _client(strict_interface=True, public_forms=True)
    yield client, headers
    await client.aclose()


@pytest.fixture
async def rehearsal() -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, str]]]:
    client, headers = await _client(
        strict_interface=True, public_forms=True, reject_unknown_fields=True
    )
    yield client, headers
    await client.aclose()


async def test_item4_a_whole_number_written_with_a_decimal_point_is_an_amount(public):
    client, headers = public
    response = await client.post(
        "/v1/distributions", headers=headers, json=[distribution(amount=1000.0)]
    )
    assert response.status_code == 201, response.text
    assert response.json()["data"][0]["payments"]["data"][0]["amount"] == 1000
    half = await client.post("/v1/distributions", headers=headers, json=[distribution(amount=10.5)])
    assert_error(half, 400, "parameter_invalid_integer")  # a fraction of a cent still is not


@pytest.mark.parametrize("key", ["k" * 300, "key with spaces"])
async def test_item5_any_idempotency_key_string_is_taken(public, key):
    client, headers = public
    body = [{"name": "Key Test", "type": "llc"}]
    first = await client.post(
        "/v1/entities", headers={**headers, "Idempotency-Key": key}, json=body
    )
    assert first.status_code == 201, first.text
    again = await client.post(
        "/v1/entities", headers={**headers, "Idempotency-Key": key}, json=body
    )
    assert again.headers.get("idempotent-replayed") == "true"
    assert again.json()["data"][0]["id"] == first.json()["data"][0]["id"]


async def test_item6_empty_instruction_list_and_empty_references_are_taken(public):
    client, headers = public
    empty = await client.post(
        "/v1/payment_instructions",
        headers=headers,
        json=[{"entity": "ent_demo2", "payment_instructions": []}],
    )
    assert empty.status_code == 201, empty.text
    entity = await client.post(
        "/v1/entities",
        headers=headers,
        json=[{"name": "Blank Ref", "type": "llc", "external_references": ["", "R-1"]}],
    )
    assert entity.status_code == 201, entity.text
    assert entity.json()["data"][0]["external_references"] == ["", "R-1"]


@pytest.mark.parametrize("path", ["/v1/entities", "/v1/contacts"])
async def test_item6_null_external_references_are_refused(public, path):
    client, headers = public
    element: dict[str, Any] = (
        {"name": "Null Refs", "type": "llc"}
        if path == "/v1/entities"
        else {"name": "Null Refs", "email": "null.refs@example.com"}
    )
    response = await client.post(
        path, headers=headers, json=[{**element, "external_references": None}]
    )
    body = assert_error(response, 400, "parameter_invalid")
    assert body["invalid-params"][0]["name"] == "body.[0].external_references"


async def test_item7_created_instructions_nest_objects_like_the_entity_read(public):
    client, headers = public
    response = await client.post(
        "/v1/payment_instructions",
        headers=headers,
        json=[{"entity": "ent_demo3", "payment_instructions": [{"type": "ach"}]}],
    )
    assert response.status_code == 201, response.text
    [pmi] = response.json()["data"][0]["payment_instructions"]["data"]
    assert set(pmi) == {"object", "livemode", "id"}
    assert pmi["object"] == "payment_instructions"
    assert pmi["id"].startswith("pmi_")
    entity = (await client.get("/v1/entities/ent_demo3", headers=headers)).json()
    assert pmi in entity["payment_instructions"]["data"]


async def test_item9_a_payment_without_an_override_leaves_it_out(public):
    client, headers = public
    response = await client.post("/v1/distributions", headers=headers, json=[distribution()])
    assert "distribution_date_override" not in response.json()["data"][0]["payments"]["data"][0]


async def test_default_form_keeps_design_choices():
    client, headers = await _client()
    try:
        amount = await client.post(
            "/v1/distributions", headers=headers, json=[distribution(amount=1000.0)]
        )
        assert_error(amount, 400, "parameter_invalid_integer")
        key = await client.post(
            "/v1/entities",
            headers={**headers, "Idempotency-Key": "k" * 300},
            json=[{"name": "Key Test", "type": "llc"}],
        )
        assert_error(key, 400, "parameter_invalid")
    finally:
        await client.aclose()


async def test_rehearsal_refuses_instruction_references_in_the_public_error_form(rehearsal):
    client, headers = rehearsal
    response = await client.post(
        "/v1/payment_instructions",
        headers=headers,
        json=[
            {
                "entity": "ent_demo2",
                "payment_instructions": [{"type": "ach", "external_reference": "NEW-P1"}],
            }
        ],
    )
    body = assert_error(response, 400, "parameter_unknown")
    assert body["param"] == "body.[0].payment_instructions.[0].external_reference"
    assert "invalid-params" not in body
    accepted = await client.post(
        "/v1/payment_instructions",
        headers=headers,
        json=[{"entity": "ent_demo2", "payment_instructions": [{"type": "ach"}]}],
    )
    assert accepted.status_code == 201, accepted.text


async def test_rehearsal_refuses_the_single_entity_reference_in_the_public_error_form(rehearsal):
    client, headers = rehearsal
    response = await client.post(
        "/v1/entities",
        headers=headers,
        json=[{"name": "Acme", "type": "llc", "external_reference": "INV-1"}],
    )
    body = assert_error(response, 400, "parameter_unknown")
    assert body["param"] == "body.[0].external_reference"
    assert "invalid-params" not in body


async def test_item3_public_entity_records_carry_no_external_type(public):
    client, headers = public
    demo = (await client.get("/v1/entities/ent_demo1", headers=headers)).json()
    assert "external_type" not in demo  # the seed gives it one; the public Entity has none
    listed = (await client.get("/v1/entities", headers=headers)).json()["data"]
    assert all("external_type" not in e for e in listed)


async def test_rehearsal_refuses_an_entity_external_type(rehearsal):
    client, headers = rehearsal
    response = await client.post(
        "/v1/entities",
        headers=headers,
        json=[{"name": "Acme", "type": "llc", "external_type": "Family Trust"}],
    )
    body = assert_error(response, 400, "parameter_unknown")
    assert body["param"] == "body.[0].external_type"


@pytest.mark.parametrize("path", ["/v1/entities", "/v1/contacts"])
async def test_item4_a_reference_repeated_in_a_batch_or_a_list_is_taken(public, path):
    client, headers = public

    def element(n: int) -> dict[str, Any]:
        if path == "/v1/entities":
            return {"name": f"Twin {n}", "type": "llc"}
        return {"name": f"Twin {n}", "email": f"twin{n}@example.com"}

    response = await client.post(
        path,
        headers=headers,
        json=[
            {**element(1), "external_references": ["TWIN", "TWIN"]},
            {**element(2), "external_references": ["TWIN"]},
        ],
    )
    assert response.status_code == 201, response.text
    assert [r["external_references"] for r in response.json()["data"]] == [
        ["TWIN", "TWIN"],
        ["TWIN"],
    ]


async def test_item2_the_default_form_agrees_with_the_public_records():
    client, headers = await _client()
    try:
        entity = (await client.get("/v1/entities/ent_demo1", headers=headers)).json()
        assert entity["external_references"] == ["DEMO-E1"]
        assert "external_reference" not in entity
        contact = (await client.get("/v1/contacts/cnt_demo1", headers=headers)).json()
        assert isinstance(contact["external_references"], list)
        assert "external_reference" not in contact
        made = await client.post(
            "/v1/payment_instructions",
            headers=headers,
            json=[{"entity": "ent_demo3", "payment_instructions": [{"type": "ach"}]}],
        )
        [pmi] = made.json()["data"][0]["payment_instructions"]["data"]
        assert set(pmi) == {"object", "livemode", "id"}
        payment = (
            await client.post("/v1/distributions", headers=headers, json=[distribution()])
        ).json()["data"][0]["payments"]["data"][0]
        assert "distribution_date_override" not in payment
        array = await client.post(
            "/v1/contacts",
            headers=headers,
            json=[{"name": "Arr", "email": "arr@example.com", "external_references": ["A-1"]}],
        )
        assert array.status_code == 201, array.text  # the public array form is taken too
        assert array.json()["data"][0]["external_references"] == ["A-1"]
    finally:
        await client.aclose()


ADDRESS = {"street1": "12 Quai du Mont-Blanc", "city": "Geneva", "country_code": "CH"}
LINES = {
    "originator_to_beneficiary_instructions_line1": "Q4 distribution",
    "originator_to_beneficiary_instructions_line2": "Alpine fund",
    "originator_to_beneficiary_instructions_line3": "Ref 7",
}
PUBLIC_WIRES = [
    {
        "type": "domestic_wire",
        "account_number": "000123456789",
        "routing_number": "021000021",
        "intermediary_party_name": "Example Correspondent",
        "intermediary_party_swift_code": "CHASUS33",
        "address": {**ADDRESS, "street2": "Suite 5", "state": "GE", "postal_code": "1201"},
        **LINES,
    },
    {
        "type": "international_wire",
        "account_number": "CH9300762011623852957",
        "swift_code": "DEUTDEFF500",
        "intermediary_party_name": "Example Correspondent",
        "intermediary_party_swift_code": "CHASUS33",
        "address": ADDRESS,
        **LINES,
    },
]


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"public_forms": True},
        {"strict_interface": True},
        {"strict_interface": True, "public_forms": True, "reject_unknown_fields": True},
    ],
    ids=["default", "public", "strict", "rehearsal"],
)
async def test_every_form_takes_the_public_wire_fields(config):
    client, headers = await _client(**config)
    try:
        response = await client.post(
            "/v1/payment_instructions",
            headers=headers,
            json=[{"entity": "ent_demo3", "payment_instructions": PUBLIC_WIRES}],
        )
        assert response.status_code == 201, response.text
        assert len(response.json()["data"][0]["payment_instructions"]["data"]) == 2
        assert "DEUTDEFF500" not in response.text  # nothing of the wire is echoed
        assert "623852957" not in response.text
    finally:
        await client.aclose()


@pytest.mark.parametrize(
    ("instruction", "param", "code"),
    [
        (
            {"type": "international_wire", "beneficiary_address": "12 Quai"},
            "beneficiary_address",
            "parameter_unknown",
        ),
        (
            {"type": "domestic_wire", "intermediary_bank_name": "X"},
            "intermediary_bank_name",
            "parameter_unknown",
        ),
        (
            {"type": "domestic_wire", "originator_to_beneficiary": "X"},
            "originator_to_beneficiary",
            "parameter_unknown",
        ),
        ({"type": "ach", "address": ADDRESS}, "address", "parameter_unknown"),
        ({"type": "domestic_wire", "swift_code": "DEUTDEFF"}, "swift_code", "parameter_unknown"),
        (
            {"type": "international_wire", "routing_number": "021000021"},
            "routing_number",
            "parameter_unknown",
        ),
        ({"type": "domestic_wire", "address": "12 Quai, Geneva"}, "address", "parameter_invalid"),
        (
            {"type": "domestic_wire", "address": {"street1": "1 Main", "city": "Boston"}},
            "address.country_code",
            "parameter_missing",
        ),
        (
            {"type": "domestic_wire", "address": {**ADDRESS, "zip": "1201"}},
            "address.zip",
            "parameter_unknown",
        ),
    ],
)
async def test_rehearsal_refuses_what_the_public_wire_inputs_do_not_have(
    rehearsal, instruction, param, code
):
    client, headers = rehearsal
    response = await client.post(
        "/v1/payment_instructions",
        headers=headers,
        json=[{"entity": "ent_demo2", "payment_instructions": [instruction]}],
    )
    body = assert_error(response, 400, code)
    # an unknown field in the public form (`param`), a bad value in the interface's
    # (`invalid-params`)
    named = body["param"] if code == "parameter_unknown" else body["invalid-params"][0]["name"]
    assert named == f"body.[0].payment_instructions.[0].{param}"
