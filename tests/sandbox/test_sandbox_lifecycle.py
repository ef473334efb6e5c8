"""Clock advance: distributions execute, payments disburse, the depository is debited."""

from __future__ import annotations

from typing import Any

import httpx
from sandbox_support import bearer, distribution, token_for


async def _account(client: httpx.AsyncClient, headers: dict[str, str], fa: str) -> dict[str, Any]:
    balance: dict[str, Any] = (
        await client.get(f"/v1/financial_accounts/{fa}", headers=headers)
    ).json()["balance"]
    return balance


async def _advance(
    client: httpx.AsyncClient, seconds: float
) -> tuple[dict[str, Any], dict[str, str]]:
    """Advance the clock; returns the answer and fresh headers (tokens expire meanwhile)."""
    answer: dict[str, Any] = (
        await client.post("/_sandbox/clock/advance", json={"seconds": seconds})
    ).json()
    return answer, bearer(await token_for(client, "demo-client", "demo-secret"))


async def _now(client: httpx.AsyncClient) -> str:
    now: str = (await client.get("/_sandbox/clock")).json()["now"]
    return now


async def test_advancing_past_the_date_executes_and_debits(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    now = await _now(client)
    soon = distribution(3, date=now[:10] + "T23:59:00", zone="UTC", amount=1_000_00)
    later = distribution(1, date="2099-01-01T00:00:00", zone="UTC")
    created = (await client.post("/v1/distributions", headers=writer, json=[soon, later])).json()[
        "data"
    ]
    before = await _account(client, writer, "fa_demo1dep")
    brokerage_before = await _account(client, writer, "fa_demo1brk")
    advanced, writer = await _advance(client, 2 * 86400)
    assert advanced["executed"] == [created[0]["id"]]
    dist = (await client.get(f"/v1/distributions/{created[0]['id']}", headers=writer)).json()
    assert dist["status"] == "executed"
    assert dist["published_at"]
    assert dist["approved_at"]
    assert dist["executed_at"]
    assert {p["status"] for p in dist["payments"]["data"]} == {"disbursed"}
    assert all(
        p["recipient_confirmed_at"] and p["verified_at"] and p["disbursed_at"]
        for p in dist["payments"]["data"]
    )
    after = await _account(client, writer, "fa_demo1dep")
    assert after["total"] == before["total"] - 3 * 1_000_00
    assert after["available"] == before["available"] - 3 * 1_000_00
    # only the depository pays out: the vehicle's brokerage account is untouched
    assert (await _account(client, writer, "fa_demo1brk")) == brokerage_before
    pending = (await client.get(f"/v1/distributions/{created[1]['id']}", headers=writer)).json()
    assert pending["status"] == "draft"


async def test_payment_beyond_available_fails_without_debit(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    now = await _now(client)
    balance = await _account(client, writer, "fa_demo3dep")
    element = distribution(
        2, vehicle="veh_demo3", date=now[:19], zone="UTC", amount=balance["available"] - 100
    )
    await client.post("/v1/distributions", headers=writer, json=[element])
    await client.post("/_sandbox/clock/advance", json={"seconds": 60})
    dist = (await client.get("/v1/distributions", headers=writer)).json()["data"][0]
    statuses = [(p["status"], p["failure_reason"]) for p in dist["payments"]["data"]]
    assert statuses == [("disbursed", None), ("failed", "insufficient funds")]
    after = await _account(client, writer, "fa_demo3dep")
    assert after["available"] == 100
    assert after["total"] == 100


async def test_future_override_waits_for_its_own_date(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    now = await _now(client)
    element = distribution(2, date=now[:19], zone="UTC")
    element["payments"][1]["distribution_date_override"] = "2099-06-01T00:00:00"
    await client.post("/v1/distributions", headers=writer, json=[element])
    await client.post("/_sandbox/clock/advance", json={"seconds": 60})
    dist = (await client.get("/v1/distributions", headers=writer)).json()["data"][0]
    assert dist["status"] == "executed"
    assert [p["status"] for p in dist["payments"]["data"]] == ["disbursed", "staged"]
    assert dist["payments"]["data"][1]["distribution_date_override"] == "2099-06-01T00:00:00+00:00"


async def test_crossing_a_month_end_snapshots_total_end_of_last_month(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    await client.patch(
        "/_sandbox/financial_accounts/fa_demo2dep",
        json={"total": 1_000_000, "available": 1_000_000},
    )
    before = await _account(client, writer, "fa_demo2dep")
    assert before["total_end_of_last_month"] != 1_000_000
    _, writer = await _advance(client, 32 * 86400)
    after = await _account(client, writer, "fa_demo2dep")
    assert after["total_end_of_last_month"] == 1_000_000


async def test_clock_set_only_moves_forward(client: httpx.AsyncClient) -> None:
    response = await client.post("/_sandbox/clock/set", json={"now": "2020-01-01T00:00:00Z"})
    assert response.status_code == 400
    target = "2099-01-01T00:00:00Z"
    moved = await client.post("/_sandbox/clock/set", json={"now": target})
    assert moved.status_code == 200
    assert moved.json()["now"].startswith("2099-01-01T00:00:00")


async def test_dates_render_with_the_zone_offset(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    winter = distribution(1, date="2026-12-15T09:00:00")
    summer = distribution(1, date="2027-07-15T09:00:00-04:00")
    utc = distribution(1, date="2026-12-15T09:00:00Z", zone=None)
    data = (
        await client.post("/v1/distributions", headers=writer, json=[winter, summer, utc])
    ).json()["data"]
    assert [d["distribution_date"] for d in data] == [
        "2026-12-15T09:00:00-05:00",
        "2027-07-15T09:00:00-04:00",
        "2026-12-15T09:00:00+00:00",
    ]
    assert data[2]["distribution_timezone"] == "UTC"
