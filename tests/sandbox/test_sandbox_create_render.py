"""A created batch is answered with exactly the records a later read returns (every feature)."""

from __future__ import annotations

import httpx
from sandbox_support import distribution


async def test_create_answer_equals_the_records_read_back(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    big = distribution(150, zone="Europe/Paris", date="2026-10-25T02:30:00+01:00")
    big["payments"][3]["notifications"] = [{"contact": f"cnt_demo{k % 5 + 1}"} for k in range(100)]
    big["payments"][7]["distribution_date_override"] = "2026-11-02T08:00:00+01:00"
    big["payments"][9]["notifications"] = []
    big["payments"][10]["distribution_date_override"] = None
    utc = distribution(3, zone=None, date="2026-12-15T09:00:00Z")
    utc["external_reference"] = None
    utc["payments"][1]["distribution_date_override"] = "2026-12-20T00:00:00Z"
    dated = distribution(2, zone="America/New_York", date="2026-03-08T03:30:00")
    del dated["external_reference"]
    body = [big, utc, dated, distribution(1, zone="Asia/Kolkata")]
    # An entity without payment instructions gets none.
    entity = await client.post(
        "/v1/entities", headers=writer, json=[{"name": "No instructions", "type": "trust"}]
    )
    assert entity.status_code == 201
    body[3]["payments"][0]["entity"] = entity.json()["data"][0]["id"]

    response = await client.post("/v1/distributions", headers=writer, json=body)
    assert response.status_code == 201, response.text
    created = response.json()["data"]
    assert [d["name"] for d in created] == [e["name"] for e in body]
    assert created[0]["payments"]["has_more"] is True
    assert created[3]["payments"]["data"][0]["payment_instructions"] is None
    for record in created:
        again = await client.get(f"/v1/distributions/{record['id']}", headers=writer)
        assert again.json() == record
    # The next page of the 150-payment distribution continues where the answer stopped.
    rest = await client.get(created[0]["payments"]["next_page_url"], headers=writer)
    assert rest.status_code == 200, rest.text
    ids = [p["id"] for p in created[0]["payments"]["data"]] + [p["id"] for p in rest.json()["data"]]
    assert len(set(ids)) == 150
    assert [p["amount"] for p in rest.json()["data"]] == [10_000] * 50
