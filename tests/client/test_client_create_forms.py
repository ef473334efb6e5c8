"""Entity and contact creates fall back once to `external_references` when the service wants it.

respx: the default sandbox takes `external_reference`; the public-spec form is not served yet.
"""

from __future__ import annotations

import json

import httpx
import pytest
from fundclient_helpers import ORG, envelope, error_body, sent_json

from fundpipe.client import errors, idempotency_key

ENTITIES = [
    {"name": "Acme LLC", "type": "llc", "external_reference": "INV-1"},
    {"name": "Bo Trust", "type": "trust", "external_reference": "INV-2"},
]
ARRAY_ENTITIES = [
    {"name": "Acme LLC", "type": "llc", "external_references": ["INV-1"]},
    {"name": "Bo Trust", "type": "trust", "external_references": ["INV-2"]},
]


def unknown_reference(status: int = 400, **overrides: object) -> httpx.Response:
    entry = {
        "code": "parameter_unknown",
        "name": "body.[0].external_reference",
        "reason": "unknown parameter",
        **overrides,
    }
    type_ = "invalid_request_error" if status == 400 else "unprocessable_entity_error"
    return httpx.Response(
        status,
        json=error_body(status, type_, str(entry["code"]), **{"invalid-params": [entry]}),
    )


def created_from(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content)
    records = [
        {"object": "entity", "id": f"ent_{i}", "name": e["name"], **e} for i, e in enumerate(body)
    ]
    return httpx.Response(201, json=envelope(records, url="/v1/entities"))


async def test_refused_reference_is_resent_once_as_an_array_and_remembered(client, service):
    answers = iter([unknown_reference()])
    route = service.post("/v1/entities").mock(
        side_effect=lambda request: next(answers, None) or created_from(request)
    )
    created = await client.create_entities(ENTITIES, idempotency_key="plan-key-1")
    assert route.call_count == 2
    first, second = route.calls
    assert sent_json(first) == ENTITIES
    assert first.request.headers["Idempotency-Key"] == "plan-key-1"
    assert sent_json(second) == ARRAY_ENTITIES
    assert second.request.headers["Idempotency-Key"] == idempotency_key(
        ORG, "POST", "/v1/entities", ARRAY_ENTITIES
    )
    assert [e.external_reference for e in created] == ["INV-1", "INV-2"]
    assert client.body_forms == {"/v1/entities": "external_references"}
    assert len(client.notes) == 1
    assert "external_references" in client.notes[0]

    # Later creates of this client use the array form directly: one request each.
    later = [{"name": "Cy Corp", "type": "corporation", "external_reference": "INV-3"}]
    array_later = [{"name": "Cy Corp", "type": "corporation", "external_references": ["INV-3"]}]
    await client.create_entities(later, idempotency_key="plan-key-2")
    assert route.call_count == 3
    assert sent_json(route.calls.last) == array_later
    assert route.calls.last.request.headers["Idempotency-Key"] == idempotency_key(
        ORG, "POST", "/v1/entities", array_later
    )
    assert len(client.notes) == 1  # noted once


async def test_contacts_fall_back_the_same_way_on_a_422_naming_the_field(client, service):
    answers = iter(
        [
            httpx.Response(
                422,
                json=error_body(
                    422,
                    "unprocessable_entity_error",
                    "validation_error",
                    message="external_reference: Extra inputs are not permitted",
                ),
            )
        ]
    )
    route = service.post("/v1/contacts").mock(
        side_effect=lambda request: (
            next(answers, None)
            or httpx.Response(201, json=envelope([{"id": "cnt_1", "external_references": ["C-1"]}]))
        )
    )
    [contact] = await client.create_contacts(
        [{"name": "Jo", "email": "jo@example.com", "external_reference": "C-1"}]
    )
    assert route.call_count == 2
    assert sent_json(route.calls.last) == [
        {"name": "Jo", "email": "jo@example.com", "external_references": ["C-1"]}
    ]
    assert contact.external_reference == "C-1"
    assert client.body_forms == {"/v1/contacts": "external_references"}


async def test_the_array_form_refused_too_is_raised_and_not_remembered(client, service):
    array_refused = unknown_reference(name="body.[0].external_references")
    route = service.post("/v1/entities").mock(side_effect=[unknown_reference(), array_refused])
    with pytest.raises(errors.InvalidRequestError) as info:
        await client.create_entities(ENTITIES)
    assert info.value.param == "body.[0].external_references"
    assert route.call_count == 2  # one resend, never more
    assert client.body_forms == {}
    assert client.notes == []


