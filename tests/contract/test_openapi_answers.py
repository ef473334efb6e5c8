"""Answers that generated requests rarely or never meet match `schemas/openapi.yaml` too.

Rate limiting, idempotent replays and mismatches, offset mismatches, oversized and non-JSON
bodies, missing scopes, the token endpoint's errors, injected faults, the lifecycle driven by
the sandbox clock and the control routes themselves: each answer is checked against the
document (status, content type, headers, body), plus what the document cannot say alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from fastapi.testclient import TestClient
from schemathesis.specs.openapi import checks

from fundpipe.config import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET
from fundpipe.sandbox import SandboxConfig, create_app

OPENAPI_PATH = Path(__file__).resolve().parents[2] / "schemas" / "openapi.yaml"
SCHEMA = schemathesis.openapi.from_path(OPENAPI_PATH)
CONFORMANCE = [
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_headers_conformance,
    checks.response_schema_conformance,
]
REQUEST_ID = re.compile(r"^req_[A-Za-z0-9]+$")

#: The demo organization's read-only client (docs/architecture.md, "Demo organization").
READER = ("demo-reader", "reader-secret")

DISTRIBUTION = {
    "name": "Q4 income",
    "vehicle": "veh_demo1",
    "external_reference": "CONTRACT-Q4",
    "distribution_date": "2026-12-15T09:00:00",
    "distribution_timezone": "America/New_York",
    "payments": [
        {
            "amount": 125_000,
            "currency": "USD",
            "entity": "ent_demo1",
            "notifications": [{"contact": "cnt_demo1"}],
        },
        {
            "amount": 99,
            "currency": "USD",
            "entity": "ent_demo2",
            "distribution_date_override": "2026-12-16T09:00:00-05:00",
        },
    ],
}


def conforms(method: str, path: str, response: httpx.Response) -> dict[str, Any]:
    """Check `response` against the document's `method path` operation; return its JSON."""
    operation = SCHEMA[path][method]
    template = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(path))
    matched = re.fullmatch(template, response.request.url.path)
    assert matched is not None, (path, response.request.url.path)
    case = operation.Case(path_parameters=matched.groupdict())
    case.validate_response(response, checks=CONFORMANCE)
    assert REQUEST_ID.match(response.headers["Request-Id"])
    body: Any = response.json()
    if response.status_code >= 400 and "request_id" in body:
        assert body["request_id"] == response.headers["Request-Id"]
    return body if isinstance(body, dict) else {"body": body}


def token(
    client: TestClient, credentials: tuple[str, str] = (DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)
) -> dict[str, str]:
    """Bearer headers for `credentials`."""
    answer = client.post(
        "/oauth/token", data={"grant_type": "client_credentials"}, auth=credentials
    )
    conforms("POST", "/oauth/token", answer)
    return {"Authorization": f"Bearer {answer.json()['access_token']}"}


@pytest.fixture
def client() -> Iterator[TestClient]:
    """A fresh demo sandbox."""
    with TestClient(create_app(SandboxConfig(seed="demo"))) as test_client:
        yield test_client


def test_rate_limited_answer_carries_retry_after(client: TestClient) -> None:
    """Over the window: 429 with an integer `Retry-After` of at least one second."""
    client.put("/_sandbox/settings", json={"rate_limit_requests": 2, "rate_limit_window_s": 30})
    auth = token(client)
    statuses = [client.get("/v1/vehicles", headers=auth).status_code for _ in range(3)]
    assert statuses[-1] == 429
    answer = client.get("/v1/vehicles", headers=auth)
    body = conforms("GET", "/v1/vehicles", answer)
    assert body["code"] == "rate_limit_exceeded"
    assert int(answer.headers["Retry-After"]) >= 1


def test_idempotent_replay_and_mismatch_are_documented(client: TestClient) -> None:
    """Same key and body → the stored 201 marked replayed; same key, other body → 422."""
    auth = token(client) | {"Idempotency-Key": "contract-replay-1"}
    body = [{"name": "Replay Holdings LLC", "type": "llc"}]
    first = client.post("/v1/entities", json=body, headers=auth)
    created = conforms("POST", "/v1/entities", first)
    assert first.status_code == 201
    assert "Idempotent-Replayed" not in first.headers

    again = client.post("/v1/entities", json=body, headers=auth)
    assert conforms("POST", "/v1/entities", again) == created
    assert again.headers["Idempotent-Replayed"] == "true"

    other = client.post("/v1/entities", json=[{"name": "Other", "type": "llc"}], headers=auth)
    assert other.status_code == 422
    assert conforms("POST", "/v1/entities", other)["code"] == "idempotency_mismatch"


