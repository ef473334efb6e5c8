"""The control route that cancels a distribution: what changes, what the clock then leaves alone,
and what is refused."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from sandbox_support import assert_error, bearer, distribution, param_names, token_for

from fundpipe.sandbox import SandboxConfig, create_app

#: The sandbox's base time here: it stands still, so timestamps can be compared exactly.
BASE = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


@pytest.fixture
def app() -> Any:
    """A fresh demo sandbox whose clock moves only when a control route moves it."""
    return create_app(SandboxConfig(seed="demo", clock=lambda: BASE))


async def _create(client: httpx.AsyncClient, headers: dict[str, str], n: int) -> dict[str, Any]:
    response = await client.post(
        "/v1/distributions", headers=headers, json=[distribution(n, date="2027-01-15T09:00:00")]
    )
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()["data"][0]
    return created


async def _fresh_token(client: httpx.AsyncClient) -> dict[str, str]:
    return bearer(await token_for(client, "demo-client", "demo-secret"))


async def test_cancel_moves_the_distribution_and_its_open_payments_to_cancelled(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    dist = await _create(client, writer, 4)
    pays = [p["id"] for p in dist["payments"]["data"]]
    # Behind fundpipe's back: one payment already disbursed, one failed, one verified.
    for dpmt, status in ((pays[1], "disbursed"), (pays[2], "failed"), (pays[3], "verified")):
        edited = await client.patch(
            f"/_sandbox/distribution_payments/{dpmt}", json={"status": status}
        )
        assert edited.status_code == 200
    await client.post("/_sandbox/clock/advance", json={"seconds": 90})
    now = (await client.get("/_sandbox/clock")).json()["now"]
    assert now == "2026-11-20T12:01:30Z"

    response = await client.post(f"/_sandbox/distributions/{dist['id']}/cancel")
    assert response.status_code == 200, response.text
    cancelled = response.json()
    assert cancelled["status"] == "cancelled"
    assert cancelled["cancelled_at"] == now
    assert cancelled["updated_at"] == now
    assert cancelled["executed_at"] is None
    assert [p["status"] for p in cancelled["payments"]["data"]] == [
        "cancelled",
        "disbursed",
        "failed",
        "cancelled",
    ]
    # The service API reads the same record.
    read = await client.get(f"/v1/distributions/{dist['id']}", headers=writer)
    assert read.json() == cancelled

    # Past its date the clock neither executes it nor pays anything from the vehicle.
    balance_before = (
        await client.get("/v1/financial_accounts/fa_demo1dep", headers=writer)
    ).json()["balance"]
    moved = await client.post("/_sandbox/clock/set", json={"now": "2027-02-01T00:00:00Z"})
    assert moved.json()["executed"] == []
    headers = await _fresh_token(client)  # the old token expired while the clock moved
    after = (await client.get(f"/v1/distributions/{dist['id']}", headers=headers)).json()
    assert after["status"] == "cancelled"
    assert after["cancelled_at"] == now
    assert [p["status"] for p in after["payments"]["data"]] == [
        "cancelled",
        "disbursed",
        "failed",
        "cancelled",
    ]
    balance_after = (
        await client.get("/v1/financial_accounts/fa_demo1dep", headers=headers)
    ).json()["balance"]
    assert balance_after["total"] == balance_before["total"]
    assert balance_after["available"] == balance_before["available"]


async def test_cancelling_twice_changes_nothing(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    dist = await _create(client, writer, 1)
    first = await client.post(f"/_sandbox/distributions/{dist['id']}/cancel", json={})
    assert first.status_code == 200
    await client.post("/_sandbox/clock/advance", json={"seconds": 30})
    second = await client.post(f"/_sandbox/distributions/{dist['id']}/cancel")
    assert second.status_code == 200
    assert second.json() == first.json()


async def test_an_executed_distribution_cannot_be_cancelled(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    dist = await _create(client, writer, 2)
    moved = await client.post("/_sandbox/clock/set", json={"now": "2027-01-20T00:00:00Z"})
    assert moved.json()["executed"] == [dist["id"]]
    headers = await _fresh_token(client)
    before = (await client.get(f"/v1/distributions/{dist['id']}", headers=headers)).json()

    body = assert_error(
        await client.post(f"/_sandbox/distributions/{dist['id']}/cancel"), 400, "parameter_invalid"
    )
    assert param_names(body) == {"path.dst_id": "parameter_invalid"}
    after = (await client.get(f"/v1/distributions/{dist['id']}", headers=headers)).json()
    assert after == before
    assert after["status"] == "executed"
    assert after["cancelled_at"] is None
    assert [p["status"] for p in after["payments"]["data"]] == ["disbursed", "disbursed"]


async def test_cancel_refuses_unknown_ids_and_payloads(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    assert_error(
        await client.post("/_sandbox/distributions/dst_missing/cancel"), 404, "resource_not_found"
    )
    dist = await _create(client, writer, 1)
    body = assert_error(
        await client.post(f"/_sandbox/distributions/{dist['id']}/cancel", json={"why": "x"}),
        400,
        "parameter_unknown",
    )
    assert param_names(body) == {"body.why": "parameter_unknown"}
    still = (await client.get(f"/v1/distributions/{dist['id']}", headers=writer)).json()
    assert still["status"] == "draft"
    assert still["cancelled_at"] is None
