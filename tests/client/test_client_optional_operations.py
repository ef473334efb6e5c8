"""Guessed operations take their paths from settings and say so when unserved; PMI read path."""

from __future__ import annotations

import httpx
import pytest
from fundclient_helpers import envelope, error_body, make_settings
from pydantic import ValidationError
from test_client_sandbox import demo_settings

from fundpipe.client import FundClient, errors
from fundpipe.config import DEFAULT_PATHS, Settings
from fundpipe.sandbox import SandboxConfig, create_app

PMI = {"object": "payment_instructions", "id": "pmi_1", "entity": "ent_1"}


def not_found(message: str) -> httpx.Response:
    return httpx.Response(
        404, json=error_body(404, "not_found_error", "resource_not_found", message=message)
    )


# --- payment instructions read path ----------------------------------------------------------


async def test_payment_instructions_are_read_at_the_interfaces_path(client, service):
    written = service.get("/payment_instructions/pmi_1").mock(
        return_value=httpx.Response(200, json=PMI)
    )
    v1 = service.get("/v1/payment_instructions/pmi_1")
    assert (await client.get_payment_instructions("pmi_1")).entity == "ent_1"
    assert written.call_count == 1
    assert v1.call_count == 0


async def test_payment_instructions_fall_back_to_v1_once_and_remember_it(client, service):
    written = service.get("/payment_instructions/pmi_1").mock(
        return_value=not_found("No route /payment_instructions/pmi_1.")
    )
    v1 = service.get("/v1/payment_instructions/pmi_1").mock(
        return_value=httpx.Response(200, json=PMI)
    )
    assert (await client.get_payment_instructions("pmi_1")).id == "pmi_1"
    assert (await client.get_payment_instructions("pmi_1")).id == "pmi_1"
    assert written.call_count == 1  # the /v1 path answered: it is tried first from then on
    assert v1.call_count == 2


async def test_payment_instructions_missing_at_both_paths_is_not_found(client, service):
    service.get("/payment_instructions/pmi_9").mock(return_value=not_found("No such pmi_9"))
    service.get("/v1/payment_instructions/pmi_9").mock(return_value=not_found("No such pmi_9"))
    with pytest.raises(errors.NotFoundError):
        await client.get_payment_instructions("pmi_9")


# --- paths from settings ---------------------------------------------------------------------


def test_paths_default_to_the_design_and_are_overridable_by_name(monkeypatch):
    assert make_settings().service.paths == DEFAULT_PATHS
    monkeypatch.setenv("FUNDPIPE_PATHS", '{"vehicles": "/v2/funds"}')
    paths = Settings(_env_file=None).service.paths  # type: ignore[call-arg]
    assert paths["vehicles"] == "/v2/funds"
    assert paths["vehicle"] == "/v1/vehicles/{veh_id}"


@pytest.mark.parametrize(
    "paths",
    [{"vehicels": "/v1/vehicles"}, {"vehicle": "/v1/vehicles"}, {"vehicles": "v1/vehicles"}],
)
def test_bad_paths_are_refused(paths):
    with pytest.raises(ValidationError):
        make_settings(paths=paths)


async def test_configured_paths_are_used(service):
    settings = make_settings(
        paths={
            "vehicles": "/v2/funds",
            "vehicle": "/v2/funds/{veh_id}",
            "entity_contacts": "/v2/entities/{ent_id}/links",
        }
    )
    funds = service.get("/v2/funds").mock(
        return_value=httpx.Response(200, json=envelope([{"id": "veh_1"}]))
    )
    fund = service.get("/v2/funds/veh_1").mock(
        return_value=httpx.Response(200, json={"id": "veh_1"})
    )
    links = service.post("/v2/entities/ent_1/links").mock(
        return_value=httpx.Response(201, json=envelope([{"id": "cnt_1"}]))
    )
    async with FundClient(
        settings.client_config(), transport=httpx.MockTransport(service.async_handler)
    ) as c:
        assert [v.id for v in await c.list_vehicles().to_list()] == ["veh_1"]
        assert (await c.get_vehicle("veh_1")).id == "veh_1"
        assert [x.id for x in await c.associate_contacts("ent_1", ["cnt_1"])] == ["cnt_1"]
        assert await c.associate_contact_ids("ent_1", ["cnt_1"]) == ["cnt_1"]
        assert c.path_of("vehicle", veh_id="a/b") == "/v2/funds/a%2Fb"
    assert (funds.call_count, fund.call_count, links.call_count) == (1, 1, 2)


