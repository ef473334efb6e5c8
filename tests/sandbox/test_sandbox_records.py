"""Created and read records: fields, ids, atomic batches of every kind, no full account numbers."""

from __future__ import annotations

import re

import httpx
from sandbox_support import assert_error, distribution, param_names


async def test_created_distribution_record(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    element = distribution(2)
    element["payments"][0]["notifications"] = [{"contact": "cnt_demo1"}, {"contact": "cnt_demo2"}]
    response = await client.post("/v1/distributions", headers=writer, json=[element])
    assert response.status_code == 201
    envelope = response.json()
    assert envelope["object"] == "list"
    assert envelope["url"] == "/v1/distributions"
    dist = envelope["data"][0]
    assert re.match(r"^dst_[A-Za-z0-9]+$", dist["id"])
    assert re.match(r"^[A-Z0-9]{8}$", dist["short_id"])
    assert dist["status"] == "draft"
    assert dist["livemode"] is False
    assert dist["sender_url"].startswith("https://app.sandbox.fundservice.example/")
    payment = dist["payments"]["data"][0]
    assert re.match(r"^dpmt_[A-Za-z0-9]+$", payment["id"])
    assert payment["status"] == "staged"
    assert payment["amount"] == 10_000
    assert payment["payment_instructions"] == "pmi_demo1"
    assert [n["contact"] for n in payment["notifications"]["data"]] == ["cnt_demo1", "cnt_demo2"]
    assert all(n["id"].startswith("dntf_") for n in payment["notifications"]["data"])
    again = (await client.get(f"/v1/distributions/{dist['id']}", headers=writer)).json()
    assert again == dist


async def test_demo_seed_matches_the_architecture_table(
    client: httpx.AsyncClient, reader: dict[str, str]
) -> None:
    vehicles = (await client.get("/v1/vehicles", headers=reader)).json()["data"]
    assert {v["id"]: v["name"] for v in vehicles} == {
        "veh_demo1": "Demo Growth Fund I",
        "veh_demo2": "Demo Income Fund II",
        "veh_demo3": "Demo Real Assets III",
    }
    totals = {}
    for n in (1, 2, 3):
        account = (await client.get(f"/v1/financial_accounts/fa_demo{n}dep", headers=reader)).json()
        assert account["type"] == "depository"
        assert account["balance"]["available"] == account["balance"]["total"]
        totals[n] = account["balance"]["total"]
    assert totals == {1: 500_000_000, 2: 250_000_000, 3: 75_000_000}
    entities = (await client.get("/v1/entities", headers=reader)).json()["data"]
    assert sorted(ref for e in entities for ref in e["external_references"]) == [
        f"DEMO-E{i}" for i in range(1, 6)
    ]
    contact = (await client.get("/v1/contacts/cnt_demo3", headers=reader)).json()
    assert contact["email"] == "investor3@example.com"
    org = (await client.get("/v1/organizations/org_demo", headers=reader)).json()
    assert org["name"] == "Demo Fund Administration"


async def test_entity_contact_and_association_creates(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    entities = await client.post(
        "/v1/entities",
        headers=writer,
        json=[
            {
                "name": "Zed Holdings LLC",
                "type": "llc",
                "external_type": "LP",
                "external_reference": "E-77",
            }
        ],
    )
    assert entities.status_code == 201
    ent = entities.json()["data"][0]
    assert ent["payment_instructions"] == []
    assert ent["external_references"] == ["E-77"]
    contacts = await client.post(
        "/v1/contacts", headers=writer, json=[{"name": "Zed", "email": "zed@example.com"}]
    )
    cnt = contacts.json()["data"][0]
    assert cnt["external_references"] == []
    linked = await client.post(
        f"/v1/entities/{ent['id']}/contacts",
        headers=writer,
        json=[{"id": cnt["id"]}, {"id": "cnt_demo1"}],
    )
    assert linked.status_code == 201
    assert linked.json()["url"] == "/v1/contacts"
    assert (
        ent["id"]
        in (await client.get(f"/v1/contacts/{cnt['id']}", headers=writer)).json()["entities"]
    )
    body = assert_error(
        await client.post(
            f"/v1/entities/{ent['id']}/contacts",
            headers=writer,
            json=[{"id": "cnt_demo2"}, {"id": "cnt_ghost"}],
        ),
        400,
        "parameter_invalid",
    )
    assert param_names(body) == {"body.[1].id": "parameter_invalid"}
    assert (
        ent["id"]
        not in (await client.get("/v1/contacts/cnt_demo2", headers=writer)).json()["entities"]
    )  # atomic
    assert_error(
        await client.post(
            "/v1/entities/ent_ghost/contacts", headers=writer, json=[{"id": "cnt_demo1"}]
        ),
        404,
        "resource_not_found",
    )
    body = assert_error(
        await client.post("/v1/entities/bad/contacts", headers=writer, json=[{"id": "cnt_demo1"}]),
        400,
        "parameter_invalid",
    )
    assert param_names(body) == {"path.ent_id": "parameter_invalid"}


async def test_payment_instructions_keep_only_last_four(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    body = [
        {
            "entity": "ent_demo2",
            "payment_instructions": [
                {
                    "type": "ach",
                    "beneficiary_name": "Brightwater",
                    "account_number": "000123456789",
                    "routing_number": "021000021",
                },
                {"type": "international_wire", "swift_code": "DEUTDEFF"},  # partial is fine
            ],
        }
    ]
    response = await client.post("/v1/payment_instructions", headers=writer, json=body)
    assert response.status_code == 201
    assert "123456789" not in response.text
    created = response.json()["data"][0]
    assert created["object"] == "entity_payment_instructions"
    pmi_ids = [p["id"] for p in created["payment_instructions"]["data"]]
    assert created["payment_instructions"]["url"] == "/v1/entities/ent_demo2/payment_instructions"
    for path in (f"/payment_instructions/{pmi_ids[0]}", f"/v1/payment_instructions/{pmi_ids[0]}"):
        record = (await client.get(path, headers=writer)).json()
        assert record["account_number_last_four"] == "6789"
        assert "123456789" not in str(record)
    listed = (
        await client.get("/v1/entities/ent_demo2/payment_instructions", headers=writer)
    ).json()
    assert [p["id"] for p in listed["data"]] == ["pmi_demo2", *pmi_ids]
    entity = (await client.get("/v1/entities/ent_demo2", headers=writer)).json()
    assert entity["payment_instructions"] == ["pmi_demo2", *pmi_ids]
    assert (
        entity["sender_payment_instructions_url"] == "/v1/entities/ent_demo2/payment_instructions"
    )
    bad = [*body, {"entity": "ent_ghost", "payment_instructions": [{"type": "ach"}]}]
    assert_error(
        await client.post("/v1/payment_instructions", headers=writer, json=bad),
        400,
        "parameter_invalid",
    )
    after = (await client.get("/v1/entities/ent_demo2", headers=writer)).json()
    assert after["payment_instructions"] == entity["payment_instructions"]  # atomic


async def test_entity_batch_is_atomic(client: httpx.AsyncClient, writer: dict[str, str]) -> None:
    before = (await client.get("/v1/entities?limit=100", headers=writer)).json()["data"]
    response = await client.post(
        "/v1/entities",
        headers=writer,
        json=[{"name": "Fine", "type": "trust"}, {"name": "Broken", "type": "spaceship"}],
    )
    assert_error(response, 400, "parameter_invalid")
    assert (await client.get("/v1/entities?limit=100", headers=writer)).json()["data"] == before
