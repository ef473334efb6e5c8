"""Opt-in seeding: bulk history through a control route, further demo organizations."""

from __future__ import annotations

import httpx
import pytest
from sandbox_support import assert_error, bearer, make_client, token_for

from fundpipe.sandbox import SandboxConfig, create_app


async def test_history_seeds_executed_distributions_in_bulk(
    client: httpx.AsyncClient, reader: dict[str, str]
) -> None:
    response = await client.post(
        "/_sandbox/history",
        json={
            "vehicle": "veh_demo2",
            "entities": ["ent_demo1", "ent_demo2", "ent_demo3"],
            "distributions": 12,
            "payments_per_distribution": 3,
            "external_reference_prefix": "PAST-",
            "amount_cents": 2_500,
        },
    )
    assert response.status_code == 201, response.text
    assert response.json() == {
        "vehicle": "veh_demo2",
        "distributions": 12,
        "payments": 36,
        "first_external_reference": "PAST-01",
        "last_external_reference": "PAST-12",
    }
    page = (await client.get("/v1/distributions?limit=100", headers=reader)).json()["data"]
    assert [d["external_reference"] for d in page] == [f"PAST-{n:02d}" for n in range(12, 0, -1)]
    newest = page[0]
    assert newest["status"] == "executed"
    assert newest["vehicle"] == "veh_demo2"
    assert newest["executed_at"] is not None
    payments = newest["payments"]["data"]
    assert [p["entity"] for p in payments] == ["ent_demo1", "ent_demo2", "ent_demo3"]
    assert {p["status"] for p in payments} == {"disbursed"}
    assert {p["amount"] for p in payments} == {2_500}
    assert payments[0]["payment_instructions"] == "pmi_demo1"
    # Dated in the past, an hour apart: advancing the clock executes nothing more.
    assert newest["distribution_date"] > page[1]["distribution_date"]
    moved = await client.post("/_sandbox/clock/advance", json={"seconds": 60})
    assert moved.json()["executed"] == []


async def test_history_defaults_to_every_entity_of_the_vehicles_organization(
    client: httpx.AsyncClient, reader: dict[str, str]
) -> None:
    response = await client.post(
        "/_sandbox/history",
        json={"vehicle": "veh_demo1", "distributions": 2, "payments_per_distribution": 5},
    )
    assert response.json()["first_external_reference"] == "HIST-1"
    listed = (await client.get("/v1/distributions", headers=reader)).json()["data"]
    assert sorted(p["entity"] for p in listed[0]["payments"]["data"]) == [
        f"ent_demo{n}" for n in range(1, 6)
    ]


@pytest.mark.parametrize(
    ("payload", "status", "code"),
    [
        ({"vehicle": "veh_nowhere", "distributions": 1}, 404, "resource_not_found"),
        ({"vehicle": "veh_demo1", "entities": ["ent_nobody"]}, 404, "resource_not_found"),
        ({"distributions": 1}, 400, "parameter_missing"),
        (
            {"vehicle": "veh_demo1", "distributions": 100_000, "payments_per_distribution": 100},
            400,
            "parameter_invalid",
        ),
    ],
)
async def test_history_refuses_what_it_cannot_seed(
    client: httpx.AsyncClient, payload: dict[str, object], status: int, code: str
) -> None:
    assert_error(await client.post("/_sandbox/history", json=payload), status, code)


async def test_one_demo_organization_by_default(client: httpx.AsyncClient) -> None:
    token = await token_for(client, "demo-client", "demo-secret")
    organizations = (await client.get("/v1/organizations", headers=bearer(token))).json()
    assert [o["id"] for o in organizations["data"]] == ["org_demo"]


async def test_a_second_demo_organization_is_reachable_by_the_demo_client() -> None:
    async with make_client(create_app(SandboxConfig(demo_orgs=2))) as client:
        token = await token_for(client, "demo-client", "demo-secret")
        organizations = (await client.get("/v1/organizations", headers=bearer(token))).json()
        assert sorted(o["id"] for o in organizations["data"]) == ["org_demo", "org_demob"]
        # Two organizations: a request must name one.
        assert_error(
            await client.get("/v1/entities", headers=bearer(token)), 400, "parameter_missing"
        )
        second = bearer(token, **{"X-Organization-Id": "org_demob"})
        vehicles = (await client.get("/v1/vehicles", headers=second)).json()["data"]
        assert sorted(v["id"] for v in vehicles) == ["veh_demob1", "veh_demob2"]
        accounts = (
            await client.get("/v1/vehicles/veh_demob1/financial_accounts", headers=second)
        ).json()["data"]
        assert sorted(a["id"] for a in accounts) == ["fa_demob1brk", "fa_demob1dep"]
        entities = (await client.get("/v1/entities", headers=second)).json()["data"]
        assert sorted(r for e in entities for r in e["external_references"]) == [
            "DEMO-B-E1",
            "DEMO-B-E2",
            "DEMO-B-E3",
        ]
        first = bearer(token, **{"X-Organization-Id": "org_demo"})
        assert len((await client.get("/v1/vehicles", headers=first)).json()["data"]) == 3
        # The organizations stay apart: the first one's vehicle is unknown in the second.
        assert_error(
            await client.get("/v1/vehicles/veh_demo1", headers=second), 404, "resource_not_found"
        )
        # A reset keeps the configured number of organizations.
        await client.post("/_sandbox/reset", json={})
        token = await token_for(client, "demo-client", "demo-secret")
        again = (await client.get("/v1/organizations", headers=bearer(token))).json()["data"]
        assert len(again) == 2


def test_demo_orgs_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="demo_orgs"):
        SandboxConfig(demo_orgs=0)