# --- unserved guessed operations -------------------------------------------------------------


@pytest.mark.parametrize("status", [404, 405, 501])
async def test_unserved_lists_are_operation_unavailable(client, service, status):
    for path in ("/v1/vehicles", "/v1/organizations", "/v1/financial_accounts"):
        service.get(path).mock(
            return_value=httpx.Response(status, json=error_body(status, "x", "y", message="nope"))
        )
    for paginator, operation in (
        (client.list_vehicles(), "vehicles"),
        (client.list_organizations(), "organizations"),
        (client.list_financial_accounts(ids=["fa_1"]), "financial_accounts"),
    ):
        with pytest.raises(errors.OperationUnavailableError) as info:
            await paginator.to_list()
        assert info.value.operation == operation
        assert info.value.status == status
        assert "FUNDPIPE_PATHS" in str(info.value)
    with pytest.raises(errors.OperationUnavailableError):
        [p async for p in client.raw_pages("/v1/vehicles", operation="vehicles")]


async def test_a_missing_resource_of_a_served_operation_stays_not_found(client, service):
    service.get("/v1/vehicles/veh_1").mock(return_value=not_found("No such vehicle: veh_1"))
    service.get("/v1/organizations/org_1").mock(return_value=not_found("No route /v1/organ…"))
    service.post("/v1/entities/ent_1/contacts").mock(return_value=httpx.Response(405))
    with pytest.raises(errors.NotFoundError):
        await client.get_vehicle("veh_1")
    with pytest.raises(errors.OperationUnavailableError):
        await client.get_organization("org_1")
    with pytest.raises(errors.OperationUnavailableError) as info:
        await client.associate_contacts("ent_1", ["cnt_1"])
    assert info.value.operation == "associate_contacts"
    with pytest.raises(errors.OperationUnavailableError) as info:
        await client.associate_contact_ids("ent_1", ["cnt_1"])
    assert info.value.operation == "associate_contacts"


async def test_an_association_answer_read_for_its_ids_names_a_record_without_one(client, service):
    service.post("/v1/entities/ent_1/contacts").mock(
        return_value=httpx.Response(201, json=envelope([{"id": "cnt_1"}, {"name": "no id"}]))
    )
    with pytest.raises(errors.ResponseDecodeError, match="POST /v1/entities/ent_1/contacts"):
        await client.associate_contact_ids("ent_1", ["cnt_1", "cnt_2"])


async def test_documented_operations_never_become_unavailable(client, service):
    service.get("/v1/vehicles/veh_1/financial_accounts").mock(
        return_value=not_found("No route /v1/vehicles/veh_1/financial_accounts.")
    )
    with pytest.raises(errors.NotFoundError) as info:
        await client.list_vehicle_financial_accounts("veh_1").to_list()
    assert not isinstance(info.value, errors.OperationUnavailableError)


async def test_sandbox_path_it_does_not_serve_is_unavailable_not_fatal():
    app = create_app(SandboxConfig())
    settings = demo_settings(paths={"vehicles": "/v1/funds", "organizations": "/v1/orgs"})
    async with FundClient(settings.client_config(), transport=httpx.ASGITransport(app=app)) as c:
        with pytest.raises(errors.OperationUnavailableError) as info:
            await c.list_vehicles().to_list()
        assert info.value.path == "/v1/funds"
        with pytest.raises(errors.OperationUnavailableError):
            await c.list_organizations().to_list()
        # The documented surface still works, and so do guessed paths left at their defaults.
        assert len(await c.list_vehicle_financial_accounts("veh_demo1").to_list()) == 2
        assert (await c.get_vehicle("veh_demo1")).id == "veh_demo1"
        with pytest.raises(errors.NotFoundError):
            await c.get_vehicle("veh_nope")


async def test_a_distributions_answer_read_for_its_ids_fails_as_one_read_in_full(client, service):
    service.post("/v1/distributions").mock(
        return_value=httpx.Response(
            201, json=envelope([{"id": "dst_1", "payments": envelope([{"amount": 1}])}])
        )
    )
    with pytest.raises(errors.ResponseDecodeError) as full:
        await client.create_distributions([{"external_reference": "X"}])
    with pytest.raises(errors.ResponseDecodeError) as ids:
        await client.create_distribution_ids([{"external_reference": "X"}])
    assert str(ids.value) == str(full.value)
    assert "payments.data.0.id: Field required" in str(ids.value)  # where it does not fit
