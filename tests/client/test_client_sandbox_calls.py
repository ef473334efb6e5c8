"""What the client sends, observed on its way to the real sandbox (in-process).

These replace respx stand-ins for answers the sandbox gives itself: tokens, 401 after expiry,
wrong credentials, pagination, creates. A `Recorder` transport sits between the client and the
sandbox's ASGI app and keeps every request (and every access token handed out).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fundclient_helpers import FakeClock
from test_client_sandbox import SANDBOX_URL, demo_settings, distribution

from fundpipe.client import FundClient, canonical_json, errors, idempotency_key, models
from fundpipe.sandbox import SandboxConfig, create_app


class Recorder(httpx.AsyncBaseTransport):
    """The sandbox's ASGI app, plus a record of every request and access token."""

    def __init__(self, app: Any) -> None:
        self._app = httpx.ASGITransport(app=app)
        self.requests: list[httpx.Request] = []
        self.tokens: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        # A copy: the auth flow replays the same Request object with another header.
        self.requests.append(
            httpx.Request(
                request.method, request.url, headers=request.headers, content=request.content
            )
        )
        response = await self._app.handle_async_request(request)
        if request.url.path == "/oauth/token":
            content = await response.aread()
            if response.status_code == 200:
                self.tokens.append(json.loads(content)["access_token"])
            return httpx.Response(response.status_code, headers=response.headers, content=content)
        return response

    def to(self, path: str, method: str = "GET") -> list[httpx.Request]:
        """The requests sent to `path` with `method`, in order."""
        return [r for r in self.requests if r.url.path == path and r.method == method]


@pytest.fixture
def app() -> Any:
    return create_app(SandboxConfig())


@pytest.fixture
def recorder(app: Any) -> Recorder:
    return Recorder(app)


@pytest.fixture
async def control(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=SANDBOX_URL) as c:
        yield c


@pytest.fixture
async def client(recorder: Recorder) -> AsyncIterator[FundClient]:
    async with FundClient(demo_settings().client_config(), transport=recorder) as c:
        yield c


# --- OAuth -----------------------------------------------------------------------------------


async def test_token_is_fetched_once_and_sent_as_bearer(client, recorder):
    await client.get_vehicle("veh_demo1")
    await client.get_vehicle("veh_demo1")
    [token_call] = recorder.to("/oauth/token", "POST")
    assert token_call.headers["Authorization"].startswith("Basic ")
    assert b"grant_type=client_credentials" in token_call.content
    [token] = recorder.tokens
    last = recorder.to("/v1/vehicles/veh_demo1")[-1]
    assert last.headers["Authorization"] == f"Bearer {token}"
    assert last.headers["X-Organization-Id"] == "org_demo"


async def test_401_refetches_the_token_and_replays_once(client, recorder, control):
    await client.get_vehicle("veh_demo1")
    response = await control.post("/_sandbox/clock/advance", json={"seconds": 3601})
    assert response.status_code == 200  # the service now refuses the token: 401
    [created] = await client.create_distributions([distribution("REPLAY")])
    assert created.external_reference == "REPLAY"
    posts = recorder.to("/v1/distributions", "POST")
    assert [p.headers["Authorization"] for p in posts] == [f"Bearer {t}" for t in recorder.tokens]
    assert len(posts) == 2
    assert len({p.headers["Idempotency-Key"] for p in posts}) == 1
    assert client.token_fetches == 2


async def test_rejected_credentials_raise_authentication_error(app, recorder):
    async with FundClient(
        demo_settings(client_secret="wrong").client_config(), transport=recorder
    ) as c:
        with pytest.raises(errors.AuthenticationError) as info:
            await c.get_vehicle("veh_demo1")
    assert info.value.error is not None
    assert info.value.error["error"] == "invalid_client"  # RFC 6749 §5.2
    assert recorder.to("/v1/vehicles/veh_demo1") == []
    assert len(recorder.to("/oauth/token", "POST")) == 1


async def test_concurrent_requests_share_one_token_fetch(client, recorder):
    results = await asyncio.gather(*(client.get_vehicle("veh_demo1") for _ in range(8)))
    assert len(results) == 8
    assert len(recorder.to("/oauth/token", "POST")) == 1