def test_offset_mismatch_alone_is_422_and_mixed_failures_are_400(client: TestClient) -> None:
    """A wrong offset alone → 422 `validation_error`; with other failures → 400 listing all."""
    auth = token(client)
    wrong_offset = DISTRIBUTION | {"distribution_date": "2026-12-15T09:00:00+00:00"}
    answer = client.post("/v1/distributions", json=[wrong_offset], headers=auth)
    body = conforms("POST", "/v1/distributions", answer)
    assert (answer.status_code, body["code"]) == (422, "validation_error")
    assert [p["name"] for p in body["invalid-params"]] == ["body.[0].distribution_date"]

    payments = [
        DISTRIBUTION["payments"][0],
        {"amount": 1.5, "currency": "USD", "entity": "ent_nope"},
    ]
    mixed = wrong_offset | {"payments": payments}
    answer = client.post("/v1/distributions", json=[mixed], headers=auth)
    body = conforms("POST", "/v1/distributions", answer)
    assert answer.status_code == 400
    names = {p["name"] for p in body["invalid-params"]}
    assert names == {
        "body.[0].distribution_date",
        "body.[0].payments.[1].amount",
        "body.[0].payments.[1].entity",
    }


def test_body_errors_413_and_415_are_documented() -> None:
    """A body over the size limit → 413; a body that is not JSON → 415."""
    with TestClient(create_app(SandboxConfig(max_body_bytes=1_000))) as small:
        auth = token(small)
        big = [{"name": "x" * 200, "type": "llc"}] * 10
        answer = small.post("/v1/entities", json=big, headers=auth)
        assert answer.status_code == 413
        conforms("POST", "/v1/entities", answer)

        answer = small.post(
            "/v1/contacts", content=b"name=x", headers=auth | {"Content-Type": "text/plain"}
        )
        assert answer.status_code == 415
        conforms("POST", "/v1/contacts", answer)


def test_authentication_and_scope_failures_are_documented(client: TestClient) -> None:
    """No token → 401; a read-only client writing → 403; an unknown id → 404."""
    answer = client.get("/v1/entities")
    assert answer.status_code == 401
    conforms("GET", "/v1/entities", answer)

    reader = token(client, READER)
    answer = client.post("/v1/entities", json=[{"name": "N", "type": "llc"}], headers=reader)
    assert answer.status_code == 403
    conforms("POST", "/v1/entities", answer)

    answer = client.get("/v1/entities/ent_doesnotexist", headers=reader)
    assert answer.status_code == 404
    conforms("GET", "/v1/entities/{ent_id}", answer)


@pytest.mark.parametrize(
    ("form", "auth", "status", "error"),
    [
        ({"grant_type": "client_credentials"}, (DEMO_CLIENT_ID, "wrong"), 401, "invalid_client"),
        (
            {"grant_type": "password"},
            (DEMO_CLIENT_ID, DEMO_CLIENT_SECRET),
            400,
            "unsupported_grant_type",
        ),
        ({"grant_type": "client_credentials", "scope": "vehicles:*"}, READER, 400, "invalid_scope"),
    ],
)
def test_token_errors_follow_rfc_6749_and_the_document(
    client: TestClient, form: dict[str, str], auth: tuple[str, str], status: int, error: str
) -> None:
    """Token errors carry the RFC 6749 `error` and the service's error object."""
    answer = client.post("/oauth/token", data=form, auth=auth)
    body = conforms("POST", "/oauth/token", answer)
    assert (answer.status_code, body["error"]) == (status, error)
    assert answer.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503])
def test_injected_faults_answer_as_documented(client: TestClient, status: int) -> None:
    """Every injected fault status is a documented answer of the service operations."""
    auth = token(client)
    faults = client.put(
        "/_sandbox/faults", json={"error_rate": 1, "statuses": [status], "retry_after_s": 2}
    )
    conforms("PUT", "/_sandbox/faults", faults)
    answer = client.get("/v1/financial_accounts/fa_demo1dep", headers=auth)
    assert answer.status_code == status
    conforms("GET", "/v1/financial_accounts/{fa_id}", answer)
    if status == 429:
        assert answer.headers["Retry-After"] == "2"
    conforms("DELETE", "/_sandbox/faults", client.delete("/_sandbox/faults"))


def test_lifecycle_records_match_the_document(client: TestClient) -> None:
    """A distribution created, executed by the clock and read back conforms at every step."""
    auth = token(client)
    created = client.post("/v1/distributions", json=[DISTRIBUTION], headers=auth)
    assert created.status_code == 201
    distribution = conforms("POST", "/v1/distributions", created)["data"][0]
    assert distribution["distribution_date"] == "2026-12-15T09:00:00-05:00"
    assert [p["status"] for p in distribution["payments"]["data"]] == ["staged", "staged"]

    moved = client.post("/_sandbox/clock/set", json={"now": "2027-01-05T00:00:00Z"})
    assert conforms("POST", "/_sandbox/clock/set", moved)["executed"] == [distribution["id"]]

    auth = token(client)  # the old token expired while the clock moved
    read = client.get(f"/v1/distributions/{distribution['id']}", headers=auth)
    executed = conforms("GET", "/v1/distributions/{dst_id}", read)
    assert executed["status"] == "executed"
    payments = client.get(f"/v1/distributions/{distribution['id']}/payments", headers=auth)
    paid = conforms("GET", "/v1/distributions/{dst_id}/payments", payments)["data"]
    assert [p["status"] for p in paid] == ["disbursed", "disbursed"]
    notes = client.get(f"/v1/distribution_payments/{paid[0]['id']}/notifications", headers=auth)
    conforms("GET", "/v1/distribution_payments/{dpmt_id}/notifications", notes)

    edited = client.patch(f"/_sandbox/distribution_payments/{paid[1]['id']}", json={"amount": 98})
    assert conforms("PATCH", "/_sandbox/distribution_payments/{dpmt_id}", edited)["amount"] == 98


