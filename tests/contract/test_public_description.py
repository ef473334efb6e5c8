"""Issue 34's proof: Schemathesis' stateless and stateful phases, on the service's older public
OpenAPI description, against the strict public-forms sandbox (in process, ASGI).

The document is `tests/worlds/public_description.yaml`: the public description's operations
where the interface leaves bodies or records unshown (create entities, contacts and payment
instructions; read an entity or a contact), with the interface's amendments marked in it.
A test fails on a schema-valid request the sandbox refuses (`positive_data_acceptance`), on an
answer whose status, headers or body the document does not describe, or on a 5xx.

Steered, as `test_openapi.py` steers them, because a generator cannot know them: the
organization header names the demo organization, every Idempotency-Key is fresh, and a
payment instruction names an existing entity (the public input takes any string). 409 counts
as an answer to valid data: the public description documents it for these creates (a
reference an existing object already holds, in strict mode).
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

from fundpipe.config import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, DEMO_ORG_ID
from fundpipe.sandbox import SandboxConfig, create_app
from worlds.public_proxy import DESCRIPTION

#: Examples per operation: enough for every form the inputs allow, small enough that the
#: file runs in seconds.
MAX_EXAMPLES = 6

CONFIG = SchemathesisConfig.from_dict(
    {
        "generation": {
            "mode": "positive",
            "max-examples": MAX_EXAMPLES,
            "database": "none",
            "allow-extra-parameters": False,
        },
        "phases": {"stateful": {"enabled": True, "max-steps": 6}},
        "checks": {
            "positive_data_acceptance": {"expected-statuses": ["2xx", "401", "403", "404", "409"]}
        },
    }
)

SCHEMA = schemathesis.openapi.from_path(DESCRIPTION, config=CONFIG).exclude(
    path="/v1/distributions"  # its body is the interface's: tests/contract/test_openapi.py
)


def _sandbox() -> tuple[Any, str]:
    """A strict public-forms sandbox and a token of its demo client."""
    app = create_app(
        SandboxConfig(strict_interface=True, public_forms=True, rate_limit_requests=1_000_000)
    )
    with TestClient(app) as client:
        answer = client.post(
            "/oauth/token",
            data={"grant_type": "client_credentials"},
            auth=(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET),
        )
    assert answer.status_code == 200, answer.text
    return app, answer.json()["access_token"]


#: The stateless phase's sandbox (creates accumulate; nothing reads a fixed count).
APP, TOKEN = _sandbox()


def steer(case: schemathesis.Case, app: Any = APP, token: str = TOKEN) -> dict[str, Any]:
    """Point the case at the demo organization and fresh keys; the call's keyword arguments."""
    headers = case.headers if case.headers is not None else {}
    if "X-Organization-Id" in headers:
        headers["X-Organization-Id"] = DEMO_ORG_ID
    if "Idempotency-Key" in headers:
        headers["Idempotency-Key"] = f"public-{uuid4().hex}"
    if case.operation.path == "/v1/payment_instructions" and isinstance(case.body, list):
        for element in case.body:
            if isinstance(element, dict):
                element["entity"] = "ent_demo2"
    return {"app": app, "headers": {"Authorization": f"Bearer {token}"}}


@SCHEMA.parametrize()
@settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_the_public_forms_sandbox_conforms_to_the_public_description(
    case: schemathesis.Case,
) -> None:
    """Stateless: every generated valid request is taken and answered as documented."""
    case.call_and_validate(**steer(case))


class PublicForms(SCHEMA.as_state_machine()):  # type: ignore[misc]
    """Stateful: creates followed by reads of what they created (the document's links).

    Each scenario meets a fresh sandbox, so that replaying one (Hypothesis does, to shrink)
    meets the same answers: a shared one would make the scenario depend on earlier ones.
    """

    def setup(self) -> None:
        self.app, self.token = _sandbox()

    def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
        return steer(case, self.app, self.token)


TestPublicFormsStateful = PublicForms.TestCase
TestPublicFormsStateful.settings = settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    stateful_step_count=6,
    suppress_health_check=list(HealthCheck),
)
