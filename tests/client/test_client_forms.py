"""Every public form of the service's records reads into the same typed models."""

from __future__ import annotations

import httpx
import pytest
from fundclient_helpers import envelope, error_body

from fundpipe.client import errors, models

ENTITY_STRING_FORM = {
    "object": "entity",
    "livemode": False,
    "id": "ent_1",
    "name": "Acme LLC",
    "type": "llc",
    "external_reference": "INV-1",
    "payment_instructions": ["pmi_1", "pmi_2"],
}
ENTITY_ARRAY_FORM = {
    "object": "entity",
    "livemode": False,
    "id": "ent_1",
    "name": "Acme LLC",
    "type": "llc",
    "external_references": ["INV-1", "CRM-77"],
    "payment_instructions": {
        "object": "list",
        "data": [
            {"object": "payment_instructions", "livemode": False, "id": "pmi_1"},
            {"object": "payment_instructions", "livemode": False, "id": "pmi_2"},
        ],
    },
    "some_future_field": {"ignored": True},
}


def test_entity_string_and_array_reference_forms_read_the_same():
    string_form = models.Entity.model_validate(ENTITY_STRING_FORM)
    array_form = models.Entity.model_validate(ENTITY_ARRAY_FORM)
    assert string_form.external_reference == array_form.external_reference == "INV-1"
    assert string_form.external_references == ["INV-1"]
    assert array_form.external_references == ["INV-1", "CRM-77"]
    assert string_form.payment_instructions == array_form.payment_instructions
    assert array_form.payment_instructions == ["pmi_1", "pmi_2"]


def test_both_reference_forms_at_once_are_united_string_first():
    entity = models.Entity.model_validate(
        {"id": "ent_1", "external_reference": "B", "external_references": ["A", "B", ""]}
    )
    assert entity.external_reference == "B"
    assert entity.external_references == ["B", "A"]


@pytest.mark.parametrize(
    "record",
    [
        {"id": "cnt_1", "email": "jo@example.com", "external_reference": "C-1"},
        {"id": "cnt_1", "email": "jo@example.com", "external_references": ["C-1"]},
    ],
)
def test_contact_reference_forms_read_the_same(record):
    contact = models.Contact.model_validate(record)
    assert contact.external_reference == "C-1"
    assert contact.external_references == ["C-1"]
    assert contact.entities == []  # ours: absent reads as none


def test_records_without_references_have_none():
    for record in (
        {"id": "ent_1"},
        {"id": "ent_1", "external_reference": None, "external_references": None},
        {"id": "ent_1", "external_references": []},
    ):
        entity = models.Entity.model_validate(record)
        assert entity.external_reference is None
        assert entity.external_references == []


def test_a_reference_array_of_non_strings_is_refused():
    with pytest.raises(ValueError, match="external_references"):
        models.Entity.model_validate({"id": "ent_1", "external_references": [{"x": 1}]})


PAYMENT_FULL = {
    "object": "distribution_payment",
    "livemode": False,
    "id": "dpmt_1",
    "distribution": "dst_1",
    "amount": 100,
    "currency": "USD",
    "distribution_date_override": "2026-12-15T09:00:00-05:00",
    "status": "staged",
    "recipient_confirmed_at": "2026-12-15T09:00:00Z",
    "verified_at": "2026-12-15T09:00:00Z",
    "disbursed_at": "2026-12-15T09:00:00Z",
    "failed_at": "2026-12-15T09:00:00Z",
    "failure_reason": "closed account",
    "entity": "ent_1",
    "payment_instructions": "pmi_1",
    "notifications": {"object": "list", "data": [{"id": "dntf_1", "contact": "cnt_1"}]},
}
REQUIRED = {"id", "amount", "currency"}


@pytest.mark.parametrize("model", [models.DistributionPayment])
def test_every_optional_field_reads_null_and_absent_alike(model):
    optional = [k for k in PAYMENT_FULL if k not in REQUIRED]
    absent = model.model_validate({k: v for k, v in PAYMENT_FULL.items() if k in REQUIRED})
    null = model.model_validate({**PAYMENT_FULL, **dict.fromkeys(optional)})
    assert absent == null
    assert null.distribution is None
    assert null.distribution_date_override is None
    assert null.notifications is None