def test_control_routes_answer_as_documented(client: TestClient) -> None:
    """Every control route's answer matches its documented shape."""
    calls: list[tuple[str, str, str, dict[str, Any] | None]] = [
        ("GET", "/_sandbox/clock", "/_sandbox/clock", None),
        ("POST", "/_sandbox/clock/advance", "/_sandbox/clock/advance", {"seconds": 60}),
        ("GET", "/_sandbox/faults", "/_sandbox/faults", None),
        ("GET", "/_sandbox/settings", "/_sandbox/settings", None),
        ("PUT", "/_sandbox/settings", "/_sandbox/settings", {"token_lifetime_s": 600}),
        ("GET", "/_sandbox/requests", "/_sandbox/requests", None),
        ("DELETE", "/_sandbox/requests", "/_sandbox/requests", None),
        (
            "POST",
            "/_sandbox/organizations",
            "/_sandbox/organizations",
            {"id": "org_other", "name": "Other"},
        ),
        (
            "POST",
            "/_sandbox/organizations",
            "/_sandbox/organizations",
            {"id": "org_other", "name": "Again"},
        ),
        (
            "POST",
            "/_sandbox/clients",
            "/_sandbox/clients",
            {"client_id": "other", "client_secret": "s3", "organizations": ["org_other"]},
        ),
        (
            "POST",
            "/_sandbox/vehicles",
            "/_sandbox/vehicles",
            {"organization": "org_other", "name": "Fund", "depository_cents": 100},
        ),
        (
            "POST",
            "/_sandbox/bulk_financial_accounts",
            "/_sandbox/bulk_financial_accounts",
            {"organization": "org_other", "vehicles": 2, "accounts_per_vehicle": 3},
        ),
        (
            "PATCH",
            "/_sandbox/financial_accounts/fa_demo1dep",
            "/_sandbox/financial_accounts/{fa_id}",
            {"available": 5},
        ),
        (
            "PATCH",
            "/_sandbox/financial_accounts/fa_nope",
            "/_sandbox/financial_accounts/{fa_id}",
            {"total": 5},
        ),
        ("POST", "/_sandbox/clock/set", "/_sandbox/clock/set", {"now": "2000-01-01T00:00:00Z"}),
        ("POST", "/_sandbox/reset", "/_sandbox/reset", {"seed": "empty"}),
    ]
    statuses = []
    for method, url, template, payload in calls:
        answer = client.request(method, url, json=payload)
        conforms(method, template, answer)
        statuses.append(answer.status_code)
    assert statuses == [200] * 7 + [201, 409, 201, 201, 201, 200, 404, 400, 200]


def test_request_log_and_rate_limit_scope_answer_as_documented(client: TestClient) -> None:
    """The request log and the per-organization rate-limit mode match their documented shapes."""
    client.get("/v1/vehicles", headers=token(client))
    logged = conforms("GET", "/_sandbox/request_log", client.get("/_sandbox/request_log"))
    assert [r["operation"] for r in logged["requests"]][-1] == "GET /v1/vehicles"
    cleared = client.delete("/_sandbox/request_log")
    assert conforms("DELETE", "/_sandbox/request_log", cleared) == {"requests": []}
    scoped = client.put("/_sandbox/settings", json={"rate_limit_scope": "client_org"})
    assert conforms("PUT", "/_sandbox/settings", scoped)["rate_limit_scope"] == "client_org"


def test_cancel_control_route_answers_as_documented(client: TestClient) -> None:
    """Cancelling: the cancelled distribution, 400 once executed, 404 when unknown."""
    auth = token(client)
    created = client.post("/v1/distributions", json=[DISTRIBUTION, DISTRIBUTION], headers=auth)
    first, second = conforms("POST", "/v1/distributions", created)["data"]
    template = "/_sandbox/distributions/{dst_id}/cancel"

    cancelled = conforms(
        "POST", template, client.post(f"/_sandbox/distributions/{first['id']}/cancel")
    )
    assert cancelled["status"] == "cancelled"
    assert [p["status"] for p in cancelled["payments"]["data"]] == ["cancelled", "cancelled"]

    moved = client.post("/_sandbox/clock/set", json={"now": "2027-01-05T00:00:00Z"})
    assert conforms("POST", "/_sandbox/clock/set", moved)["executed"] == [second["id"]]
    refused = client.post(f"/_sandbox/distributions/{second['id']}/cancel")
    assert refused.status_code == 400
    assert conforms("POST", template, refused)["code"] == "parameter_invalid"
    unknown = client.post("/_sandbox/distributions/dst_nope/cancel")
    assert unknown.status_code == 404
    conforms("POST", template, unknown)
