"""Secrets never reach a log line or an exception string, even with everything at DEBUG."""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator

import httpx
import pytest
from fundclient_helpers import (
    ACCOUNT_NUMBER,
    CLIENT_SECRET,
    LOGGERS,
    TOKEN,
    TOKEN_2,
    Capture,
    envelope,
    error_body,
    token_response,
)

from fundpipe.client import REDACTED, errors, models, redact
from fundpipe.client._auth import ClientCredentialsAuth

FORBIDDEN = (
    CLIENT_SECRET,
    TOKEN,
    TOKEN_2,
    ACCOUNT_NUMBER,
    base64.b64encode(f"fp-client:{CLIENT_SECRET}".encode()).decode(),
)


@pytest.fixture
def capture() -> Iterator[Capture]:
    handler = Capture()
    saved = {}
    for name in LOGGERS:
        log = logging.getLogger(name)
        saved[name] = log.level
        log.setLevel(logging.DEBUG)
        log.addHandler(handler)
    yield handler
    for name in LOGGERS:
        logging.getLogger(name).removeHandler(handler)
        logging.getLogger(name).setLevel(saved[name])


def assert_clean(texts: list[str]) -> None:
    for text in texts:
        for secret in FORBIDDEN:
            assert secret not in text, f"secret leaked into: {text[:200]}"


PMI = [
    {
        "entity": "ent_demo1",
        "payment_instructions": [
            {
                "type": "ach",
                "beneficiary_name": "A",
                "account_number": ACCOUNT_NUMBER,
                "routing_number": "021000021",
            }
        ],
    }
]


async def test_client_scenarios_at_debug_leak_no_secret(client, service, capture, clock):
    raised: list[BaseException] = []

    async def expect(coro, exc_type):
        with pytest.raises(exc_type) as info:
            await coro
        raised.append(info.value)

    # 1. token fetch, a read, a 401 → re-fetch → replay.
    service["token"].mock(
        side_effect=[token_response(TOKEN), token_response(TOKEN_2)] + [token_response(TOKEN_2)] * 5
    )
    service.get("/v1/vehicles/veh_1").mock(
        side_effect=[
            httpx.Response(200, json={"id": "veh_1"}),
            httpx.Response(
                401,
                json=error_body(
                    401,
                    "authentication_error",
                    "unauthorized",
                    message=f"token Bearer {TOKEN} expired",
                ),
            ),
            httpx.Response(200, json={"id": "veh_1"}),
        ]
    )
    await client.get_vehicle("veh_1")
    await client.get_vehicle("veh_1")

    # 2. payment instructions with an account number; the service echoes it in its error.
    echo = error_body(
        400,
        "invalid_request_error",
        "parameter_invalid",
        message=f"account {ACCOUNT_NUMBER} rejected",
        **{
            "invalid-params": [
                {
                    "code": "parameter_invalid",
                    "name": "body.[0].payment_instructions.[0].account_number",
                    "reason": f"bad {ACCOUNT_NUMBER}",
                    "value": ACCOUNT_NUMBER,
                }
            ]
        },
    )
    service.post("/v1/payment_instructions").mock(
        side_effect=[
            httpx.Response(503, text=f"upstream said account_number={ACCOUNT_NUMBER}"),
            httpx.Response(400, json=echo),
            httpx.Response(
                201, json=envelope([{"entity": "ent_demo1", "payment_instructions": ["pmi_1"]}])
            ),
        ]
    )
    await expect(client.create_payment_instructions(PMI), errors.InvalidRequestError)
    created = await client.create_payment_instructions(
        [models.PaymentInstructionsCreate.model_validate(PMI[0])]
    )
    assert created[0].payment_instructions == ["pmi_1"]

    # 3. errors whose text carries the secret or the token.
    service.get("/v1/vehicles/veh_2").mock(
        return_value=httpx.Response(
            500,
            json=error_body(
                500,
                "api_error",
                "internal_error",
                message=f"client_secret={CLIENT_SECRET} access_token={TOKEN_2}",
            ),
        )
    )
    await expect(client.get_vehicle("veh_2"), errors.APIServerError)
    service.get("/v1/vehicles/veh_3").mock(
        side_effect=httpx.ConnectError(f"cannot connect with {TOKEN_2}")
    )
    await expect(client.get_vehicle("veh_3"), errors.ServiceConnectionError)

    # 4. the token endpoint refuses and echoes the secret; or answers garbage holding a token.
    clock.advance(3600)  # the token expired: the next call fetches a new one
    service["token"].mock(
        return_value=httpx.Response(
            401,
            json={
                "error": "invalid_client",
                "error_description": f"secret {CLIENT_SECRET} is wrong",
            },
        )
    )
    await expect(client.get_vehicle("veh_1"), errors.AuthenticationError)
    service["token"].mock(
        return_value=httpx.Response(200, content=f"access_token={TOKEN}&expires_in=3600".encode())
    )
    await expect(client.get_vehicle("veh_1"), errors.ResponseDecodeError)

    assert any("veh_1" in line for line in capture.lines)  # the logs did record the calls
    texts = capture.lines + [str(e) for e in raised] + [repr(e) for e in raised]
    auth = ClientCredentialsAuth(
        token_url="https://fund.test/oauth/token",
        client_id="fp-client",
        client_secret=CLIENT_SECRET,
        scopes=None,
        leeway_s=60,
        clock=clock,
    )
    texts += [
        repr(auth),
        repr(client),
        repr(models.PaymentInstructionCreate(account_number=ACCOUNT_NUMBER)),
    ]
    assert_clean(texts)


def test_redact_scrubs_headers_mappings_and_text():
    headers = httpx.Headers({"Authorization": f"Bearer {TOKEN}", "X-Request-Id": "req_1"})
    assert redact(headers) == {"authorization": REDACTED, "x-request-id": "req_1"}
    nested = {
        "data": [{"account_number": ACCOUNT_NUMBER, "account_number_last_four": "6789"}],
        "client_secret": CLIENT_SECRET,
    }
    assert redact(nested) == {
        "data": [{"account_number": REDACTED, "account_number_last_four": "6789"}],
        "client_secret": REDACTED,
    }
    text = f'{{"access_token": "{TOKEN}", "token_type": "Bearer"}} Authorization: Bearer {TOKEN_2} client_secret={CLIENT_SECRET}&x=1'
    out = redact(text)
    assert_clean([out])
    assert '"token_type": "Bearer"' in out
    assert redact("plain words stay", [TOKEN]) == "plain words stay"
    assert redact(f"literal {ACCOUNT_NUMBER}", [ACCOUNT_NUMBER]) == f"literal {REDACTED}"


def test_redact_hides_a_quoted_secret_value_whole_spaces_and_all():
    """A wire memo or an account number written with spaces is redacted to its closing quote:
    no word of it survives in a log line (it did: `"********** distribution"`)."""
    text = (
        '{"originator_to_beneficiary_instructions_line1": "Q4 distribution", '
        '"account_number": "1234 5678", "name": "Ada Lovelace"}'
    )
    scrubbed = redact(text)
    assert "distribution" not in scrubbed
    assert "5678" not in scrubbed
    assert '"Ada Lovelace"' in scrubbed
    assert redact("originator_to_beneficiary='Q4 memo' next") == (
        f"originator_to_beneficiary='{REDACTED}' next"
    )