async def test_token_is_refreshed_leeway_before_expiry(recorder):
    clock = FakeClock()
    async with FundClient(demo_settings().client_config(), transport=recorder, clock=clock) as c:
        await c.get_vehicle("veh_demo1")
        clock.advance(3600 - 60 - 1)  # still 61 s left: the default leeway is 60 s
        await c.get_vehicle("veh_demo1")
        clock.advance(2)
        await c.get_vehicle("veh_demo1")
    first, second = recorder.tokens
    seen = [r.headers["Authorization"] for r in recorder.to("/v1/vehicles/veh_demo1")]
    assert seen == [f"Bearer {first}", f"Bearer {first}", f"Bearer {second}"]


# --- pagination ------------------------------------------------------------------------------


async def test_lists_follow_next_page_url_lazily(client, recorder):
    paginator = client.list_vehicles(limit=2)
    assert recorder.to("/v1/vehicles") == []  # nothing fetched before iteration
    seen = []
    async for v in paginator:
        seen.append(v.id)
        if len(seen) == 2:
            # the next page is not fetched before it is needed
            assert len(recorder.to("/v1/vehicles")) == 1
    assert sorted(seen) == ["veh_demo1", "veh_demo2", "veh_demo3"]
    calls = recorder.to("/v1/vehicles")
    assert len(calls) == 2
    assert calls[0].url.params["limit"] == "2"
    assert calls[1].url.params["page"].startswith("page_")
    assert calls[1].url.params["limit"] == "2"


async def test_pages_expose_cursors(client):
    pages = [page async for page in client.list_contacts(limit=2).pages()]
    assert [len(p.data) for p in pages] == [2, 2, 1]
    assert pages[0].next_page_url is not None
    assert pages[0].next_page_url.startswith("/v1/contacts?")
    assert "page=page_" in pages[0].next_page_url
    assert pages[1].previous_page_url is not None
    assert pages[-1].next_page_url is None


async def test_raw_pages_yield_the_json_pages(client):
    pages = [p async for p in client.raw_pages("/v1/financial_accounts", {"limit": 4})]
    assert [len(p["data"]) for p in pages] == [4, 2]
    assert all(p["object"] == "list" for p in pages)
    assert pages[-1]["next_page_url"] is None


async def test_ids_cannot_change_the_path(client, recorder):
    with pytest.raises(errors.NotFoundError):
        await client.get_entity("../organizations/org_x")
    assert recorder.requests[-1].url.raw_path == b"/v1/entities/..%2Forganizations%2Forg_x"


# --- creates ---------------------------------------------------------------------------------


async def test_create_sends_canonical_body_and_derived_key(client, recorder):
    body = [distribution("CANON")]
    await client.create_distributions([models.DistributionCreate.model_validate(body[0])])
    [request] = recorder.to("/v1/distributions", "POST")
    assert request.headers["Idempotency-Key"] == idempotency_key(
        "org_demo", "POST", "/v1/distributions", body
    )
    assert request.headers["Content-Type"] == "application/json"
    assert request.content == canonical_json(body).encode()


async def test_empty_create_is_refused_before_sending(client, recorder):
    with pytest.raises(ValueError, match="non-empty"):
        await client.create_entities([])
    assert recorder.to("/v1/entities", "POST") == []


async def test_caller_key_is_used_as_given(client, recorder):
    await client.create_distributions([distribution("KEYED")], idempotency_key="ledger-key-1")
    [request] = recorder.to("/v1/distributions", "POST")
    assert request.headers["Idempotency-Key"] == "ledger-key-1"


async def test_a_create_read_for_its_ids_gives_each_distribution_and_its_first_payment_page(
    client, recorder
):
    created = await client.create_distribution_ids(
        [distribution("IDS-1", payments=3), distribution("IDS-2", payments=101)]
    )
    assert [d.external_reference for d in created] == ["IDS-1", "IDS-2"]
    assert [d.more_payments for d in created] == [False, True]  # 101 payments: a page of 100
    for d in created:
        full = await client.get_distribution(d.id)
        assert d.payment_ids == [p.id for p in full.payments.data]
    # the same request as `create_distributions` sends (the same body, hence the same key)
    [request] = recorder.to("/v1/distributions", "POST")
    body = [distribution("IDS-1", payments=3), distribution("IDS-2", payments=101)]
    assert request.headers["Idempotency-Key"] == idempotency_key(
        "org_demo", "POST", "/v1/distributions", body
    )
