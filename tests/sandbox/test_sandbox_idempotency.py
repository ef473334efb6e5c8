"""Idempotency keys: replay, mismatch, in flight, what is stored, 24 h retention, scope."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import httpx
from sandbox_support import assert_error, bearer, distribution, make_client, token_for

from fundpipe.sandbox import SandboxConfig, create_app


async def _count(client: httpx.AsyncClient, headers: dict[str, str]) -> int:
    listed = await client.get("/v1/distributions?limit=100", headers=headers)
    return len(listed.json()["data"])


async def test_same_key_same_body_replays_the_first_answer(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    headers = {**writer, "Idempotency-Key": "batch-1"}
    first = await client.post("/v1/distributions", headers=headers, json=[distribution(2)])
    # Same content, other key order and spacing: still the same request.
    reordered = json.dumps([dict(reversed(list(distribution(2).items())))], indent=2)
    second = await client.post(
        "/v1/distributions",
        headers={**headers, "Content-Type": "application/json"},
        content=reordered,
    )
    assert first.status_code == second.status_code == 201
    assert second.json() == first.json()
    assert second.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert await _count(client, writer) == 1


async def test_same_key_other_body_is_422_mismatch(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    headers = {**writer, "Idempotency-Key": "batch-2"}
    assert (
        await client.post("/v1/distributions", headers=headers, json=[distribution(1)])
    ).status_code == 201
    response = await client.post(
        "/v1/distributions", headers=headers, json=[distribution(1, amount=99)]
    )
    body = assert_error(response, 422, "idempotency_mismatch")
    assert body["type"] == "unprocessable_entity_error"
    assert await _count(client, writer) == 1


async def test_retry_while_first_is_running_is_409(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    await client.put("/_sandbox/faults", json={"latency_ms": 300})
    headers = {**writer, "Idempotency-Key": "slow"}
    first, second = await asyncio.gather(
        client.post("/v1/distributions", headers=headers, json=[distribution()]),
        client.post("/v1/distributions", headers=headers, json=[distribution()]),
    )
    statuses = sorted([first.status_code, second.status_code])
    assert statuses == [201, 409]
    loser = first if first.status_code == 409 else second
    assert_error(loser, 409, "conflict")
    await client.delete("/_sandbox/faults")
    assert await _count(client, writer) == 1


async def test_server_errors_are_not_stored(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    headers = {**writer, "Idempotency-Key": "flaky"}
    await client.put("/_sandbox/faults", json={"error_rate": 1.0, "statuses": [503]})
    assert_error(
        await client.post("/v1/distributions", headers=headers, json=[distribution()]),
        503,
        "internal_error",
    )
    await client.delete("/_sandbox/faults")
    retry = await client.post("/v1/distributions", headers=headers, json=[distribution()])
    assert retry.status_code == 201
    assert "Idempotent-Replayed" not in retry.headers


async def test_rate_limited_answers_are_not_stored(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    headers = {**writer, "Idempotency-Key": "limited"}
    await client.put(
        "/_sandbox/faults", json={"error_rate": 1.0, "statuses": [429], "retry_after_s": 2}
    )
    limited = await client.post("/v1/distributions", headers=headers, json=[distribution()])
    assert_error(limited, 429, "rate_limit_exceeded")
    assert limited.headers["Retry-After"] == "2"
    await client.delete("/_sandbox/faults")
    assert (
        await client.post("/v1/distributions", headers=headers, json=[distribution()])
    ).status_code == 201


async def test_client_errors_are_stored_and_replayed(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    headers = {**writer, "Idempotency-Key": "bad-batch"}
    bad = distribution(currency_note="x")
    first = await client.post("/v1/distributions", headers=headers, json=[bad])
    second = await client.post("/v1/distributions", headers=headers, json=[bad])
    assert first.status_code == second.status_code == 400
    assert second.json() == first.json()
    assert second.headers["Idempotent-Replayed"] == "true"
    assert second.headers["Request-Id"] == first.json()["request_id"]


async def test_keys_are_forgotten_after_24_hours(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    headers = {**writer, "Idempotency-Key": "old"}
    assert (
        await client.post("/v1/distributions", headers=headers, json=[distribution()])
    ).status_code == 201
    await client.post("/_sandbox/clock/advance", json={"seconds": 23 * 3600})
    fresh = bearer(
        await token_for(client, "demo-client", "demo-secret"), **{"Idempotency-Key": "old"}
    )
    replay = await client.post("/v1/distributions", headers=fresh, json=[distribution()])
    assert replay.headers.get("Idempotent-Replayed") == "true"
    await client.post("/_sandbox/clock/advance", json={"seconds": 3601})
    fresh = bearer(
        await token_for(client, "demo-client", "demo-secret"), **{"Idempotency-Key": "old"}
    )
    again = await client.post("/v1/distributions", headers=fresh, json=[distribution()])
    assert again.status_code == 201
    assert "Idempotent-Replayed" not in again.headers
    assert await _count(client, fresh) == 2


async def test_keys_are_scoped_per_client(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    await client.post(
        "/_sandbox/clients",
        json={
            "client_id": "second",
            "client_secret": "s2",
            "scopes": ["distributions:*"],
            "organizations": ["org_demo"],
        },
    )
    other = bearer(await token_for(client, "second", "s2"), **{"Idempotency-Key": "shared"})
    a = await client.post(
        "/v1/distributions", headers={**writer, "Idempotency-Key": "shared"}, json=[distribution()]
    )
    b = await client.post("/v1/distributions", headers=other, json=[distribution(amount=5)])
    assert a.status_code == b.status_code == 201
    assert a.json()["data"][0]["id"] != b.json()["data"][0]["id"]


async def test_invalid_key_header_is_400(client: httpx.AsyncClient, writer: dict[str, str]) -> None:
    body = assert_error(
        await client.post(
            "/v1/distributions",
            headers={**writer, "Idempotency-Key": "x" * 256},
            json=[distribution()],
        ),
        400,
        "parameter_invalid",
    )
    assert body["invalid-params"][0]["name"] == "header.Idempotency-Key"


async def test_retention_follows_an_injected_clock() -> None:
    now = [datetime(2026, 12, 1, 9, tzinfo=UTC)]
    app = create_app(SandboxConfig(clock=lambda: now[0], token_lifetime_s=10 * 86400))
    async with make_client(app) as client:
        headers = bearer(
            await token_for(client, "demo-client", "demo-secret"), **{"Idempotency-Key": "k"}
        )
        first = await client.post("/v1/distributions", headers=headers, json=[distribution()])
        assert first.json()["data"][0]["created_at"] == "2026-12-01T09:00:00Z"
        now[0] += timedelta(hours=23, minutes=59)
        replay = await client.post("/v1/distributions", headers=headers, json=[distribution()])
        assert replay.headers.get("Idempotent-Replayed") == "true"
        now[0] += timedelta(minutes=2)
        again = await client.post("/v1/distributions", headers=headers, json=[distribution()])
        assert "Idempotent-Replayed" not in again.headers
        assert again.json()["data"][0]["id"] != first.json()["data"][0]["id"]
