"""Strict input forms: contact emails in the documented ASCII grammar, `limit` as plain digits."""

from __future__ import annotations

import httpx
import pytest
from sandbox_support import assert_error, param_names

REJECTED_EMAILS = (
    "ann\x00@example.com",  # NUL
    "ann@example.com\n",  # trailing newline
    "ann\t@example.com",  # tab
    "ann@exa\x7fmple.com",  # DEL
    "ann@example.com\u0085",  # NEL (a Unicode line break)
    "anné@example.com",  # non-ASCII local part
    "ann@exämple.com",  # non-ASCII domain
    "ann@example.co\u212a",  # Kelvin sign (folds to "k" case-insensitively)
    "ann\u200b@example.com",  # zero-width space
    " ann@example.com",  # leading space
    "ann@example",  # no dot in the domain
)


@pytest.mark.parametrize("email", REJECTED_EMAILS)
async def test_contact_email_with_control_or_non_ascii_characters_is_refused(
    client: httpx.AsyncClient, writer: dict[str, str], email: str
) -> None:
    before = (await client.get("/v1/contacts?limit=100", headers=writer)).json()["data"]
    response = await client.post(
        "/v1/contacts", headers=writer, json=[{"name": "Ann", "email": email}]
    )
    body = assert_error(response, 400, "parameter_invalid")
    assert param_names(body) == {"body.[0].email": "parameter_invalid"}
    after = (await client.get("/v1/contacts?limit=100", headers=writer)).json()["data"]
    assert after == before


async def test_plain_ascii_emails_are_accepted(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    emails = ["ann.o'neil+fund@example.co.uk", "x@a-b.example", "UPPER_case!#$%&*/=?^`{|}~@ex.io"]
    response = await client.post(
        "/v1/contacts", headers=writer, json=[{"name": "Ann", "email": e} for e in emails]
    )
    assert response.status_code == 201, response.text
    assert [c["email"] for c in response.json()["data"]] == emails


@pytest.mark.parametrize("value", ["+5", "%205%20", "%205", "5%20", "-5", "%2B10", "%095"])
async def test_limit_with_sign_or_spaces_is_400_parameter_invalid(
    client: httpx.AsyncClient, writer: dict[str, str], value: str
) -> None:
    for path in ("/v1/entities", "/v1/distributions", "/v1/financial_accounts"):
        response = await client.get(f"{path}?limit={value}", headers=writer)
        body = assert_error(response, 400, "parameter_invalid")
        assert param_names(body) == {"query.limit": "parameter_invalid"}


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("5.0", "parameter_invalid_integer"),
        ("５", "parameter_invalid_integer"),
        ("", "parameter_invalid_integer"),
        ("0", "parameter_invalid"),
        ("0101", "parameter_invalid"),
    ],
)
async def test_limit_other_malformed_values(
    client: httpx.AsyncClient, writer: dict[str, str], value: str, code: str
) -> None:
    body = assert_error(
        await client.get("/v1/entities", params={"limit": value}, headers=writer), 400, code
    )
    assert param_names(body) == {"query.limit": code}


async def test_plain_digit_limits_still_work(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    page = await client.get("/v1/entities?limit=2", headers=writer)
    assert page.status_code == 200
    assert len(page.json()["data"]) == 2
    assert (await client.get("/v1/entities?limit=007", headers=writer)).status_code == 200
