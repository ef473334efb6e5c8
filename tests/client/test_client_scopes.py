"""Token scopes: none sent unless configured; a missing scope is named in plain words."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest
from fundclient_helpers import error_body, make_settings
from test_client_sandbox import demo_settings, distribution

from fundpipe.client import FundClient, errors
from fundpipe.client._scopes import scope_for
from fundpipe.config import Settings
from fundpipe.sandbox import SandboxConfig, create_app


def token_form(service: Any) -> dict[str, list[str]]:
    return parse_qs(service["token"].calls.last.request.content.decode())


async def test_no_scope_is_requested_unless_configured(client, service):
    service.get("/v1/vehicles/veh_1").mock(return_value=httpx.Response(200, json={"id": "veh_1"}))
    await client.get_vehicle("veh_1")
    form = token_form(service)
    assert form["grant_type"] == ["client_credentials"]
    assert "scope" not in form


async def test_configured_scopes_are_requested_space_separated(service, monkeypatch):
    monkeypatch.setenv("FUNDPIPE_SCOPES", "entities:write,  distributions:*")
    settings = make_settings()
    assert settings.service.scopes == "entities:write distributions:*"
    service.get("/v1/vehicles/veh_1").mock(return_value=httpx.Response(200, json={"id": "veh_1"}))
    async with FundClient(
        settings.client_config(), transport=httpx.MockTransport(service.async_handler)
    ) as c:
        await c.get_vehicle("veh_1")
    assert token_form(service)["scope"] == ["entities:write distributions:*"]


def test_scopes_setting_reads_the_environment(monkeypatch):
    monkeypatch.setenv("FUNDPIPE_SCOPES", "vehicles:read")
    assert Settings(_env_file=None).service.scopes == "vehicles:read"  # type: ignore[call-arg]
    monkeypatch.setenv("FUNDPIPE_SCOPES", "  ")
    assert Settings(_env_file=None).service.scopes is None  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("method", "path", "scope"),
    [
        ("GET", "/v1/entities", "entities:read"),
        ("POST", "/v1/entities", "entities:write"),
        ("POST", "/v1/payment_instructions", "entities:write"),
        ("GET", "/payment_instructions/pmi_1", "entities:read"),
        ("POST", "/v1/entities/ent_1/contacts", "entities:write"),
        ("POST", "/v1/contacts", "contacts:write"),
        ("GET", "/v1/financial_accounts/fa_1", "financial_accounts:read"),
        ("GET", "/v1/vehicles/veh_1/financial_accounts", "financial_accounts:read"),
        ("GET", "/v1/vehicles/veh_1", "vehicles:read"),
        ("GET", "/v1/distribution_payments/dpmt_1/notifications", "distributions:read"),
        ("POST", "/v1/distributions", "distributions:write"),
        ("POST", "/oauth/token", None),
    ],
)
def test_each_operation_names_its_documented_scope(method, path, scope):
    assert scope_for(method, path) == scope


async def test_sandbox_403_names_the_missing_scope():
    app = create_app(SandboxConfig())
    settings = demo_settings(client_id="demo-reader", client_secret="reader-secret")
    async with FundClient(
        settings.client_config(), transport=httpx.ASGITransport(app=app)
    ) as reader:
        with pytest.raises(errors.MissingScopeError) as info:
            await reader.create_distributions([distribution("NOPE")])
    err = info.value
    assert err.scope == "distributions:write"
    assert err.status == 403
    assert (
        "the client is not granted scope 'distributions:write'; ask the service administrator "
        "or set FUNDPIPE_SCOPES" in str(err)
    )


async def test_sandbox_invalid_scope_names_the_scopes_asked_for():
    app = create_app(SandboxConfig())
    settings = demo_settings(
        client_id="demo-reader", client_secret="reader-secret", scopes="entities:write"
    )
    async with FundClient(
        settings.client_config(), transport=httpx.ASGITransport(app=app)
    ) as reader:
        with pytest.raises(errors.InvalidScopeError) as info:
            await reader.create_entities([{"name": "A", "type": "llc"}])
    err = info.value
    assert err.status == 400
    assert err.error is not None
    assert err.error["error"] == "invalid_scope"  # RFC 6749 §5.2 beside the error object
    assert err.scopes == ("entities:write",)
    assert err.scope == "entities:write"
    assert "refused the requested scopes 'entities:write'" in str(err)
    assert "set FUNDPIPE_SCOPES" in str(err)


async def test_a_bare_403_names_the_operations_documented_scope(client, service):
    service.post("/v1/payment_instructions").mock(return_value=httpx.Response(403))
    with pytest.raises(errors.MissingScopeError) as info:
        await client.create_payment_instructions(
            [{"entity": "ent_1", "payment_instructions": [{"type": "ach"}]}]
        )
    assert info.value.scope == "entities:write"
    assert "needs scope 'entities:write'" in str(info.value)
    assert "FUNDPIPE_SCOPES" in str(info.value)


async def test_www_authenticate_insufficient_scope_is_read(client, service):
    service.get("/v1/contacts").mock(
        return_value=httpx.Response(
            403,
            json=error_body(403, "permission_error", "forbidden", message="Forbidden"),
            headers={
                "WWW-Authenticate": 'Bearer error="insufficient_scope", scope="contacts:read"'
            },
        )
    )
    with pytest.raises(errors.MissingScopeError) as info:
        await client.list_contacts().to_list()
    assert info.value.scope == "contacts:read"
    assert "not granted scope 'contacts:read'" in str(info.value)


async def test_a_403_about_the_organization_is_not_called_a_scope(client, service):
    service.get("/v1/entities").mock(
        return_value=httpx.Response(
            403,
            json=error_body(
                403,
                "permission_error",
                "forbidden",
                message="This client cannot act for that organization.",
            ),
        )
    )
    with pytest.raises(errors.PermissionDeniedError) as info:
        await client.list_entities().to_list()
    assert not isinstance(info.value, errors.MissingScopeError)
    assert "organization" in str(info.value)
