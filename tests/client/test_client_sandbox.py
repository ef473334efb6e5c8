"""The client against the real sandbox, in-process (ASGI) and over loopback HTTP."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from fundclient_helpers import LOGGERS, Capture, FakeClock, make_settings

from fundpipe.client import FundClient, errors, idempotency_key
from fundpipe.config import Settings
from fundpipe.sandbox import SandboxConfig, SandboxServer, create_app

SANDBOX_URL = "http://sandbox.test"


def demo_settings(base_url: str = SANDBOX_URL, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "base_url": base_url,
        "client_id": "demo-client",
        "client_secret": "demo-secret",
        "org_id": "org_demo",
        "max_attempts": 8,
    }
    values.update(overrides)
    return make_settings(**values)


def distribution(ref: str, payments: int = 1, notify: list[str] | None = None) -> dict[str, Any]:
    return {
        "name": f"Distribution {ref}",
        "vehicle": "veh_demo1",
        "distribution_date": "2026-12-15T09:00:00-05:00",
        "distribution_timezone": "America/New_York",
        "external_reference": ref,
        "payments": [
            {
                "amount": 10_000 + i,
                "currency": "USD",
                "entity": f"ent_demo{i % 5 + 1}",
                **({"notifications": [{"contact": c} for c in notify]} if notify else {}),
            }
            for i in range(payments)
        ],
    }


@pytest.fixture
def app() -> Any:
    return create_app(SandboxConfig())


@pytest.fixture
async def control(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=SANDBOX_URL) as c:
        yield c


@pytest.fixture
async def sandbox_client(app: Any) -> AsyncIterator[FundClient]:
    async with FundClient(
        demo_settings().client_config(), transport=httpx.ASGITransport(app=app)
    ) as c:
        yield c


async def set_faults(control: httpx.AsyncClient, **faults: Any) -> None:
    response = await control.put("/_sandbox/faults", json=faults)
    assert response.status_code == 200, response.text


class TokenRecorder(httpx.AsyncBaseTransport):
    """The network, plus a note of every access token the token endpoint hands out."""

    def __init__(self) -> None:
        self._network = httpx.AsyncHTTPTransport()
        self.tokens: set[str] = set()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._network.handle_async_request(request)
        if request.url.path.endswith("/oauth/token"):
            content = await response.aread()
            if response.status_code == 200:
                self.tokens.add(json.loads(content)["access_token"])
            return httpx.Response(response.status_code, headers=response.headers, content=content)
        return response

    async def aclose(self) -> None:
        await self._network.aclose()


def drop_once_seed() -> int:
    """A sampler seed under which the first committed create is dropped and its replay is not."""
    for seed in range(1000):
        rng = random.Random(seed)
        if rng.random() < 0.5 <= rng.random():
            return seed
    raise AssertionError("no seed found")


# --- in-process ------------------------------------------------------------------------------


async def test_every_list_paginates_completely(sandbox_client):
    c = sandbox_client
    [dst] = await c.create_distributions(
        [distribution("PAGES", payments=5, notify=["cnt_demo1", "cnt_demo2", "cnt_demo3"])]
    )
    dpmt = dst.payments.data[0].id

    async def ids(paginator) -> list[str]:
        return [item.id async for item in paginator]

    assert sorted(await ids(c.list_vehicles(limit=2))) == ["veh_demo1", "veh_demo2", "veh_demo3"]
    assert len(set(await ids(c.list_financial_accounts(limit=4)))) == 6
    assert sorted(await ids(c.list_vehicle_financial_accounts("veh_demo2", limit=1))) == [
        "fa_demo2brk",
        "fa_demo2dep",
    ]
    assert sorted(await ids(c.list_entities(limit=2))) == [f"ent_demo{i}" for i in range(1, 6)]
    assert sorted(await ids(c.list_contacts(limit=2))) == [f"cnt_demo{i}" for i in range(1, 6)]
    assert await ids(c.list_organizations(limit=1)) == ["org_demo"]
    assert await ids(c.list_distributions(limit=1)) == [dst.id]
    payments = [p async for p in c.list_distribution_payments(dst.id, limit=2)]
    assert [p.amount for p in payments] == [10_000, 10_001, 10_002, 10_003, 10_004]
    notes = [n async for n in c.list_payment_notifications(dpmt, limit=2)]
    assert sorted(n.contact for n in notes) == ["cnt_demo1", "cnt_demo2", "cnt_demo3"]
    assert len(await ids(c.list_entity_payment_instructions("ent_demo1", limit=1))) >= 1
    pages = [p async for p in c.list_financial_accounts(limit=4).pages()]
    assert [len(p.data) for p in pages] == [4, 2]
    subset = await ids(c.list_financial_accounts(ids=["fa_demo1dep", "fa_demo3brk"], limit=1))
    assert sorted(subset) == ["fa_demo1dep", "fa_demo3brk"]


async def test_every_read_and_create_parses(sandbox_client):
    c = sandbox_client
    assert (await c.get_organization("org_demo")).name == "Demo Fund Administration"
    assert (await c.get_vehicle("veh_demo1")).organization == "org_demo"
    account = await c.get_financial_account("fa_demo1dep")
    assert account.balance.total == 500_000_000
    entity = await c.get_entity("ent_demo1")
    assert entity.sender_payment_instructions_url == "/v1/entities/ent_demo1/payment_instructions"
    pmi = await c.get_payment_instructions(entity.payment_instructions[0])
    assert pmi.entity == "ent_demo1"
    [new_entity] = await c.create_entities(
        [{"name": "New LLC", "type": "llc", "external_reference": "E-NEW"}]
    )
    [contact] = await c.create_contacts([{"name": "Jo", "email": "jo@example.com"}])
    [linked] = await c.associate_contacts(new_entity.id, [contact.id])
    assert new_entity.id in linked.entities
    assert new_entity.id in (await c.get_contact(contact.id)).entities
    [epi] = await c.create_payment_instructions(
        [
            {
                "entity": new_entity.id,
                "payment_instructions": [
                    {"type": "ach", "account_number": "000123456789", "routing_number": "021000021"}
                ],
            }
        ]
    )
    stored = await c.get_payment_instructions(epi.payment_instructions[0])
    assert stored.account_number_last_four == "6789"
    [dst] = await c.create_distributions([distribution("READS")])
    assert dst.distribution_date.utcoffset().total_seconds() == -5 * 3600
    assert (await c.get_distribution(dst.id)).payments.data[0].amount == 10_000


async def test_server_error_bursts_are_ridden_out(sandbox_client, control):
    await set_faults(control, error_rate=0.5, statuses=[500, 502, 503], seed=11)
    vehicles = [v.id async for v in sandbox_client.list_vehicles(limit=1)]
    [dst] = await sandbox_client.create_distributions([distribution("BURST")])
    await set_faults(control)
    assert len(vehicles) == 3
    refs = [d.external_reference async for d in sandbox_client.list_distributions()]
    assert refs.count("BURST") == 1
    assert dst.external_reference == "BURST"


async def test_injected_429_with_retry_after_is_retried_and_pauses_the_client(
    sandbox_client, control, caplog
):
    await set_faults(control, error_rate=0.5, statuses=[429], retry_after_s=2, seed=3)
    with caplog.at_level(logging.WARNING, logger="fundpipe.client"):
        accounts = [a.id async for a in sandbox_client.list_financial_accounts(limit=1)]
    assert len(accounts) == 6
    assert "(429 rate_limit_exceeded); retry" in caplog.text
    assert "in 2.00 s" in caplog.text


async def test_commit_then_drop_is_replayed_and_creates_one_batch(sandbox_client, control, caplog):
    await set_faults(
        control, drop_after_commit_rate=0.5, seed=drop_once_seed(), path_prefix="/v1/distributions"
    )
    body = [distribution("DROP-1"), distribution("DROP-2")]
    with caplog.at_level(logging.DEBUG, logger="fundpipe.client"):
        created = await sandbox_client.create_distributions(body)
    await set_faults(control)
    assert "RemoteProtocolError" in caplog.text or "SimulatedDisconnect" in caplog.text
    assert "idempotent replay" in caplog.text
    refs = [d.external_reference async for d in sandbox_client.list_distributions()]
    assert sorted(refs) == ["DROP-1", "DROP-2"]
    assert [d.external_reference for d in created] == ["DROP-1", "DROP-2"]


async def test_reused_key_with_another_body_is_a_fatal_mismatch(sandbox_client):
    key = idempotency_key("org_demo", "POST", "/v1/distributions", [distribution("MISMATCH")])
    await sandbox_client.create_distributions([distribution("MISMATCH")], idempotency_key=key)
    with pytest.raises(errors.IdempotencyMismatchError) as info:
        await sandbox_client.create_distributions([distribution("OTHER")], idempotency_key=key)
    assert info.value.status == 422
    assert info.value.request_id
    assert info.value.request_id.startswith("req_")


async def test_sandbox_errors_become_typed_errors(sandbox_client):
    with pytest.raises(errors.NotFoundError):
        await sandbox_client.get_vehicle("veh_nope")
    with pytest.raises(errors.InvalidRequestError) as info:
        await sandbox_client.create_distributions([{**distribution("BAD"), "vehicle": "nope"}])
    assert any(p.name.startswith("body.[0]") for p in info.value.invalid_params)
    bad_offset = {**distribution("OFFSET"), "distribution_date": "2026-12-15T09:00:00+01:00"}
    with pytest.raises(errors.UnprocessableEntityError):
        await sandbox_client.create_distributions([bad_offset])


async def test_read_only_client_is_refused_writes(app):
    settings = demo_settings(
        client_id="demo-reader",
        client_secret="reader-secret",
        scopes="vehicles:read distributions:read",
    )
    async with FundClient(
        settings.client_config(), transport=httpx.ASGITransport(app=app)
    ) as reader:
        assert len([v async for v in reader.list_vehicles()]) == 3
        with pytest.raises(errors.PermissionDeniedError):
            await reader.create_distributions([distribution("NOPE")])


async def test_token_expiring_mid_pagination_is_refetched_transparently(sandbox_client, control):
    seen = []
    async for account in sandbox_client.list_financial_accounts(limit=2):
        seen.append(account.id)
        if len(seen) == 2:  # the service's clock moves past the token's lifetime
            response = await control.post("/_sandbox/clock/advance", json={"seconds": 3601})
            assert response.status_code == 200
    assert len(set(seen)) == 6
    assert sandbox_client.token_fetches == 2


async def test_short_lived_token_is_renewed_before_expiry_mid_pagination(app, control):
    response = await control.put("/_sandbox/settings", json={"token_lifetime_s": 120})
    assert response.status_code == 200
    clock = FakeClock()
    async with FundClient(
        demo_settings().client_config(), transport=httpx.ASGITransport(app=app), clock=clock
    ) as c:
        seen = []
        async for account in c.list_financial_accounts(limit=2):
            seen.append(account.id)
            if len(seen) % 2 == 0:
                clock.advance(61)  # past half the 120 s lifetime: renew before the next page
        assert len(set(seen)) == 6
        assert c.token_fetches == 3


# --- over loopback HTTP ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[SandboxServer]:
    with SandboxServer(SandboxConfig()) as running:
        yield running


@pytest.fixture
async def loop_control(server: SandboxServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.base_url) as c:
        yield c
        await c.delete("/_sandbox/faults")


async def test_loopback_commit_then_drop_creates_exactly_one_batch(server, loop_control, caplog):
    await set_faults(
        loop_control,
        drop_after_commit_rate=0.5,
        seed=drop_once_seed(),
        path_prefix="/v1/distributions",
    )
    async with FundClient(demo_settings(server.base_url).client_config()) as c:
        with caplog.at_level(logging.DEBUG, logger="fundpipe.client"):
            [dst] = await c.create_distributions([distribution("LOOP-DROP")])
        await set_faults(loop_control)
        refs = [d.external_reference async for d in c.list_distributions()]
    assert "idempotent replay" in caplog.text
    assert refs.count("LOOP-DROP") == 1
    assert dst.external_reference == "LOOP-DROP"


async def test_loopback_latency_beyond_the_read_timeout_is_a_connection_error(server, loop_control):
    await set_faults(loop_control, latency_ms=400, path_prefix="/v1/vehicles")
    async with FundClient(
        demo_settings(server.base_url, read_timeout_s=0.1, max_attempts=2).client_config()
    ) as c:
        with pytest.raises(errors.ServiceConnectionError, match="ReadTimeout") as info:
            await c.get_vehicle("veh_demo1")
        assert info.value.attempt == 2
        await set_faults(loop_control, latency_ms=20, path_prefix="/v1/vehicles")
        assert (await c.get_vehicle("veh_demo1")).id == "veh_demo1"


async def test_loopback_bursts_and_429s_are_ridden_out(server, loop_control):
    await set_faults(
        loop_control,
        error_rate=0.4,
        statuses=[500, 502, 503, 429],
        retry_after_s=1,
        seed=5,
        path_prefix="/v1/financial_accounts",
    )
    async with FundClient(demo_settings(server.base_url).client_config()) as c:
        accounts = [a.id async for a in c.list_financial_accounts(limit=1)]
    assert len(set(accounts)) == 6


async def test_loopback_scenarios_at_debug_leak_no_secret(server, loop_control):
    secret = "loop-Secr3t-7c1d9e2f"
    account_number = "987650001234"
    response = await loop_control.post(
        "/_sandbox/clients",
        json={"client_id": "leak-check", "client_secret": secret, "organizations": ["org_demo"]},
    )
    assert response.status_code == 201, response.text
    handler = Capture()
    levels = {}
    for name in LOGGERS:
        levels[name] = logging.getLogger(name).level
        logging.getLogger(name).setLevel(logging.DEBUG)
        logging.getLogger(name).addHandler(handler)
    recorder = TokenRecorder()
    tokens = recorder.tokens
    raised: list[BaseException] = []
    try:
        async with FundClient(
            demo_settings(
                server.base_url, client_id="leak-check", client_secret=secret
            ).client_config(),
            transport=recorder,
        ) as c:
            await c.get_vehicle("veh_demo1")
            await c.create_payment_instructions(
                [
                    {
                        "entity": "ent_demo3",
                        "payment_instructions": [
                            {
                                "type": "ach",
                                "account_number": account_number,
                                "routing_number": "021000021",
                            }
                        ],
                    }
                ]
            )
            await loop_control.post("/_sandbox/clock/advance", json={"seconds": 3601})
            await c.get_vehicle("veh_demo1")  # 401 → re-fetch → replay
            await set_faults(
                loop_control, error_rate=1.0, statuses=[502], path_prefix="/v1/vehicles"
            )
            with pytest.raises(errors.APIServerError) as info:
                await c.get_vehicle("veh_demo1")
            raised.append(info.value)
        async with FundClient(
            demo_settings(
                server.base_url, client_id="leak-check", client_secret="not-" + secret
            ).client_config()
        ) as bad:
            with pytest.raises(errors.AuthenticationError) as info2:
                await bad.get_organization("org_demo")
            raised.append(info2.value)
    finally:
        for name in LOGGERS:
            logging.getLogger(name).removeHandler(handler)
            logging.getLogger(name).setLevel(levels[name])
    assert len(tokens) == 2
    assert all(tokens)
    assert any(
        "httpcore" in line for line in handler.lines
    )  # the transport's DEBUG lines were captured
    texts = handler.lines + [str(e) for e in raised] + [repr(e) for e in raised]
    for text in texts:
        for forbidden in (secret, account_number, *tokens):
            assert forbidden not in text, text[:300]
