"""The sandbox answers every request the way `schemas/openapi.yaml` says the service does.

Schemathesis generates valid and invalid requests from the document for every service operation
(the `/_sandbox/` control routes are left out) and sends them in-process to the sandbox's ASGI
app with the demo client's token. A test fails on a 5xx, an undocumented status, a body or
header that does not match the document, or invalid data the sandbox accepts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import uuid4

import jsonschema
import pytest
import schemathesis
import yaml
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig
from schemathesis.core.parameters import ParameterLocation

from fundpipe.config import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, DEMO_ORG_ID
from fundpipe.sandbox import SandboxConfig, create_app

OPENAPI_PATH = Path(__file__).resolve().parents[2] / "schemas" / "openapi.yaml"

#: Examples per operation and generation mode in the fuzzing phase (the coverage phase adds its
#: deterministic boundary cases on top): enough to meet every documented status, small enough
#: that the file runs in well under a minute on two busy cores.
MAX_EXAMPLES = 8

CONFIG = SchemathesisConfig.from_dict(
    {
        # No undeclared query parameters or headers: the service ignores them (the document
        # cannot forbid them), so sending them would only test the generator.
        "generation": {
            "mode": "all",
            "max-examples": MAX_EXAMPLES,
            "database": "none",
            "allow-extra-parameters": False,
        },
        "phases": {"stateful": {"enabled": False}},
        # Positive data may still be refused (unknown ids, no such entity): that is documented.
        "checks": {"positive_data_acceptance": {"enabled": False}},
        "operations": [
            {
                # A nested body of up to 1,000 payments: random negative mutations take seconds
                # each, so fuzzing stays positive and short; the coverage phase still sends
                # every field's invalid boundary values.
                "include-path": "/v1/distributions",
                "include-method": "POST",
                "generation": {"mode": "positive", "max-examples": 5},
            },
            {
                # Instructions are free-form (no input validation): arbitrary JSON is slow to draw.
                "include-path": "/v1/payment_instructions",
                "include-method": "POST",
                "generation": {"max-examples": 5},
            },
        ],
    }
)

SCHEMA = schemathesis.openapi.from_path(OPENAPI_PATH, config=CONFIG).exclude(tag="sandbox")

_DOCUMENT = yaml.safe_load(OPENAPI_PATH.read_text(encoding="utf-8"))
_ORGANIZATION_ID = _DOCUMENT["components"]["schemas"]["OrganizationId"]
_IDEMPOTENCY_KEY = _DOCUMENT["components"]["parameters"]["Idempotency-Key"]["schema"]


def _is_valid(value: Any, schema: dict[str, Any]) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def steer_headers(case: schemathesis.Case) -> None:
    """Point generated headers at the demo organization and a fresh idempotency key.

    A random but well-formed `X-Organization-Id` only ever meets 403, and a reused
    `Idempotency-Key` meets 422 before the body is read: either would hide the body's
    validation from the test. Malformed header values (negative cases about the headers) are
    sent as generated, except when the case is negative elsewhere (query, path or body):
    then the headers are made valid so that the other part is what the sandbox judges.
    """
    headers = case.headers
    if not headers:
        return
    meta = case.meta
    negative_elsewhere = meta is not None and any(
        meta.is_negative_at(location)
        for location in (ParameterLocation.BODY, ParameterLocation.QUERY, ParameterLocation.PATH)
    )
    org = headers.get("X-Organization-Id")
    if org is not None and (negative_elsewhere or _is_valid(org, _ORGANIZATION_ID)):
        headers["X-Organization-Id"] = DEMO_ORG_ID
    key = headers.get("Idempotency-Key")
    if key is not None and (negative_elsewhere or _is_valid(key, _IDEMPOTENCY_KEY)):
        headers["Idempotency-Key"] = f"contract-{uuid4().hex}"


class Sandbox:
    """A seeded in-process sandbox and a token of its demo client."""

    def __init__(self) -> None:
        # A high quota: the contract run must never meet the rate limit by accident.
        self.app = create_app(SandboxConfig(seed="demo", rate_limit_requests=1_000_000))
        with TestClient(self.app) as client:
            answer = client.post(
                "/oauth/token",
                data={"grant_type": "client_credentials"},
                auth=(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET),
            )
        assert answer.status_code == 200, answer.text
        self.token: str = answer.json()["access_token"]

    def headers_for(self, case: schemathesis.Case) -> dict[str, str]:
        """The bearer token for API operations; nothing extra for the token exchange."""
        if case.operation.path == "/oauth/token":
            return {}
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    """One sandbox for the whole module (creates accumulate; nothing reads a fixed count)."""
    return Sandbox()


@SCHEMA.parametrize()
@settings(
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
    ],
)
def test_sandbox_conforms_to_openapi(case: schemathesis.Case, sandbox: Sandbox) -> None:
    """Every answer to generated requests is documented: status, headers and body."""
    steer_headers(case)
    kwargs: dict[str, Any] = {"app": sandbox.app}
    case.call_and_validate(headers=sandbox.headers_for(case), **kwargs)
