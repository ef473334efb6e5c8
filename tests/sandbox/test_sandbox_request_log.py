"""The request log (`GET|DELETE /_sandbox/request_log`) and the per-organization rate limit
(`rate_limit_scope`): what the multi-organization tests and benchmark read and set."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import httpx
import pytest
from sandbox_support import assert_error, bearer, make_client, param_names, token_for

from fundpipe.sandbox import SandboxConfig, create_app


@pytest.fixture
async def two_orgs() -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, str]]]:
    """A client of a sandbox with two demo organizations, and demo-client's token."""
    async with make_client(create_app(SandboxConfig(seed="demo", demo_orgs=2))) as client:
        yield client, bearer(await token_for(client, "demo-client", "demo-secret"))


async def test_request_log_names_each_requests_time_organization_and_operation(
    two_orgs: tuple[httpx.AsyncClient, dict[str, str]],
) -> None:
    client, writer = two_orgs
    await client.delete("/_sandbox/request_log")
    before = time.time()
    await client.get("/v1/vehicles", headers={**writer, "X-Organization-Id": "org_demo"})
    await client.get("/v1/vehicles", headers={**writer, "X-Organization-Id": "org_demob"})
    await client.get("/v1/distributions/dst_missing", headers=writer)
    await client.put("/_sandbox/faults", json={"error_rate": 1.0, "statuses": [503]})
    await client.get("/v1/entities", headers={**writer, "X-Organization-Id": "org_demob"})
    logged = (await client.get("/_sandbox/request_log")).json()["requests"]
    assert [(r["org_id"], r["operation"], r["status"]) for r in logged] == [
        ("org_demo", "GET /v1/vehicles", 200),
        ("org_demob", "GET /v1/vehicles", 200),
        (None, "GET /v1/distributions/dst_missing", 400),  # which organization?
        ("org_demob", "GET /v1/entities", 503),  # an injected fault is logged too
    ]
    for entry in logged:  # wall-clock seconds, so other processes' times compare
        assert before - 1 <= entry["started_s"] <= entry["ended_s"] <= time.time() + 1
    cleared = await client.delete("/_sandbox/request_log")
    assert cleared.json() == {"requests": []}
    assert (await client.get("/_sandbox/request_log")).json() == {"requests": []}


async def test_rate_limit_scope_client_org_gives_each_organization_its_own_quota(
    two_orgs: tuple[httpx.AsyncClient, dict[str, str]],
) -> None:
    client, writer = two_orgs
    demo = {**writer, "X-Organization-Id": "org_demo"}
    demob = {**writer, "X-Organization-Id": "org_demob"}
    await client.put(
        "/_sandbox/settings", json={"rate_limit_requests": 2, "rate_limit_window_s": 30}
    )
    # by default one client's requests share the quota, whichever organization they name
    shared = [(await client.get("/v1/vehicles", headers=h)).status_code for h in (demo, demob)]
    assert shared == [200, 200]
    assert_error(await client.get("/v1/vehicles", headers=demob), 429, "rate_limit_exceeded")

    settings = await client.put("/_sandbox/settings", json={"rate_limit_scope": "client_org"})
    assert settings.json()["rate_limit_scope"] == "client_org"
    statuses = {
        name: [(await client.get("/v1/vehicles", headers=h)).status_code for _ in range(3)]
        for name, h in (("org_demo", demo), ("org_demob", demob))
    }
    assert statuses == {"org_demo": [200, 200, 429], "org_demob": [200, 200, 429]}

    back = await client.put("/_sandbox/settings", json={"rate_limit_scope": "client"})
    assert "rate_limit_scope" not in back.json()  # the default reads as it always did
    wrong = await client.put("/_sandbox/settings", json={"rate_limit_scope": "org"})
    body = assert_error(wrong, 400, "parameter_invalid")
    assert param_names(body) == {"body.rate_limit_scope": "parameter_invalid"}


def test_rate_limit_scope_is_checked_in_the_config() -> None:
    with pytest.raises(ValueError, match="rate_limit_scope"):
        SandboxConfig(rate_limit_scope="everyone")  # type: ignore[arg-type]