@pytest.mark.parametrize(
    "refusal",
    [
        # another field refused: nothing to do with the form
        unknown_reference(name="body.[0].nickname"),
        # the reference itself is invalid, not unknown
        unknown_reference(code="parameter_invalid_string_empty", reason="must not be empty"),
        # not a 400/422
        httpx.Response(403, json=error_body(403, "permission_error", "forbidden")),
    ],
)
async def test_other_refusals_are_not_resent(client, service, refusal):
    route = service.post("/v1/entities").mock(return_value=refusal)
    with pytest.raises(errors.APIError):
        await client.create_entities(ENTITIES)
    assert route.call_count == 1
    assert client.body_forms == {}


async def test_bodies_without_a_reference_are_sent_as_given(client, service):
    route = service.post("/v1/entities").mock(side_effect=[unknown_reference()])
    with pytest.raises(errors.InvalidRequestError):
        await client.create_entities([{"name": "No Ref", "type": "llc"}])
    assert route.call_count == 1


async def test_the_older_error_form_naming_the_field_in_param_also_switches(client, service):
    older = {
        "error": {
            "type": "invalid_request_error",
            "code": "parameter_unknown",
            "message": "Received unknown parameter: external_reference",
            "param": "external_reference",
        }
    }
    answers = iter([httpx.Response(400, json=older)])
    route = service.post("/v1/entities").mock(
        side_effect=lambda request: next(answers, None) or created_from(request)
    )
    await client.create_entities(ENTITIES)
    assert route.call_count == 2
    assert sent_json(route.calls.last) == ARRAY_ENTITIES
    assert client.body_forms == {"/v1/entities": "external_references"}


INSTRUCTIONS = [
    {
        "entity": "ent_1",
        "payment_instructions": [
            {"type": "ach", "routing_number": "021000021", "external_reference": "P-1"}
        ],
    }
]
BARE_INSTRUCTIONS = [
    {"entity": "ent_1", "payment_instructions": [{"type": "ach", "routing_number": "021000021"}]}
]


def instructions_created(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content)
    records = [
        {
            "object": "entity_payment_instructions",
            "entity": e["entity"],
            "payment_instructions": envelope([{"object": "payment_instructions", "id": "pmi_1"}]),
        }
        for e in body
    ]
    return httpx.Response(201, json=envelope(records))


async def test_instructions_refused_in_param_are_resent_without_their_reference(client, service):
    public = {
        "object": "error",
        "type": "invalid_request_error",
        "code": "parameter_unknown",
        "message": "Received unknown parameter",
        "status": 400,
        "param": "body.[0].payment_instructions.[0].external_reference",
    }
    answers = iter([httpx.Response(400, json=public)])
    route = service.post("/v1/payment_instructions").mock(
        side_effect=lambda request: next(answers, None) or instructions_created(request)
    )
    [made] = await client.create_payment_instructions(INSTRUCTIONS, idempotency_key="plan-pi")
    assert route.call_count == 2
    assert sent_json(route.calls.last) == BARE_INSTRUCTIONS
    assert route.calls.last.request.headers["Idempotency-Key"] == idempotency_key(
        ORG, "POST", "/v1/payment_instructions", BARE_INSTRUCTIONS
    )
    assert made.entity == "ent_1"
    assert client.body_forms == {"/v1/payment_instructions": "no_external_reference"}
    assert any("binding keeps this form" in n for n in client.notes)


async def test_a_refusal_naming_no_field_is_blamed_on_the_undocumented_field(client, service):
    gateway = httpx.Response(422, json={"message": "Request body does not match the schema"})
    answers = iter([gateway])
    route = service.post("/v1/contacts").mock(
        side_effect=lambda request: (
            next(answers, None)
            or httpx.Response(201, json=envelope([{"id": "cnt_1", "external_references": ["C-1"]}]))
        )
    )
    await client.create_contacts(
        [{"name": "Jo", "email": "jo@example.com", "external_reference": "C-1"}]
    )
    assert route.call_count == 2
    assert sent_json(route.calls.last) == [
        {"name": "Jo", "email": "jo@example.com", "external_references": ["C-1"]}
    ]