def test_null_lists_and_optionals_of_every_record_read_as_absent():
    cases = {
        models.Entity: {"id": "ent_1", "payment_instructions": None, "name": None},
        models.Contact: {"id": "cnt_1", "entities": None, "email": None},
        models.Distribution: {"id": "dst_1", "payments": None, "distribution_date": None},
        models.PaymentList: {"data": None, "next_page_url": None},
        models.EntityPaymentInstructions: {"entity": "ent_1", "payment_instructions": None},
        models.FinancialAccount: {
            "id": "fa_1",
            "vehicle": "veh_1",
            "bank_name": None,
            "account_number_last_four": None,
            "balance": {
                "total": 1,
                "available": 1,
                "total_end_of_last_month": 1,
                "currency": "USD",
            },
        },
        models.Vehicle: {"id": "veh_1", "organization": None},
        models.Organization: {"id": "org_1", "name": None},
        models.PaymentInstructions: {"id": "pmi_1", "entity": None},
    }
    for model, record in cases.items():
        with_nulls = model.model_validate(record)
        without = model.model_validate({k: v for k, v in record.items() if v is not None})
        assert with_nulls == without, model.__name__


def test_a_payment_instructions_object_on_a_payment_reads_as_its_id():
    payment = models.DistributionPayment.model_validate(
        {**PAYMENT_FULL, "payment_instructions": {"object": "payment_instructions", "id": "pmi_9"}}
    )
    assert payment.payment_instructions == "pmi_9"


def test_a_required_field_that_is_null_is_still_refused():
    with pytest.raises(ValueError, match="amount"):
        models.DistributionPayment.model_validate(
            {"id": "dpmt_1", "amount": None, "currency": "USD"}
        )


# --- lists, conflicts and the older error form (respx: the sandbox serves none of these) -----


async def test_has_more_without_next_page_url_stops_loudly(client, service):
    service.get("/v1/entities").mock(
        return_value=httpx.Response(
            200,
            json={"object": "list", "data": [{"id": "ent_1"}], "has_more": True, "url": "/v1/x"},
        )
    )
    with pytest.raises(errors.IncompleteListError) as info:
        await client.list_entities().to_list()
    assert "there are more entities but gave no way to continue" in str(info.value)
    assert "stopping so nothing is missed" in str(info.value)
    with pytest.raises(errors.IncompleteListError, match="more entities"):
        [page async for page in client.raw_pages("/v1/entities")]


async def test_has_more_false_without_next_page_url_ends_the_list(client, service):
    service.get("/v1/entities").mock(
        return_value=httpx.Response(
            200, json={"object": "list", "data": [{"id": "ent_1"}], "has_more": False}
        )
    )
    assert [e.id for e in await client.list_entities().to_list()] == ["ent_1"]


async def test_has_more_on_a_nested_list_names_it(client, service):
    service.get("/v1/vehicles/veh_1/financial_accounts").mock(
        return_value=httpx.Response(200, json={"object": "list", "data": [], "has_more": True})
    )
    with pytest.raises(errors.IncompleteListError, match="more financial accounts"):
        await client.list_vehicle_financial_accounts("veh_1").to_list()


def conflict(**entry: object) -> httpx.Response:
    return httpx.Response(
        409,
        json=error_body(
            409,
            "conflict_error",
            "conflict",
            message="external_reference already exists",
            **{
                "invalid-params": [
                    {
                        "code": "conflict",
                        "name": "body.[0].external_reference",
                        "reason": "already exists",
                        **entry,
                    }
                ]
            },
        ),
    )


async def test_409_with_conflicts_with_is_definitive_and_names_the_existing_object(client, service):
    route = service.post("/v1/entities").mock(return_value=conflict(conflicts_with="ent_old"))
    with pytest.raises(errors.AlreadyExistsError) as info:
        await client.create_entities([{"name": "A", "type": "llc", "external_reference": "R"}])
    assert route.call_count == 1  # never retried as "still processing"
    assert info.value.conflicts_with == ("ent_old",)
    assert isinstance(info.value, errors.ConflictError)
    assert not info.value.retryable
    assert info.value.param == "body.[0].external_reference"


async def test_409_without_conflicts_with_is_still_retried_as_in_flight(client, service):
    route = service.post("/v1/entities").mock(
        side_effect=[
            conflict(),
            httpx.Response(201, json=envelope([{"id": "ent_1", "external_reference": "R"}])),
        ]
    )
    [entity] = await client.create_entities(
        [{"name": "A", "type": "llc", "external_reference": "R"}]
    )
    assert entity.id == "ent_1"
    assert route.call_count == 2