async def test_a_refusal_naming_another_sent_field_is_not_resent(client, service):
    refusal = httpx.Response(400, json={"message": "email is not an address"})
    route = service.post("/v1/contacts").mock(return_value=refusal)
    with pytest.raises(errors.InvalidRequestError):
        await client.create_contacts([{"name": "Jo", "email": "jo@", "external_reference": "C-1"}])
    assert route.call_count == 1


async def test_a_form_learned_on_an_earlier_night_is_sent_from_the_start(settings, service):
    from fundpipe.client import FundClient

    route = service.post("/v1/payment_instructions").mock(side_effect=instructions_created)
    async with FundClient(
        settings.client_config(),
        transport=httpx.MockTransport(service.async_handler),
        body_forms={"/v1/payment_instructions": "no_external_reference"},
    ) as client:
        await client.create_payment_instructions(INSTRUCTIONS)
        assert client.notes == []
    assert route.call_count == 1
    assert sent_json(route.calls.last) == BARE_INSTRUCTIONS


PROBLEM_VALIDATION = {
    "type": "https://stoplight.io/prism/errors#UNPROCESSABLE_ENTITY",
    "title": "Invalid request",
    "status": 422,
    "detail": "Your request is not valid.",
    "validation": [
        {
            "location": ["body", "0"],
            "severity": "Error",
            "code": "additionalProperties",
            "message": "Request body must NOT have additional properties; found 'external_type'",
        },
        {
            "location": ["body", "0"],
            "severity": "Error",
            "code": "additionalProperties",
            "message": "Request body must NOT have additional properties; found "
            "'external_reference'",
        },
    ],
}


@pytest.mark.parametrize(
    "refusal",
    [
        httpx.Response(
            422, json=PROBLEM_VALIDATION, headers={"content-type": "application/problem+json"}
        ),
        httpx.Response(
            400,
            json={
                "type": "about:blank",
                "title": "Bad Request",
                "detail": "unknown fields 'external_type' and 'external_reference' in body[0]",
            },
            headers={"content-type": "application/problem+json"},
        ),
        httpx.Response(
            400,
            json={
                "errors": [
                    {"path": "/0/external_type", "message": "is not allowed"},
                    {"path": "/0/external_reference", "message": "is not allowed"},
                ]
            },
        ),
        httpx.Response(
            422,
            text="body[0]: external_type, external_reference: additional properties not allowed",
            headers={"content-type": "text/plain"},
        ),
    ],
    ids=["validation-list", "problem-detail", "errors-list", "plain-text"],
)
async def test_any_refusal_naming_the_fields_is_learned_from(client, service, refusal):
    """Whatever the error's shape, the entity's unwelcome fields are named, and left out."""
    typed = [{**e, "external_type": "Family Trust"} for e in ENTITIES]
    answers = iter([refusal])
    route = service.post("/v1/entities").mock(
        side_effect=lambda request: next(answers, None) or created_from(request)
    )
    created = await client.create_entities(typed, idempotency_key="plan-key-9")
    assert route.call_count == 2  # refused once, then taken
    assert sent_json(route.calls.last) == ARRAY_ENTITIES
    assert [e.external_reference for e in created] == ["INV-1", "INV-2"]
    assert client.body_forms == {"/v1/entities": "external_references+no_external_type"}
    assert sum("binding keeps this form" in n for n in client.notes) == 2


async def test_a_refusal_naming_only_the_type_keeps_the_reference_as_sent(client, service):
    typed = [{**e, "external_type": "Family Trust"} for e in ENTITIES]
    refusal = httpx.Response(
        400,
        json=error_body(
            400, "invalid_request_error", "parameter_unknown", param="body.[0].external_type"
        ),
    )
    answers = iter([refusal])
    route = service.post("/v1/entities").mock(
        side_effect=lambda request: next(answers, None) or created_from(request)
    )
    await client.create_entities(typed, idempotency_key="plan-key-10")
    assert sent_json(route.calls.last) == ENTITIES  # external_reference kept, the type gone
    assert client.body_forms == {"/v1/entities": "no_external_type"}


async def test_a_refusal_naming_another_field_is_raised(client, service):
    refusal = httpx.Response(
        400,
        json={"detail": [{"loc": ["body", 0, "name"], "msg": "String too long"}]},
    )
    route = service.post("/v1/entities").mock(return_value=refusal)
    with pytest.raises(errors.InvalidRequestError) as caught:
        await client.create_entities(ENTITIES, idempotency_key="plan-key-11")
    assert route.call_count == 1
    assert [p.name for p in caught.value.invalid_params] == ["body.0.name"]
    assert client.body_forms == {}