async def test_older_error_form_keeps_the_field_in_param(client, service):
    older = {
        "error": {
            "type": "invalid_request_error",
            "code": "parameter_invalid",
            "message": "Invalid email address",
            "param": "email",
        }
    }
    service.post("/v1/contacts").mock(return_value=httpx.Response(400, json=older))
    with pytest.raises(errors.InvalidRequestError) as info:
        await client.create_contacts([{"name": "Jo", "email": "nope"}])
    err = info.value
    assert err.code == "parameter_invalid"
    assert err.param == "email"
    assert err.invalid_params[0].name == "email"
    assert "Invalid email address (field email)" in str(err)


async def test_current_error_form_field_is_the_invalid_params_name(client, service):
    service.post("/v1/contacts").mock(
        return_value=httpx.Response(
            400,
            json=error_body(
                400,
                "invalid_request_error",
                "parameter_invalid",
                **{
                    "invalid-params": [
                        {
                            "code": "parameter_invalid",
                            "name": "body.[0].email",
                            "reason": "not an email",
                        }
                    ]
                },
            ),
        )
    )
    with pytest.raises(errors.InvalidRequestError) as info:
        await client.create_contacts([{"name": "Jo", "email": "nope"}])
    assert info.value.param == "body.[0].email"


def test_a_nested_list_says_when_it_goes_on_in_either_form():
    def payments(**envelope_fields: object) -> models.PaymentList:
        return models.Distribution.model_validate(
            {"id": "dst_1", "payments": {"object": "list", "data": [], **envelope_fields}}
        ).payments  # type: ignore[return-value]

    assert payments(next_page_url="/v1/distributions/dst_1/payments?page=page_2").more_to_fetch
    assert payments(has_more=True).more_to_fetch  # the older form: no URL to follow
    assert not payments(has_more=False, next_page_url=None).more_to_fetch
    assert not payments().more_to_fetch


# --- create answers: read straight from their bytes, the same records and errors --------------

CREATE_BODY = [
    {"name": "Q4", "vehicle": "veh_1", "distribution_date": "2026-12-15", "payments": []}
]
CREATED_WITH_NULLS = {
    "object": "distribution",
    "id": "dst_1",
    "external_reference": "Q4",
    "distribution_date": "2026-12-15T09:00:00-05:00",
    "published_at": None,
    "some_future_field": [1, 2],
    "payments": {
        "object": "list",
        "data": [
            {**PAYMENT_FULL, "failure_reason": None, "notifications": {"data": None}},
            {**PAYMENT_FULL, "id": "dpmt_2", "payment_instructions": {"id": "pmi_9"}},
        ],
        "next_page_url": None,
    },
}


async def test_a_create_answer_reads_as_its_records_read_one_by_one(client, service):
    service.post("/v1/distributions").mock(
        return_value=httpx.Response(201, json={**envelope([CREATED_WITH_NULLS]), "extra": 1})
    )
    [created] = await client.create_distributions(CREATE_BODY)
    assert created == models.Distribution.model_validate(CREATED_WITH_NULLS)
    assert created.published_at is None
    assert created.payments is not None
    first, second = created.payments.data
    assert first.failure_reason is None
    assert first.notifications is not None
    assert first.notifications.data == []
    assert second.payment_instructions == "pmi_9"


async def test_a_contact_whose_entities_are_null_has_them_unset_as_when_absent(client, service):
    service.post("/v1/contacts").mock(
        return_value=httpx.Response(
            201, json=envelope([{"id": "cnt_1", "email": "jo@example.com", "entities": None}])
        )
    )
    [contact] = await client.create_contacts([{"name": "Jo", "email": "jo@example.com"}])
    assert contact.entities == []
    assert "entities" not in contact.model_fields_set


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            b'{"object": "list", "data": [{"id": "dst_1", "payments": {"data": [{"id": 1}]}}]}',
            "unexpected Distribution record (3 problems: payments.data.0.id: Input should be a "
            "valid string; payments.data.0.amount: Field required; payments.data.0.currency: "
            "Field required)",
        ),
        (b'{"object": "list", "data": null}', "POST /v1/distributions: answer is not a list"),
        (b'{"object": "list", "data": [', "POST /v1/distributions: answer 201 is not valid JSON"),
    ],
)
async def test_a_create_answer_that_does_not_fit_says_where(client, service, content, message):
    service.post("/v1/distributions").mock(return_value=httpx.Response(201, content=content))
    with pytest.raises(errors.ResponseDecodeError) as info:
        await client.create_distributions(CREATE_BODY)
    assert message in str(info.value)
